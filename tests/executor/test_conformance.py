"""Conformance with Apache MXNet 1.9.1 through the graph executor.

Every case of ``shared/conformance/cases.json`` (op, MXNet-string parameters,
float32 inputs, head gradients, MXNet's outputs / gradients / aux updates)
is built as a one-node Symbol, bound (``sym.bind`` with the case's arrays,
gradient arrays for the inputs MXNet attached a gradient to, aux states),
run forward and backward, and compared with the README's tolerances (rtol
1e-4, atol 1e-5; convolution weight gradients atol 1e-4).
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import pytest

import mxnb as mx

CONFORMANCE = Path(os.environ.get("MXNB_CONFORMANCE", "/work/shared/conformance"))
if not (CONFORMANCE / "cases.json").exists():  # a checkout-relative copy, when present
    CONFORMANCE = Path(__file__).resolve().parents[2] / "shared" / "conformance"
CASES = json.loads((CONFORMANCE / "cases.json").read_text())["cases"]
RTOL, ATOL = 1e-4, 1e-5
LOOSE_ATOL = {"Convolution": 1e-4, "Deconvolution": 1e-4}


def _load(case: dict) -> dict:
    with np.load(CONFORMANCE / "cases" / f"{case['name']}.npz") as archive:
        return {key: archive[key] for key in archive.files}


def _close(actual: np.ndarray, expected: np.ndarray, what: str, atol: float = ATOL) -> None:
    assert actual.shape == expected.shape, f"{what}: shape {actual.shape} != {expected.shape}"
    assert actual.dtype == expected.dtype, f"{what}: dtype {actual.dtype} != {expected.dtype}"
    np.testing.assert_allclose(actual, expected, rtol=RTOL, atol=atol, err_msg=what)


@pytest.mark.parametrize("case", CASES, ids=[case["name"] for case in CASES])
def test_case_through_the_executor(case):
    arrays = _load(case)
    specs = case["inputs"]
    variables = [mx.sym.Variable(f"in_{spec['name']}") for spec in specs]
    arguments = [v for v, spec in zip(variables, specs) if not spec["is_aux"]]
    aux_vars = [v for v, spec in zip(variables, specs) if spec["is_aux"]]
    sym = getattr(mx.sym, case["op"])(*arguments, *aux_vars, name="op", **case["kwargs"])
    args, grads, aux = {}, {}, {}
    for spec in specs:
        name = f"in_{spec['name']}"
        if spec["is_aux"]:
            key = f"aux_in_{spec['name']}"
            aux[name] = mx.nd.array(arrays[key if key in arrays else f"input_{spec['name']}"])
        else:
            args[name] = mx.nd.array(arrays[f"input_{spec['name']}"])
            if spec["requires_grad"] and case["gradients"]:
                grads[name] = mx.nd.zeros(args[name].shape)
    exe = sym.bind(mx.cpu(), args=args, args_grad=grads or None, aux_states=aux or None)
    exe.memory_plan.check()
    outputs = exe.forward(is_train=case["train_mode"])
    for spec in case["outputs"]:
        i = spec["index"]
        _close(outputs[i].asnumpy(), arrays[f"output_{i}"], f"{case['name']} output {i}")
    for spec in specs:
        if spec["is_aux"] and f"aux_out_{spec['name']}" in arrays:
            _close(
                exe.aux_dict[f"in_{spec['name']}"].asnumpy(),
                arrays[f"aux_out_{spec['name']}"],
                f"{case['name']} aux {spec['name']}",
            )
    if not grads:
        return
    exe.backward([mx.nd.array(arrays[f"head_grad_{i}"]) for i in range(len(outputs))])
    atol = LOOSE_ATOL.get(case["op"], ATOL)
    for spec in specs:
        if f"grad_{spec['name']}" in arrays and f"in_{spec['name']}" in grads:
            _close(
                exe.grad_dict[f"in_{spec['name']}"].asnumpy(),
                arrays[f"grad_{spec['name']}"],
                f"{case['name']} grad {spec['name']}",
                atol,
            )
