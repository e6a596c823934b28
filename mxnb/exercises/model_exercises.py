"""The NDArray, operator and custom-op exercises: graded by the trace, the plan and the gradient check.

Idea: above the engine, the mistakes change shape.  An NDArray loop that
reads a value each iteration waits for the engine every time (the trace
shows each wait).  An operator that declares more backward dependencies
than it reads keeps memory alive and forbids in-place (the memory plan
shows it).  A custom op's backward is right only if it matches central
differences (:func:`~mxnb.testing.check_numeric_gradient`).  Each grader
asks the tool that sees the mistake.

Rule: ``ndarray_loop_without_wait`` takes ``loop(x, steps) -> (x, history)``;
``operator_inplace_relu`` takes ``declare_backward_dependency(out_grad,
in_data, out_data) -> list``; ``customop_gradient`` takes a ``CustomOp``
subclass computing softplus, ``y = log(1 + exp(x))``.

State kept: none.

Example::

    >>> import mxnb as mx
    >>> def declare_backward_dependency(out_grad, in_data, out_data):
    ...     return [*out_grad, *in_data, *out_data]
    >>> mx.exercises.check('operator_inplace_relu', declare_backward_dependency).reason
    'no_inplace'
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .catalogue import Exercise, register
from .result import Result

__all__: list[str] = []

_STEPS = 20


# -- 6. NDArray: a loop without a wait inside ------------------------------------------------
def _grade_loop(loop: Any) -> Result:
    import mxnb as mx
    from mxnb.engine.tracing import WaitBegin

    start = np.linspace(-1.0, 1.0, 64, dtype=np.float32)
    x = mx.nd.array(start)
    x.wait_to_read()
    try:
        with mx.engine.trace() as recorded:
            out, history = loop(x, _STEPS)
    except Exception as exc:  # noqa: BLE001 - reported as the answer's error
        return Result(False, f"loop raised {type(exc).__name__}: {exc}", None, "program_error")
    waits = sum(isinstance(event, WaitBegin) for event in recorded.events)
    if waits:
        return Result(
            False,
            f"the loop waited {waits} times for the engine ({_STEPS} iterations): asnumpy, "
            "asscalar, wait_to_read and waitall block Python until every op before them "
            "ran, so no op is pushed ahead; keep NDArrays inside the loop (history.append("
            "x.mean())) and read them once, after it",
            None,
            "wait_in_loop",
            {"waits": waits},
        )
    expected, means = start.astype(np.float64), []
    for _ in range(_STEPS):
        expected = 0.5 * expected + 1
        means.append(expected.mean())
    if not isinstance(out, mx.nd.NDArray) or len(history) != _STEPS:
        return Result(
            False,
            f"return (x, history): x an NDArray, history {_STEPS} NDArrays (one mean per "
            f"step); got {type(out).__name__} and {len(history)} items",
            None,
            "wrong_value",
        )
    got = [
        float(np.asarray(h.asnumpy() if hasattr(h, "asnumpy") else h).ravel()[0]) for h in history
    ]
    if not np.allclose(out.asnumpy(), expected, atol=1e-4) or not np.allclose(
        got, means, atol=1e-4
    ):
        return Result(
            False,
            f"no wait, but the values differ: after {_STEPS} steps of x <- 0.5·x + 1 the mean "
            f"is {means[-1]:.5f}, got {got[-1]:.5f}",
            None,
            "wrong_value",
        )
    return Result(True, f"{_STEPS} iterations pushed without a single wait; values right.")


register(
    Exercise(
        "ndarray_loop_without_wait",
        "NDArray: a loop without a wait inside",
        f"Run x ← 0.5·x + 1 for `steps` iterations and keep the mean of x after each one, for "
        f"a plot. Return `(x, history)`. The grader runs it with {_STEPS} steps under a trace "
        "and counts the waits: NDArray ops return at once, so a loop that never waits pushes "
        "all its work ahead of the engine. Read values only after the loop.",
        '''def loop(x, steps):
    """x <- 0.5 x + 1, steps times; history: the mean after each step."""
    history = []
    for _ in range(steps):
        x = 0.5 * x + 1
        history.append(x.mean().asscalar())
    return x, history
''',
        '''def loop(x, steps):
    """Keep the means as NDArrays: nothing waits until the caller reads them."""
    history = []
    for _ in range(steps):
        x = 0.5 * x + 1
        history.append(x.mean())
    return x, history
''',
        "loop",
        _grade_loop,
        "ndarray",
    )
)


# -- 7. Operators: backward dependencies for an in-place ReLU --------------------------------
def _relu_prop(declare: Any) -> str:
    """Register the exercise's ReLU with the learner's declaration; return its op name."""
    from mxnb import operator as op

    class _ExerciseReLU(op.Operator):
        def forward(self, ctx, in_data, req, out_data, aux):
            op.assign(out_data[0], req[0], np.maximum(in_data[0], 0))

        def backward(self, ctx, out_grad, in_data, out_data, req, in_grad, aux):
            op.assign(in_grad[0], req[0], out_grad[0] * (out_data[0] > 0))

    @op.register("_exercise_relu")
    class _ExerciseReLUProp(op.OperatorProperty):
        def declare_backward_dependency(self, out_grad, in_data, out_data):
            return list(declare(out_grad, in_data, out_data))

        def forward_inplace_option(self, in_data, out_data):
            return [(in_data[0], out_data[0])]

        def create_operator(self, ctx):
            return _ExerciseReLU()

    return "_exercise_relu"


def _relu_net() -> tuple[Any, dict[str, tuple[int, ...]]]:
    import mxnb as mx

    data = mx.sym.Variable("data")
    hidden = mx.sym.FullyConnected(data, num_hidden=64, name="fc1")
    relu = mx.sym._exercise_relu(hidden, name="relu")
    return mx.sym.FullyConnected(relu, num_hidden=8, name="fc2"), {"data": (16, 32)}


def _grade_relu(declare: Any) -> Result:
    import mxnb as mx

    try:
        named = {id(obj): label for label, obj in _TOKENS.items()}
        declared = {named.get(id(item), repr(item)) for item in declare(*_TOKEN_LISTS)}
    except Exception as exc:  # noqa: BLE001 - reported as the answer's error
        return Result(
            False, f"the function raised {type(exc).__name__}: {exc}", None, "program_error"
        )
    for needed, why in (
        ("out_grad[0]", "the gradient arriving from above"),
        ("out_data[0]", "the ReLU's output: backward computes out_grad * (out_data > 0)"),
    ):
        if needed not in declared:
            return Result(
                False,
                f"backward reads {needed} ({why}) but it is not declared: the planner may reuse "
                "its storage before backward runs, and backward receives None",
                None,
                "missing_dependency",
            )
    _relu_prop(lambda g, i, o: [*g, *i, *o])
    full = mx.executor.plan_memory(*_relu_net(), grad_req="write")
    _relu_prop(declare)
    sym, shapes = _relu_net()
    plan = mx.executor.plan_memory(sym, shapes, grad_req="write")
    if ("fc1_output", "relu_output") not in plan.inplace_pairs:
        return Result(
            False,
            "in_data[0] is declared, so the ReLU's input stays alive until backward and its "
            f"output cannot take the input's storage in place: {plan.internal_bytes:,} bytes "
            "planned; backward needs only out_grad and the output",
            None,
            "no_inplace",
            {"bytes": plan.internal_bytes},
        )
    rng = np.random.default_rng(0)
    exe = sym.simple_bind(mx.cpu(), grad_req="write", **shapes)
    for array in exe.arg_dict.values():
        array[:] = rng.standard_normal(array.shape).astype(np.float32)
    exe.forward(is_train=True)
    exe.backward(mx.nd.ones(exe.outputs[0].shape))
    args = {name: a.asnumpy() for name, a in exe.arg_dict.items()}
    hidden = args["data"] @ args["fc1_weight"].T + args["fc1_bias"]
    upstream = np.ones((16, 8), np.float32) @ args["fc2_weight"] * (hidden > 0)
    if not np.allclose(exe.grad_dict["fc1_bias"].asnumpy(), upstream.sum(axis=0), atol=1e-3):
        return Result(False, "the gradient through the ReLU is wrong", None, "gradient")
    saved = full.internal_bytes - plan.internal_bytes
    return Result(
        True,
        f"relu_output takes fc1_output's storage in place; the plan needs "
        f"{plan.internal_bytes:,} bytes, {saved:,} fewer than declaring everything.",
        None,
        "",
        {"bytes": plan.internal_bytes, "saved": saved},
    )


_TOKENS = {f"{kind}[0]": object() for kind in ("out_grad", "in_data", "out_data")}
_TOKEN_LISTS = tuple([_TOKENS[f"{kind}[0]"]] for kind in ("out_grad", "in_data", "out_data"))

register(
    Exercise(
        "operator_inplace_relu",
        "Operators: backward dependencies for an in-place ReLU",
        "The ReLU below allows its output to take its input's storage in place "
        "(`forward_inplace_option`), and its backward computes `out_grad * (out_data > 0)`. "
        "MXNet's default `declare_backward_dependency` keeps everything (out_grad, in_data, "
        "out_data) alive for backward, which forbids the in-place. Declare exactly what "
        "backward reads; the grader plans FC → ReLU → FC and checks the in-place pair, the "
        "bytes saved and the gradient.",
        '''def declare_backward_dependency(out_grad, in_data, out_data):
    """What the ReLU's backward reads (MXNet's default: everything)."""
    return [*out_grad, *in_data, *out_data]
''',
        '''def declare_backward_dependency(out_grad, in_data, out_data):
    """out_grad * (out_data > 0): the input is not needed, so the output may overwrite it."""
    return [out_grad[0], out_data[0]]
''',
        "declare_backward_dependency",
        _grade_relu,
        "operators",
    )
)


# -- 8. CustomOp: a gradient that passes the numeric check -----------------------------------
def _grade_custom(op_class: Any) -> Result:
    import mxnb as mx
    from mxnb import operator as op
    from mxnb.testing import check_numeric_gradient

    if not (isinstance(op_class, type) and issubclass(op_class, op.CustomOp)):
        return Result(False, f"pass a CustomOp subclass, got {op_class!r}", None, "program_error")

    @op.register("_exercise_softplus")
    class _SoftplusProp(op.CustomOpProp):
        def __init__(self) -> None:
            super().__init__(need_top_grad=True)

        def list_arguments(self):
            return ["data"]

        def infer_shape(self, in_shape):
            return [in_shape[0]], [in_shape[0]], []

        def create_operator(self, ctx, shapes, dtypes):
            return op_class()

    rng = np.random.default_rng(0)
    points = rng.uniform(-3, 3, size=(4, 5))
    x = mx.nd.array(points)
    try:
        with mx.engine.debug():
            y = mx.nd.Custom(x, op_type="_exercise_softplus").asnumpy()
    except mx.MXNBError as exc:
        return Result(
            False,
            f"debug mode caught a write into an input: {str(exc)[:300]}",
            None,
            "writes_input",
        )
    if not np.allclose(y, np.log1p(np.exp(points)), atol=1e-4):
        return Result(False, "forward is not log(1 + exp(x))", None, "wrong_forward")
    try:
        check_numeric_gradient("Custom", [points], params={"op_type": "_exercise_softplus"})
    except AssertionError as exc:
        return Result(
            False,
            f"check_numeric_gradient disagrees with backward: {str(exc)[:400]}",
            None,
            "gradient",
        )
    return Result(True, "forward right, backward matches central differences.")


register(
    Exercise(
        "customop_gradient",
        "CustomOp: a gradient that passes the numeric check",
        "Write softplus, y = log(1 + exp(x)), as a `CustomOp`. Its derivative is the sigmoid, "
        "1 / (1 + exp(−x)). Backward receives `out_grad` (the gradient of the loss with "
        "respect to y) and must write the gradient with respect to x into `in_grad` with "
        "`self.assign`. Inputs are read-only: compute into the outputs. The grader runs "
        "forward in debug mode, then `mx.testing.check_numeric_gradient`.",
        '''class Softplus(mx.operator.CustomOp):
    """y = log(1 + exp(x))."""

    def forward(self, is_train, req, in_data, out_data, aux):
        self.assign(out_data[0], req[0], mx.nd.log(1 + mx.nd.exp(in_data[0])))

    def backward(self, req, out_grad, in_data, out_data, in_grad, aux):
        self.assign(in_grad[0], req[0], out_grad[0])  # the derivative is missing
''',
        '''class Softplus(mx.operator.CustomOp):
    """y = log(1 + exp(x)); dy/dx = sigmoid(x)."""

    def forward(self, is_train, req, in_data, out_data, aux):
        self.assign(out_data[0], req[0], mx.nd.log(1 + mx.nd.exp(in_data[0])))

    def backward(self, req, out_grad, in_data, out_data, in_grad, aux):
        sigmoid = 1 / (1 + mx.nd.exp(-in_data[0]))
        self.assign(in_grad[0], req[0], out_grad[0] * sigmoid)
''',
        "Softplus",
        _grade_custom,
        "custom ops",
    )
)
