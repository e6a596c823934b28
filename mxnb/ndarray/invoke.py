"""The imperative invoke: run any registered operator on NDArrays through the engine.

Idea (MXNet: ``MXImperativeInvoke`` in src/c_api/c_api_ndarray.cc and
``Imperative::Invoke``): ``mx.nd.<Name>(*arrays, **params)`` (generated in
:mod:`mxnb.ndarray.register`) and the NDArray operators end here.  One call parses the parameters into the
op's property, infers output shapes and dtypes, allocates the outputs (or
takes ``out=``), creates the operator and pushes ONE engine op that calls
``operator.forward`` on the raw arrays.  It returns at once.

Rule: the pushed op reads its inputs (const vars) and writes its outputs,
its auxiliary states (BatchNorm's moving mean / var) and the vars of the
resources it asked for (random generator, temp space): so everything that
shares an array or a resource is ordered in push order.

State kept:
    _plans    one plan cache, keyed by :func:`_signature`: (op name, params,
              input shapes and dtypes, context); the NDArray methods find
              their plan with that one lookup, the op functions after parsing
    _props    (op name, params) -> the parsed OperatorProperty, so that an op
              function parses its parameters once (plans come from
              :mod:`.invoke_plan`)
    A plan whose op was registered again is rebuilt (``registry.generation``).

The named fast path, :func:`_push_direct`: when an op's forward is exactly one
ufunc call for the plan's dtypes (elementwise ops on floats), the pushed
function is that call, ``np.add(a, b, out=c)``, with no OpContext and no
dispatch through the operator (as MXNet calls an op's FCompute directly);
tests check it against the general path, :func:`_push_general`.  In debug
mode const inputs reach the kernel as read-only views (:mod:`.debug`).  When
autograd records, the pushed op is handed to ``mxnb.autograd._record_op``.

Example::

    >>> import mxnb as mx
    >>> a = mx.nd.ones((2, 2))
    >>> [out] = mx.nd.invoke('_plus_scalar', [a], {'scalar': 1.5})
    >>> out.asnumpy().tolist()
    [[2.5, 2.5], [2.5, 2.5]]
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence
from functools import partial as _partial
from typing import Any

import numpy as np

from .. import engine as _engine_mod
from ..base import ContextError, DTypeError, MXNBError, ShapeError
from ..context import Context
from ..operator import registry
from ..operator.base import OpContext, OperatorProperty, OpReqType
from .chunk import _parked, _take_parked
from .debug import check_written, poison_outputs, raise_read_only_write, readonly_view
from .invoke_plan import _Plan, _make_plan
from .ndarray import NDArray, _alloc, _ctx_of

__all__ = ["clear_cache", "invoke", "invoke_visible"]

_WRITE_TO = OpReqType.WRITE_TO


_plans: dict[Any, _Plan] = {}
_props: dict[Any, OperatorProperty] = {}
_MAX_CACHE = 4096


def clear_cache() -> None:
    """Forget cached properties and plans (re-registered ops are also detected by themselves)."""
    _plans.clear()
    _props.clear()


def _freeze(value: Any) -> Any:
    if isinstance(value, (list, tuple)):
        return tuple(_freeze(item) for item in value)
    if isinstance(value, dict):
        return tuple(sorted((key, _freeze(item)) for key, item in value.items()))
    if isinstance(value, np.dtype):
        return value.name
    if isinstance(value, type):
        return getattr(value, "__name__", repr(value))
    try:
        hash(value)
    except TypeError:
        return repr(value)
    return value


def _params_key(params: dict[str, Any]) -> Any:
    if not params:
        return ()
    return tuple(sorted((key, _freeze(value)) for key, value in params.items()))


def _registered_class(op_name: str) -> Any:
    """The property class registered now (a notebook may re-register an op under its name)."""
    info = _find(op_name)
    return None if info is None else info.prop_cls


_find = registry.find


_cache_generation = -1  # registry.generation when the caches above were last current


def _get_prop(op_name: str, params: dict[str, Any]) -> tuple[OperatorProperty, Any]:
    """The parsed property of ``op_name`` with ``params``, and its key ``(op_name, params key)``.

    Registering any op (again) bumps ``registry.generation``; the cached
    properties and plans are then dropped (a custom op type registered again
    under the same name reuses the ``Custom`` property class, so a class check
    alone would not see it).
    """
    global _cache_generation
    if _cache_generation != registry.generation:
        clear_cache()
        _cache_generation = registry.generation
    try:
        key: Any = (op_name, tuple(params.items()) if params else ())
        prop = _props.get(key)
    except TypeError:  # an unhashable value (a list): normalise it
        key = (op_name, _params_key(params))
        prop = _props.get(key)
    if prop is None or type(prop) is not _registered_class(op_name):
        prop = registry.get(op_name).create_property(**params)
        if len(_props) > _MAX_CACHE:
            _props.clear()
        _props[key] = prop
    return prop, key


# -- autograd hooks (the autograd module may not define them yet) -----------------

_autograd: Any = None  # mxnb.autograd once it is imported (it imports this module first)


def _find_autograd() -> Any:
    """Return mxnb.autograd if it is imported and has its hooks, caching it; else None."""
    global _autograd
    module = sys.modules.get("mxnb.autograd")
    if module is not None and hasattr(module, "is_recording"):
        _autograd = module
        return module
    return None


def _autograd_state() -> tuple[bool, bool]:
    """``(is_recording, is_training)`` from mxnb.autograd, (False, False) before it exists."""
    module = _autograd or _find_autograd()
    if module is None:
        return False, False
    return bool(module.is_recording()), bool(module.is_training())


_is_debug = _engine_mod.is_debug
_get_engine = _engine_mod.get


def _call_unary(ufunc: Any, data: Any, out: Any, run_ctx: Any) -> None:
    """A direct kernel's pushed function (bound with functools.partial): ``ufunc(data)``."""
    ufunc(data, out=out)


