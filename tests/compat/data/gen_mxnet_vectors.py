"""Generate tests/compat/data/mxnet_vectors.npz with Apache MXNet 1.9.1 (run by hand).

    /work/mxnet-venv/bin/python tests/compat/data/gen_mxnet_vectors.py

Two kinds of case, each from fixed ``numpy.random.RandomState`` seeds:

* ``op/<name>``: an MXNet 1.x call (``mx.nd.<function>(*inputs, **kwargs)``) run
  under ``autograd.record``; stored: inputs, output, and the input gradients
  for a random head gradient (ops with inputs only);
* ``grad2/<name>``: second derivative ``d/dx sum(head2 * dy/dx)`` of a unary op,
  computed with ``autograd.grad(..., create_graph=True)`` (higher-order gradients).

The index (case name -> function, kwargs, scalar positions) is stored as JSON
inside the archive under ``__index__``.  mxnb's tests read only the archive.
"""

import json
import os

import mxnet as mx
import numpy as np

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "mxnet_vectors.npz")


def inputs_for(seed, shapes, low, high):
    rng = np.random.RandomState(seed)
    return [rng.uniform(low, high, size=shape).astype(np.float32) for shape in shapes]


# name: (function, input shapes, (low, high), kwargs, scalars{position: value})
OP_CASES = {
    "arcsinh": ("arcsinh", [(3, 4)], (-3, 3), {}, {}),
    "arccosh": ("arccosh", [(3, 4)], (1.1, 4), {}, {}),
    "arctanh": ("arctanh", [(3, 4)], (-0.9, 0.9), {}, {}),
    "radians": ("radians", [(3, 4)], (-360, 360), {}, {}),
    "degrees": ("degrees", [(3, 4)], (-4, 4), {}, {}),
    "rcbrt": ("rcbrt", [(3, 4)], (0.2, 5), {}, {}),
    "maximum_arrays": ("maximum", [(2, 3), (1, 3)], (-1, 1), {}, {}),
    "minimum_arrays": ("minimum", [(2, 3), (2, 1)], (-1, 1), {}, {}),
    "hypot_arrays": ("hypot", [(2, 3), (2, 3)], (-2, 2), {}, {}),
    "power_arrays": ("power", [(2, 3), (2, 3)], (0.5, 2), {}, {}),
    "maximum_scalar": ("maximum", [(2, 3)], (-1, 1), {}, {1: 0.25}),
    "minimum_scalar_first": ("minimum", [(2, 3)], (-1, 1), {}, {0: 0.25}),
    "hypot_scalar": ("hypot", [(2, 3)], (-2, 2), {}, {1: 1.5}),
    "power_scalar": ("power", [(2, 3)], (0.5, 2), {}, {1: 3.0}),
    "rpower_scalar": ("power", [(2, 3)], (-1, 1), {}, {0: 2.0}),
    "broadcast_like": ("broadcast_like", [(1, 3, 1), (2, 3, 4)], (-1, 1), {}, {}),
    "broadcast_like_axes": (
        "broadcast_like",
        [(1, 3), (5, 2)],
        (-1, 1),
        {"lhs_axes": (0,), "rhs_axes": (0,)},
        {},
    ),
    "linspace": ("linspace", [], (0, 1), {"start": -1.0, "stop": 2.0, "num": 7}, {}),
    "linspace_open": (
        "linspace",
        [],
        (0, 1),
        {"start": 0.0, "stop": 1.0, "num": 4, "endpoint": False},
        {},
    ),
    "moveaxis": ("moveaxis", [(2, 3, 4)], (-1, 1), {"source": 0, "destination": -1}, {}),
    # MXNet's own operator tests (issue 21, second pass): tensor ops
    "reverse": ("reverse", [(2, 3, 4)], (-1, 1), {"axis": (0, 2)}, {}),
    "flip": ("flip", [(3, 4)], (-1, 1), {"axis": 1}, {}),
    "reshape_like": ("reshape_like", [(6, 4), (3, 2, 4)], (-1, 1), {}, {}),
    "reshape_like_ranges": (
        "reshape_like",
        [(30, 7), (15, 2, 4)],
        (-1, 1),
        {"lhs_begin": 0, "lhs_end": 1, "rhs_begin": 0, "rhs_end": 2},
        {},
    ),
    "slice_like": ("slice_like", [(4, 5, 6), (2, 3, 9)], (-1, 1), {"axes": (0, -2)}, {}),
    "slice_like_all": ("slice_like", [(4, 5), (3, 2)], (-1, 1), {}, {}),
    "diag_2d": ("diag", [(4, 5)], (-1, 1), {"k": 1}, {}),
    "diag_1d": ("diag", [(3,)], (-1, 1), {"k": -2}, {}),
    "diag_4d": ("diag", [(3, 4, 5, 2)], (-1, 1), {"k": -1, "axis1": 1, "axis2": 2}, {}),
    "depth_to_space": ("depth_to_space", [(2, 8, 3, 2)], (-1, 1), {"block_size": 2}, {}),
    "space_to_depth": ("space_to_depth", [(2, 3, 4, 6)], (-1, 1), {"block_size": 2}, {}),
    "softmin": ("softmin", [(3, 5)], (-2, 2), {"axis": 0}, {}),
    # 2-d only: MXNet 1.9.1's instance-mode gradient is wrong for 3-d inputs (mxnb matches
    # central differences there, tests/compat/test_mxnet_unittest_ops.py)
    "softmax_activation": ("SoftmaxActivation", [(3, 5)], (-2, 2), {}, {}),
    "softmax_activation_channel": (
        "SoftmaxActivation",
        [(2, 3, 2, 2)],
        (-2, 2),
        {"mode": "channel"},
        {},
    ),
    "hard_sigmoid": ("hard_sigmoid", [(3, 4)], (-4, 4), {"alpha": 0.3, "beta": 0.4}, {}),
    "gamma": ("gamma", [(3, 4)], (0.2, 4), {}, {}),
    "gammaln": ("gammaln", [(3, 4)], (0.2, 8), {}, {}),
    "logical_not": ("logical_not", [(3, 4)], (-1, 1), {}, {}),
    "add_arrays": ("add", [(2, 3), (1, 3)], (-1, 1), {}, {}),
    "subtract_scalar_first": ("subtract", [(2, 3)], (-1, 1), {}, {0: 1.5}),
    "multiply_arrays": ("multiply", [(2, 1), (2, 3)], (-1, 1), {}, {}),
    "divide_scalar": ("divide", [(2, 3)], (0.5, 2), {}, {1: 4.0}),
    "greater_scalar_first": ("greater", [(2, 3)], (-1, 1), {}, {0: 0.0}),
    "layer_norm": ("LayerNorm", [(4, 5), (5,), (5,)], (-1, 1), {"eps": 1e-3}, {}),
    "layer_norm_axis0": ("LayerNorm", [(3, 4, 2), (3,), (3,)], (-1, 1), {"axis": 0}, {}),
}

