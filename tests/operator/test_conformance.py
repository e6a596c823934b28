"""Conformance with Apache MXNet 1.9.1: every case in shared/conformance/cases.json.

Each case gives an op, its parameters as MXNet strings, float32 inputs, the
head gradients MXNet's autograd was given, and MXNet's outputs, input
gradients and aux-state updates.  We run the same op through the eager
reference runner (forward, then backward with the declared dependencies
only) and compare shapes and dtypes exactly and values within the README's
tolerance (rtol 1e-4, atol 1e-5; convolution weight gradients atol 1e-4 as
the README allows for a float32 summation order different from MXNet's).
Every case also runs as MXNet ran it: ``mx.nd.<op>`` under
``autograd.record`` and ``autograd.backward`` (engine, NDArray invoke,
recorded graph).
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import pytest

from mxnb.operator import eager, registry

_ROOT = Path(__file__).resolve().parents[2]
_CANDIDATES = [
    Path(os.environ.get("MXNB_CONFORMANCE", "/nonexistent")),
    _ROOT.parent / "shared" / "conformance",  # ../shared next to the checkout
    _ROOT / "shared" / "conformance",
    Path("/work/shared/conformance"),
]
CONFORMANCE = next((path for path in _CANDIDATES if (path / "cases.json").exists()), None)
if CONFORMANCE is None:
    raise FileNotFoundError(
        "conformance vectors not found; set MXNB_CONFORMANCE to the directory holding cases.json "
        f"(looked in: {', '.join(str(path) for path in _CANDIDATES)})"
    )
INDEX = json.loads((CONFORMANCE / "cases.json").read_text())
CASES = INDEX["cases"]
RTOL, ATOL = 1e-4, 1e-5
LOOSE_ATOL = {"Convolution": 1e-4, "Deconvolution": 1e-4}


def _load(case: dict) -> dict:
    with np.load(CONFORMANCE / "cases" / f"{case['name']}.npz") as archive:
        return {key: archive[key] for key in archive.files}


def _split_inputs(case: dict, arrays: dict) -> tuple[list, list]:
    inputs, aux = [], []
    for spec in case["inputs"]:
        key = (
            f"aux_in_{spec['name']}"
            if spec["is_aux"] and f"aux_in_{spec['name']}" in arrays
            else f"input_{spec['name']}"
        )
        (aux if spec["is_aux"] else inputs).append(arrays[key])
    return inputs, aux


def _close(actual: np.ndarray, expected: np.ndarray, what: str, atol: float = ATOL) -> None:
    assert actual.shape == expected.shape, f"{what}: shape {actual.shape} != {expected.shape}"
    assert actual.dtype == expected.dtype, f"{what}: dtype {actual.dtype} != {expected.dtype}"
    np.testing.assert_allclose(actual, expected, rtol=RTOL, atol=atol, err_msg=what)


def test_every_case_op_is_registered():
    missing = sorted({case["op"] for case in CASES} - set(registry.list_ops()))
    assert not missing, f"ops in cases.json without a registration: {missing}"


@pytest.mark.parametrize("case", CASES, ids=[case["name"] for case in CASES])
def test_case_through_eager(case):
    arrays = _load(case)
    inputs, aux = _split_inputs(case, arrays)
    outputs, aux_out, state = eager.run_forward(
        case["op"], inputs, case["kwargs"], aux=aux or None, is_train=case["train_mode"]
    )
    for spec in case["outputs"]:
        i = spec["index"]
        _close(outputs[i], arrays[f"output_{i}"], f"{case['name']} output {i}")
    names = [spec["name"] for spec in case["inputs"] if spec["is_aux"]]
    for name, value in zip(names, aux_out):
        if f"aux_out_{name}" in arrays:
            _close(value, arrays[f"aux_out_{name}"], f"{case['name']} aux {name}")
    if not case["gradients"]:
        return
    heads = [arrays.get(f"head_grad_{spec['index']}") for spec in case["outputs"]]
    grads = eager.run_backward(state, heads)
    arguments = [spec["name"] for spec in case["inputs"] if not spec["is_aux"]]
    atol = LOOSE_ATOL.get(case["op"], ATOL)
    for name, grad in zip(arguments, grads):
        if f"grad_{name}" in arrays:
            _close(grad, arrays[f"grad_{name}"], f"{case['name']} grad {name}", atol)


def run_through_nd(case: dict, arrays: dict, ctx) -> tuple[list, list, list, list]:
    """Forward ``case`` as MXNet ran it, on ``ctx``: ``mx.nd.<op>`` under ``autograd.record``.

    Returns the outputs, the argument specs, the argument NDArrays (gradients
    attached as the case asks) and the aux NDArrays.
    """
    import mxnb as mx

    inputs, aux = _split_inputs(case, arrays)
    specs = [spec for spec in case["inputs"] if not spec["is_aux"]]
    nd_inputs = [mx.nd.array(x, ctx=ctx) for x in inputs]
    nd_aux = [mx.nd.array(a, ctx=ctx) for a in aux]
    for spec, array in zip(specs, nd_inputs):
        if spec["requires_grad"]:
            array.attach_grad()
    with mx.autograd.record(train_mode=case["train_mode"]):
        result = getattr(mx.nd, case["op"])(*nd_inputs, *nd_aux, **case["kwargs"])
    outputs = list(result) if isinstance(result, (list, tuple)) else [result]
    return outputs, specs, nd_inputs, nd_aux


@pytest.mark.parametrize("case", CASES, ids=[case["name"] for case in CASES])
def test_case_through_nd_and_autograd(case):
    """The same case as MXNet ran it: ``mx.nd.<op>`` under ``autograd.record``, then ``autograd.backward``.

    Forward goes through the engine and NDArray invoke; aux states are the
    NDArrays passed after the arguments and are updated in place; gradients
    come from the recorded graph pushing each op's backward.
    """
    import mxnb as mx

    arrays = _load(case)
    outputs, specs, nd_inputs, nd_aux = run_through_nd(case, arrays, mx.cpu())
    for spec in case["outputs"]:
        i = spec["index"]
        _close(outputs[i].asnumpy(), arrays[f"output_{i}"], f"{case['name']} nd output {i}")
    aux_names = [spec["name"] for spec in case["inputs"] if spec["is_aux"]]
    for name, value in zip(aux_names, nd_aux):
        if f"aux_out_{name}" in arrays:
            _close(value.asnumpy(), arrays[f"aux_out_{name}"], f"{case['name']} nd aux {name}")
    if not case["gradients"]:
        return
    heads = [mx.nd.array(arrays[f"head_grad_{i}"]) for i in range(len(outputs))]
    mx.autograd.backward(outputs, heads)
    atol = LOOSE_ATOL.get(case["op"], ATOL)
    for spec, array in zip(specs, nd_inputs):
        if f"grad_{spec['name']}" in arrays:
            _close(
                array.grad.asnumpy(),
                arrays[f"grad_{spec['name']}"],
                f"{case['name']} nd grad {spec['name']}",
                atol,
            )