def _call_binary(ufunc: Any, first: Any, second: Any, out: Any, run_ctx: Any) -> None:
    """A direct kernel's pushed function (bound with functools.partial): ``ufunc(a, b)``."""
    ufunc(first, second, out=out)


def _check_contexts(op: str, arrays: Sequence[NDArray], ctx: Context) -> None:
    for item in arrays:
        if item.context != ctx:
            raise ContextError(
                f"{op}: inputs are on different contexts, {ctx!r} and {item.context!r}; "
                "move them to one context with .as_in_context(ctx)"
            )


def _check_out(
    op: str, index: int, target: NDArray, shape: tuple, dtype: np.dtype, ctx: Context
) -> None:
    if not isinstance(target, NDArray):
        raise MXNBError(
            f"{op}: out must be an NDArray (or a list of them), got {type(target).__name__}"
        )
    if target.shape != shape:
        raise ShapeError(
            f"{op}: output {index} has shape {shape} but out= has shape {target.shape}"
        )
    if target.dtype != dtype:
        raise DTypeError(
            f"{op}: output {index} has dtype {dtype.name} but out= has dtype {target.dtype.name}"
        )
    if target.context != ctx:
        raise ContextError(f"{op}: the op runs on {ctx!r} but out= is on {target.context!r}")


# -- the invoke --------------------------------------------------------------------


def invoke(
    op: str | OperatorProperty,
    inputs: Sequence[NDArray],
    params: dict[str, Any] | None = None,
    out: NDArray | Sequence[NDArray] | None = None,
    aux: Sequence[NDArray] | None = None,
    ctx: Context | None = None,
    name: str | None = None,
) -> list[NDArray]:
    """Run ``op`` on ``inputs`` asynchronously; return ALL its outputs (hidden ones too).

    Parameters
    ----------
    op : str or OperatorProperty
        A registered name (parsed with ``params``) or a ready property.
    inputs : list of NDArray
        The arguments, in ``prop.list_arguments()`` order.
    params : dict
        Operator parameters (values or MXNet strings); ignored when ``op`` is a property.
    out : NDArray or list of NDArray, optional
        Arrays to write the (visible) outputs into.
    aux : list of NDArray, optional
        Auxiliary states (``prop.list_auxiliary_states()`` order); the op mutates them.
    ctx : Context, optional
        Where to run an op without inputs (default: the current context).
    name : str, optional
        A label for the engine trace.
    """
    if isinstance(op, str):
        prop, prop_key = _get_prop(op, params or {})
    else:
        prop, prop_key = op, None
    return _invoke_prop(prop, prop_key, inputs, out, aux, ctx, name)[1]