# name: (function, (low, high)) for second derivatives
GRAD2_CASES = {
    "sin": ("sin", (-3, 3)),
    "cos": ("cos", (-3, 3)),
    "tan": ("tan", (-1, 1)),
    "tanh": ("tanh", (-2, 2)),
    "sigmoid": ("sigmoid", (-3, 3)),
    "relu": ("relu", (-2, 2)),
    "log": ("log", (0.5, 3)),
    "log2": ("log2", (0.5, 3)),
    "log10": ("log10", (0.5, 3)),
    "exp": ("exp", (-1, 1)),
    "expm1": ("expm1", (-1, 1)),
    "log1p": ("log1p", (-0.5, 2)),
    "square": ("square", (-2, 2)),
    "sqrt": ("sqrt", (0.5, 3)),
    "rsqrt": ("rsqrt", (0.5, 3)),
    "cbrt": ("cbrt", (0.5, 3)),
    "rcbrt": ("rcbrt", (0.5, 3)),
    "reciprocal": ("reciprocal", (0.5, 3)),
    "arcsin": ("arcsin", (-0.9, 0.9)),
    "arccos": ("arccos", (-0.9, 0.9)),
    "arctan": ("arctan", (-2, 2)),
    "sinh": ("sinh", (-2, 2)),
    "cosh": ("cosh", (-2, 2)),
    "arcsinh": ("arcsinh", (-2, 2)),
    "arccosh": ("arccosh", (1.2, 3)),
    "arctanh": ("arctanh", (-0.8, 0.8)),
    "radians": ("radians", (-3, 3)),
    "abs": ("abs", (-2, 2)),
    "negative": ("negative", (-2, 2)),
}