def _signature(
    name: Any, params: Any, op: str, inputs: Sequence[NDArray], ctx: Any
) -> tuple[Any, Context]:
    """The plan cache's key and the op's context.

    The key is ``(name, params, ...)`` — what names the op and its parameters —
    then each input's shape and dtype, and the context, by identity (contexts
    are interned by the NDArray layer).  The context is the inputs' (checked
    to agree), or ``ctx`` for an op without inputs.  One and two inputs are
    spelled out: this is the per-op overhead of every small op.
    """
    count = len(inputs)
    if count == 2:
        first, second = inputs
        ctx = first.context
        if second.context is not ctx and second.context != ctx:
            _check_contexts(op, inputs, ctx)
        return (name, params, first.shape, first.dtype, second.shape, second.dtype, id(ctx)), ctx
    if count == 1:
        first = inputs[0]
        ctx = first.context
        return (name, params, first.shape, first.dtype, id(ctx)), ctx
    if count:
        ctx = inputs[0].context
        _check_contexts(op, inputs, ctx)
        shapes = tuple(item.shape for item in inputs)
        return (name, params, shapes, tuple(item.dtype for item in inputs), id(ctx)), ctx
    ctx = _ctx_of(ctx)
    return (name, params, id(ctx)), ctx


def _invoke_prop(
    prop: OperatorProperty,
    prop_key: Any,
    inputs: Sequence[NDArray],
    out: Any,
    aux: Sequence[NDArray] | None,
    ctx: Any,
    name: str | None,
) -> tuple[_Plan, list[NDArray]]:
    """Invoke a parsed property; ``prop_key`` (None: do not cache) keys the plan cache.

    ``prop_key`` is :func:`_get_prop`'s ``(op name, params key)``: with the
    inputs it makes :func:`_signature`'s key, the one the NDArray methods
    look up in :func:`invoke_visible`.
    """
    op_name, params_key = prop_key if prop_key is not None else (prop.op_name, None)
    key, ctx = _signature(op_name, params_key, prop.op_name, inputs, ctx)
    if aux:
        key = (key, tuple(item.shape for item in aux))
    plan = _plans.get(key) if prop_key is not None else None
    if plan is not None and plan.prop is not prop:
        plan = None  # a property parsed again (its op was registered again)
    if plan is None:
        _check_contexts(prop.op_name, inputs, ctx)
        plan = _make_plan(
            prop,
            prop.op_name,
            ctx,
            [item.shape for item in inputs],
            [item.dtype for item in inputs],
            len(aux) if aux else 0,
        )
        plan.generation = registry.generation
        if prop_key is not None:
            if len(_plans) > _MAX_CACHE:
                _plans.clear()
            _plans[key] = plan
    if aux:
        _check_contexts(prop.op_name, aux, ctx)
        for item, shape in zip(aux, plan.aux_shapes):
            if item.shape != shape:
                raise ShapeError(
                    f"{prop.op_name}: auxiliary state has shape {item.shape}, expected {shape}"
                )
    outputs = _outputs(plan, out, ctx)
    return plan, _push(plan, inputs, outputs, aux or (), name)


def _outputs(plan: _Plan, out: Any, ctx: Context) -> list[NDArray]:
    """Fresh output arrays, or the ``out=`` arrays after checking them against the plan.

    A fresh output may adopt a parked block and its var (see :func:`_new_output`).
    """
    if out is None:
        return [
            _new_output(shape, ctx, dtype, nbytes)
            for shape, dtype, nbytes in zip(plan.out_shapes, plan.out_types, plan.out_nbytes)
        ]
    if plan.single_output and type(out) is NDArray:
        if (
            out.shape != plan.out_shapes[0]
            or out.dtype != plan.out_types[0]
            or out.context is not ctx
        ):
            _check_out(plan.prop.op_name, 0, out, plan.out_shapes[0], plan.out_types[0], ctx)
        return [out]
    return _given_outputs(plan, out)


def _new_output(shape: tuple, ctx: Context, dtype: np.dtype, nbytes: int) -> NDArray:
    """A fresh output; it adopts a parked block of its size and that block's var if there is one.

    The op that writes the output writes the adopted var, so it runs after
    every op still using the block (:func:`mxnb.ndarray.chunk._park`).
    """
    if _parked:
        parked = _take_parked(ctx, nbytes)
        if parked:
            return _alloc(shape, ctx, dtype, nbytes, *parked)
    return _alloc(shape, ctx, dtype, nbytes)


def _given_outputs(plan: _Plan, out: Any) -> list[NDArray]:
    ctx = plan.ctx
    given = [out] if isinstance(out, NDArray) else list(out)
    op = plan.prop.op_name
    if len(given) > len(plan.out_shapes):
        raise MXNBError(
            f"{op}: out= has {len(given)} arrays but the op has {len(plan.out_shapes)} outputs"
        )
    if len(given) < plan.num_visible:
        raise MXNBError(
            f"{op}: out= has {len(given)} arrays but the op has {plan.num_visible} visible outputs"
        )
    for index, target in enumerate(given):
        _check_out(op, index, target, plan.out_shapes[index], plan.out_types[index], ctx)
    for index in range(len(given), len(plan.out_shapes)):
        shape, dtype = plan.out_shapes[index], plan.out_types[index]
        given.append(_new_output(shape, ctx, dtype, plan.out_nbytes[index]))
    return given


def _push(
    plan: _Plan,
    inputs: Sequence[NDArray],
    outputs: list[NDArray],
    aux: Sequence[NDArray],
    name: str | None,
) -> list[NDArray]:
    """Push ONE engine op: const = inputs; mutate = outputs + aux + resource vars."""
    direct = plan.direct
    if direct is not None and not aux and not _is_debug():
        _push_direct(plan, direct, inputs, outputs[0], name or plan.label)
        return outputs
    return _push_general(plan, inputs, outputs, aux, name)


def _push_general(
    plan: _Plan,
    inputs: Sequence[NDArray],
    outputs: list[NDArray],
    aux: Sequence[NDArray],
    name: str | None,
) -> list[NDArray]:
    """:func:`_push` through the operator's forward (any op; debug mode's read-only inputs)."""
    operator = plan.operator
    if operator is None:
        operator = plan.prop.create_operator_ex(plan.ctx, plan.in_shapes, plan.in_types)
    autograd = _autograd or _find_autograd()
    if autograd is not None:
        recording = autograd.is_recording()
        is_train = autograd.is_training()
    else:
        recording = is_train = False
    # Small fixed arities are spelled out: this is the per-op overhead of every small op.
    if len(outputs) == 1:
        target = outputs[0]
        out_raw = [target._array]
        mutate = [target._var]
    else:
        out_raw = [item._array for item in outputs]
        mutate = [item._var for item in outputs]
    if aux:
        mutate += [item._var for item in aux]
        aux_raw = [item._array for item in aux]
    else:
        aux_raw = []
    if plan.resource_vars:
        mutate += plan.resource_vars
    count = len(inputs)
    if count == 1:
        only = inputs[0]
        const = [only._var]
        in_raw = [only._array]
    elif count == 2:
        lhs, rhs = inputs
        const = [lhs._var, rhs._var]
        in_raw = [lhs._array, rhs._array]
    else:
        const = [item._var for item in inputs]
        in_raw = [item._array for item in inputs]
    label = name or plan.label
    if _is_debug():
        in_raw = [
            readonly_view(item._array, label, arg) for item, arg in zip(inputs, plan.arg_names)
        ]
        run = _debug_runner(operator, plan, label, is_train, in_raw, out_raw, aux_raw)
    else:
        run = _forward_runner(operator, plan, is_train, in_raw, out_raw, aux_raw)
    _get_engine().push_sync(run, plan.ctx, const, mutate, 0, label)
    if recording:
        autograd._record_op(plan.prop, operator, list(inputs), outputs, list(aux), is_train)
    return outputs


def _forward_runner(
    operator: Any, plan: _Plan, is_train: bool, in_raw: list, out_raw: list, aux_raw: list
) -> Callable[[Any], None]:
    """The pushed function of the general path: the operator's forward on the raw arrays."""
    reqs = plan.reqs
    forward = operator.forward

    def run(run_ctx: Any) -> None:
        # One OpContext per (plan, worker, mode) is reused: it is read-only for kernels.
        op_ctx = plan.op_ctx
        if op_ctx is None or op_ctx.run_ctx is not run_ctx or op_ctx.is_train is not is_train:
            op_ctx = OpContext(is_train, run_ctx, plan.resources, plan.xp)
            plan.op_ctx = op_ctx
        forward(op_ctx, in_raw, reqs, out_raw, aux_raw)

    return run