def call(function, args, kwargs):
    """``mx.nd.<function>``; MXNet 1.9.1 has ``hypot`` only as ``mx.sym.hypot``, so its
    ``mx.nd`` form is spelt with the ops that ``mx.sym.hypot`` dispatches to."""
    if function != "hypot":
        return getattr(mx.nd, function)(*args, **kwargs)
    lhs, rhs = args
    if isinstance(lhs, mx.nd.NDArray) and isinstance(rhs, mx.nd.NDArray):
        return mx.nd.broadcast_hypot(lhs, rhs)
    array, scalar = (lhs, rhs) if isinstance(lhs, mx.nd.NDArray) else (rhs, lhs)
    return mx.nd._internal._hypot_scalar(array, scalar=scalar)


def run_op_case(seed, function, shapes, bounds, kwargs, scalars):
    arrays = inputs_for(seed, shapes, *bounds)
    nd_inputs = [mx.nd.array(a) for a in arrays]
    for x in nd_inputs:
        x.attach_grad()
    args = list(nd_inputs)
    for position, value in sorted(scalars.items()):
        args.insert(position, value)
    stored = {f"in{i}": a for i, a in enumerate(arrays)}
    if function in ("linspace",):
        out = getattr(mx.nd, function)(**kwargs)
        stored["out"] = out.asnumpy()
        return stored
    with mx.autograd.record():
        out = call(function, args, kwargs)
    head = np.random.RandomState(seed + 1000).uniform(-1, 1, size=out.shape).astype(np.float32)
    out.backward(mx.nd.array(head))
    stored["out"] = out.asnumpy()
    stored["head"] = head
    for i, x in enumerate(nd_inputs):
        stored[f"grad{i}"] = x.grad.asnumpy()
    return stored


def run_grad2_case(seed, function, bounds):
    (x_np,) = inputs_for(seed, [(3, 4)], *bounds)
    rng = np.random.RandomState(seed + 2000)
    head1 = rng.uniform(-1, 1, size=x_np.shape).astype(np.float32)
    head2 = rng.uniform(-1, 1, size=x_np.shape).astype(np.float32)
    x = mx.nd.array(x_np)
    x.attach_grad()
    with mx.autograd.record():
        y = getattr(mx.nd, function)(x)
        (dx,) = mx.autograd.grad(
            y, [x], head_grads=mx.nd.array(head1), create_graph=True, retain_graph=True
        )
    stored = {"x": x_np, "head1": head1, "head2": head2, "dx": dx.asnumpy()}
    try:
        dx.backward(mx.nd.array(head2))
    except mx.MXNetError:  # dx does not depend on x (relu, abs, negative ...): MXNet refuses
        return stored
    stored["d2x"] = x.grad.asnumpy()
    return stored


def main():
    index = {"mxnet_version": mx.__version__, "op": {}, "grad2": {}}
    arrays = {}
    for seed, (name, (function, shapes, bounds, kwargs, scalars)) in enumerate(OP_CASES.items()):
        index["op"][name] = {
            "function": function,
            "kwargs": kwargs,
            "scalars": {str(k): v for k, v in scalars.items()},
            "num_inputs": len(shapes),
        }
        for key, value in run_op_case(seed, function, shapes, bounds, kwargs, scalars).items():
            arrays[f"op/{name}/{key}"] = value
    for seed, (name, (function, bounds)) in enumerate(GRAD2_CASES.items()):
        index["grad2"][name] = {"function": function}
        for key, value in run_grad2_case(100 + seed, function, bounds).items():
            arrays[f"grad2/{name}/{key}"] = value
    arrays["__index__"] = np.frombuffer(json.dumps(index, sort_keys=True).encode(), dtype=np.uint8)
    np.savez_compressed(OUT, **arrays)
    print(f"wrote {OUT}: {len(index['op'])} op cases, {len(index['grad2'])} second derivatives")


if __name__ == "__main__":
    main()