def _push_direct(
    plan: _Plan,
    direct: tuple[Any, Any, bool],
    inputs: Sequence[NDArray],
    target: NDArray,
    label: str,
) -> None:
    """The hot path of :func:`_push` for a direct kernel (one ufunc, one output, no aux).

    The pushed function is the ufunc call itself: a ``functools.partial`` of
    :func:`_call_binary` / :func:`_call_unary` (two objects per op where a
    closure makes five; on the threaded engines the objects of queued ops
    are what the cycle collector walks).  An op whose only input is its
    output (``a += 1``) is pushed as a write of that var alone: what the
    engine would normalise it to anyway.
    """
    ufunc, scalar, scalar_first = direct
    out_var = target._var
    const: tuple[Any, ...]
    if len(inputs) == 2:
        lhs, rhs = inputs
        run = _partial(_call_binary, ufunc, lhs._array, rhs._array, target._array)
        lhs_var = lhs._var
        rhs_var = rhs._var
        # The vars as push_sync would normalise them (a view shares its base's var).
        if lhs_var is rhs_var:
            const = () if lhs_var is out_var else (lhs_var,)
        elif lhs_var is out_var:
            const = (rhs_var,)
        elif rhs_var is out_var:
            const = (lhs_var,)
        else:
            const = (lhs_var, rhs_var)
    else:
        only = inputs[0]
        if scalar is None:
            run = _partial(_call_unary, ufunc, only._array, target._array)
        elif scalar_first:
            run = _partial(_call_binary, ufunc, scalar, only._array, target._array)
        else:
            run = _partial(_call_binary, ufunc, only._array, scalar, target._array)
        var = only._var
        const = () if var is out_var else (var,)
    autograd = _autograd or _find_autograd()
    recording = autograd is not None and autograd.is_recording()
    _get_engine().push_prepared(run, plan.ctx, const, (out_var,), label)
    if recording:
        is_train = autograd.is_training()
        autograd._record_op(plan.prop, plan.operator, list(inputs), [target], [], is_train)


def _debug_runner(
    operator: Any,
    plan: _Plan,
    label: str,
    is_train: bool,
    in_raw: list,
    out_raw: list,
    aux_raw: list,
) -> Callable[[Any], None]:
    writes = [req == _WRITE_TO for req in plan.reqs]
    out_names = list(plan.prop.list_outputs())

    def run(run_ctx: Any) -> None:
        op_ctx = OpContext(is_train, run_ctx, plan.resources, plan.xp)
        poisoned = poison_outputs(out_raw, writes, [*in_raw, *aux_raw])
        try:
            operator.forward(op_ctx, in_raw, plan.reqs, out_raw, aux_raw)
            check_written(label, out_raw, poisoned, out_names)
        except ValueError as exc:
            names = ", ".join(repr(arg) for arg in plan.arg_names)
            raise_read_only_write(
                exc,
                label,
                f"kernel wrote into a const input (one of {names}); inputs are read-only, "
                "compute into out_data or declare the array as an output / auxiliary state",
            )
            raise

    return run


def invoke_visible(op: str, inputs: list[NDArray], params: dict[str, Any], out: Any = None) -> Any:
    """Invoke and return what a user sees: ``out`` if given, else one NDArray or a list.

    The NDArray methods (``a + b``, ``a += 1``, ``a.sum()``) come through here:
    one dict lookup keyed by (op, params, input shapes and dtypes, context)
    finds the plan, skipping property parsing and shape inference.  A plan
    is current while no operator was registered since it was checked
    (``registry.generation``).
    """
    key, ctx = _signature(op, tuple(params.items()) if params else (), op, inputs, None)
    try:
        plan = _plans.get(key)
    except TypeError:  # an unhashable parameter value: the general path normalises it
        plan = None
    if plan is None or plan.generation != registry.generation:
        prop, prop_key = _get_prop(op, params)  # parses, and caches the plan under ``key``
        plan, outputs = _invoke_prop(prop, prop_key, inputs, out, None, None, None)
    else:
        direct = plan.direct
        if direct is not None and not _is_debug():  # the hot path, written out
            if out is None:
                nbytes = plan.out_nbytes[0]
                parked = _parked and _take_parked(ctx, nbytes)
                if parked:  # a dead block of this size and its var: the op writes after its ops
                    target = _alloc(plan.out_shapes[0], ctx, plan.out_types[0], nbytes, *parked)
                else:
                    target = _alloc(plan.out_shapes[0], ctx, plan.out_types[0], nbytes)
                _push_direct(plan, direct, inputs, target, plan.label)
                return target
            if (
                type(out) is NDArray
                and out.shape == plan.out_shapes[0]
                and out.dtype == plan.out_types[0]
                and out.context is ctx
            ):
                _push_direct(plan, direct, inputs, out, plan.label)
                return out
        outputs = _push(plan, inputs, _outputs(plan, out, ctx), (), None)
    if out is not None:
        return out
    if plan.num_visible == 1:
        return outputs[0]
    return outputs[: plan.num_visible]
