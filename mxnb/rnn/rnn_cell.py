"""MXNet 1.x's symbolic RNN cells: a cell writes one time step as symbols, ``unroll`` repeats it.

Idea (MXNet: ``python/mxnet/rnn/rnn_cell.py``): a recurrent network is a
graph of ordinary operators unrolled over time.  A cell knows one step,
``cell(inputs, states) -> (output, new_states)``; ``unroll(length, inputs)``
calls it ``length`` times, feeding each step's states to the next, and
returns the outputs as a list of symbols or merged into one
``(batch, time, ...)`` symbol.  The weights are variables shared by every
step (:class:`RNNParams` hands out one Variable per name), so the gradient
of a weight is the sum over the steps, and the memory planner sees the
whole unrolled graph.

Rule: node and variable names are MXNet's exactly (``lstm_t3_i2h``,
``lstm_i2h_weight``, ``lstm_begin_state_0``), and so is the gate order
(LSTM: input, forget, cell, output; GRU: reset, update, new), so a network
built here writes the JSON MXNet writes and loads MXNet's parameter files.
Begin states are ``_zeros`` of shape ``(0, num_hidden)``: the batch size is
left to shape inference (:mod:`mxnb.operator.partial`).

State kept by a cell:
    _prefix        prefix of its node and weight names
    _params        the RNNParams that owns its weight variables
    _counter       index of the last step built (reset by ``unroll``)
    _init_counter  index of the last begin state made
    _modified      True once a modifier cell (Zoneout, Residual) wraps it

Example::

    >>> import mxnb as mx
    >>> cell = mx.rnn.LSTMCell(8, prefix='lstm_')
    >>> outputs, states = cell.unroll(3, mx.sym.Variable('data'), merge_outputs=True)
    >>> outputs.infer_shape(data=(2, 3, 5))[1]
    [(2, 3, 8)]
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from .. import ndarray as nd
from .. import symbol
from ..base import GraphError, ParamError
from ..symbol import Symbol

__all__ = [
    "BaseRNNCell",
    "GRUCell",
    "LSTMCell",
    "RNNCell",
    "RNNParams",
    "normalize_sequence",
]


def normalize_sequence(
    length: int | None,
    inputs: Symbol | Sequence[Symbol],
    layout: str,
    merge: bool | None,
    in_layout: str | None = None,
) -> tuple[Symbol | list[Symbol], int]:
    """Turn a sequence into the form a cell wants; return it and the time axis of ``layout``.

    ``merge=False``: a list of per-step symbols (a merged symbol is split along
    time, dropping that axis).  ``merge=True``: one symbol with time at
    ``layout``'s ``'T'`` (a list is joined).  ``None`` keeps what was given.
    A merged symbol whose time axis (``in_layout``) differs is swapped.
    """
    if inputs is None:
        raise GraphError("unroll: inputs is None; create the input variables outside unroll")
    axis = layout.find("T")
    in_axis = in_layout.find("T") if in_layout is not None else axis
    if isinstance(inputs, Symbol):
        if merge is False:
            if len(inputs.list_outputs()) != 1:
                raise GraphError(
                    "unroll: inputs is a grouped symbol; pass list(inputs) or one symbol "
                    "that unroll splits along time"
                )
            inputs = list(symbol.split(inputs, axis=in_axis, num_outputs=length, squeeze_axis=1))
    else:
        inputs = list(inputs)
        if length is not None and len(inputs) != length:
            raise GraphError(f"unroll: {len(inputs)} inputs were given for length={length}")
        if merge is True:
            steps = [symbol.expand_dims(step, axis=axis) for step in inputs]
            inputs = symbol.Concat(*steps, dim=axis)
            in_axis = axis
    if isinstance(inputs, Symbol) and axis != in_axis:
        inputs = symbol.swapaxes(inputs, dim1=axis, dim2=in_axis)
    return inputs, axis


class RNNParams:
    """The weight variables of cells, created once per name and shared (MXNet: ``RNNParams``)."""

    def __init__(self, prefix: str = "") -> None:
        self._prefix = prefix
        self._params: dict[str, Symbol] = {}

    def get(self, name: str, **kwargs: Any) -> Symbol:
        """The variable ``prefix + name``, created with ``kwargs`` (``init=``...) the first time."""
        name = self._prefix + name
        if name not in self._params:
            self._params[name] = symbol.Variable(name, **kwargs)
        return self._params[name]


class BaseRNNCell:
    """A recurrent cell: ``cell(inputs, states)`` builds one step; ``unroll`` builds many."""

    def __init__(self, prefix: str = "", params: RNNParams | None = None) -> None:
        self._own_params = params is None
        self._prefix = prefix
        self._params = RNNParams(prefix) if params is None else params
        self._modified = False
        self.reset()

    def reset(self) -> None:
        """Start counting steps and begin states from 0 (before building another graph)."""
        self._init_counter = -1
        self._counter = -1

    def __call__(self, inputs: Symbol, states: list[Symbol]) -> tuple[Symbol, list[Symbol]]:
        """Build one step: ``(output, next_states)``."""
        raise NotImplementedError(f"{type(self).__name__} cannot be stepped; use unroll")

    @property
    def params(self) -> RNNParams:
        """The container of this cell's weight variables (shared from now on)."""
        self._own_params = False
        return self._params

    @property
    def state_info(self) -> list[dict[str, Any]]:
        """One dict per state: its ``shape`` (0: inferred) and ``__layout__``."""
        return []

    @property
    def state_shape(self) -> list[tuple]:
        """The shape of each state (0 where the batch size goes)."""
        return [info["shape"] for info in self.state_info]

    @property
    def _gate_names(self) -> Sequence[str]:
        return ()

    def begin_state(
        self, func: Callable[..., Symbol] = symbol.zeros, **kwargs: Any
    ) -> list[Symbol]:
        """Initial states: ``func(name='<prefix>begin_state_<i>', shape=..., **kwargs)`` each.

        ``func`` is ``mx.sym.zeros`` (default), ``mx.sym.Variable`` to feed the
        states as inputs, or any symbol-making function taking those arguments.
        """
        if self._modified:
            raise GraphError(
                f"{type(self).__name__} '{self._prefix}' is wrapped by a modifier cell "
                "(ZoneoutCell, ResidualCell); call the modifier cell instead"
            )
        states = []
        for info in self.state_info:
            self._init_counter += 1
            kwargs.update(info or {})
            name = f"{self._prefix}begin_state_{self._init_counter}"
            states.append(func(name=name, **kwargs))
        return states

    def unpack_weights(self, args: dict[str, Any]) -> dict[str, Any]:
        """Split the fused ``i2h`` / ``h2h`` weights and biases into one array per gate."""
        args = dict(args)
        if not self._gate_names:
            return args
        hidden = self._num_hidden  # type: ignore[attr-defined]
        for group in ("i2h", "h2h"):
            for kind in ("weight", "bias"):
                whole = _numpy(args.pop(f"{self._prefix}{group}_{kind}"))
                for index, gate in enumerate(self._gate_names):
                    part = whole[index * hidden : (index + 1) * hidden]
                    args[f"{self._prefix}{group}{gate}_{kind}"] = nd.array(part, dtype=part.dtype)
        return args

    def pack_weights(self, args: dict[str, Any]) -> dict[str, Any]:
        """Join per-gate weights and biases back into ``i2h`` / ``h2h`` (undoes ``unpack_weights``)."""
        args = dict(args)
        if not self._gate_names:
            return args
        for group in ("i2h", "h2h"):
            for kind in ("weight", "bias"):
                parts = [
                    _numpy(args.pop(f"{self._prefix}{group}{gate}_{kind}"))
                    for gate in self._gate_names
                ]
                whole = np.concatenate(parts)
                args[f"{self._prefix}{group}_{kind}"] = nd.array(whole, dtype=whole.dtype)
        return args

    def unroll(
        self,
        length: int,
        inputs: Symbol | Sequence[Symbol],
        begin_state: list[Symbol] | None = None,
        layout: str = "NTC",
        merge_outputs: bool | None = None,
    ) -> tuple[Symbol | list[Symbol], list[Symbol]]:
        """Build ``length`` steps; return ``(outputs, final_states)``.

        ``inputs`` is one symbol laid out as ``layout`` (``'NTC'`` or ``'TNC'``)
        or a list of ``length`` per-step symbols.  ``merge_outputs=True``
        returns one symbol in ``layout``, False a list, None whichever is
        natural for the cell.
        """
        self.reset()
        steps, _ = normalize_sequence(length, inputs, layout, False)
        states = self.begin_state() if begin_state is None else begin_state
        outputs = []
        for step in steps:
            output, states = self(step, states)
            outputs.append(output)
        merged, _ = normalize_sequence(length, outputs, layout, merge_outputs)
        return merged, states

    def _get_activation(self, inputs: Symbol, activation: Any, **kwargs: Any) -> Symbol:
        """``Activation(act_type=activation)`` for a string, else ``activation(inputs, **kwargs)``."""
        if isinstance(activation, str):
            return symbol.Activation(inputs, act_type=activation, **kwargs)
        return activation(inputs, **kwargs)


def _numpy(value: Any) -> np.ndarray:
    return value.asnumpy() if hasattr(value, "asnumpy") else np.asarray(value)


def _hidden_state(num_hidden: int) -> dict[str, Any]:
    return {"shape": (0, num_hidden), "__layout__": "NC"}


class _DenseCell(BaseRNNCell):
    """A cell with MXNet's four weights ``i2h_weight``, ``i2h_bias``, ``h2h_weight``, ``h2h_bias``."""

    def __init__(
        self, num_hidden: int, prefix: str, params: RNNParams | None, i2h_bias_init: Any = None
    ) -> None:
        super().__init__(prefix=prefix, params=params)
        self._num_hidden = num_hidden
        self._iW = self.params.get("i2h_weight")
        self._hW = self.params.get("h2h_weight")
        if i2h_bias_init is None:
            self._iB = self.params.get("i2h_bias")
        else:
            self._iB = self.params.get("i2h_bias", init=i2h_bias_init)
        self._hB = self.params.get("h2h_bias")

    @property
    def state_info(self) -> list[dict[str, Any]]:
        """One state, ``h``: ``(0, num_hidden)``."""
        return [_hidden_state(self._num_hidden)]


class RNNCell(_DenseCell):
    """Elman RNN: ``h' = activation(W x + b + R h + c)`` (MXNet: ``RNNCell``)."""

    def __init__(
        self,
        num_hidden: int,
        activation: Any = "tanh",
        prefix: str = "rnn_",
        params: RNNParams | None = None,
    ) -> None:
        super().__init__(num_hidden, prefix, params)
        self._activation = activation

    @property
    def _gate_names(self) -> Sequence[str]:
        return ("",)

    def __call__(self, inputs: Symbol, states: list[Symbol]) -> tuple[Symbol, list[Symbol]]:
        """One step; the output is the new state."""
        self._counter += 1
        name = f"{self._prefix}t{self._counter}_"
        i2h = symbol.FullyConnected(
            data=inputs, weight=self._iW, bias=self._iB, num_hidden=self._num_hidden,
            name=f"{name}i2h",
        )  # fmt: skip
        h2h = symbol.FullyConnected(
            data=states[0], weight=self._hW, bias=self._hB, num_hidden=self._num_hidden,
            name=f"{name}h2h",
        )  # fmt: skip
        output = self._get_activation(i2h + h2h, self._activation, name=f"{name}out")
        return output, [output]


class LSTMCell(_DenseCell):
    """LSTM with gates in MXNet's order: input, forget, cell (tanh), output.

    States are ``[h, c]``.  ``forget_bias`` is where the forget gate's part of
    ``i2h_bias`` starts: the variable carries MXNet's ``LSTMBias`` initializer
    (``__init__`` attribute), which an initializer reads.
    """

    def __init__(
        self,
        num_hidden: int,
        prefix: str = "lstm_",
        params: RNNParams | None = None,
        forget_bias: float = 1.0,
    ) -> None:
        lstm_bias = json.dumps(["lstmbias", {"forget_bias": float(forget_bias)}])
        super().__init__(num_hidden, prefix, params, i2h_bias_init=lstm_bias)

    @property
    def state_info(self) -> list[dict[str, Any]]:
        """Two states, ``h`` and ``c``: ``(0, num_hidden)`` each."""
        return [_hidden_state(self._num_hidden), _hidden_state(self._num_hidden)]

    @property
    def _gate_names(self) -> Sequence[str]:
        return ("_i", "_f", "_c", "_o")

    def __call__(self, inputs: Symbol, states: list[Symbol]) -> tuple[Symbol, list[Symbol]]:
        """One step: ``c' = f*c + i*g``, ``h' = o*tanh(c')``."""
        self._counter += 1
        name = f"{self._prefix}t{self._counter}_"
        hidden = self._num_hidden
        i2h = symbol.FullyConnected(
            data=inputs, weight=self._iW, bias=self._iB, num_hidden=hidden * 4, name=f"{name}i2h"
        )
        h2h = symbol.FullyConnected(
            data=states[0], weight=self._hW, bias=self._hB, num_hidden=hidden * 4, name=f"{name}h2h"
        )
        gates = symbol.SliceChannel(i2h + h2h, num_outputs=4, name=f"{name}slice")
        in_gate = symbol.Activation(gates[0], act_type="sigmoid", name=f"{name}i")
        forget_gate = symbol.Activation(gates[1], act_type="sigmoid", name=f"{name}f")
        in_transform = symbol.Activation(gates[2], act_type="tanh", name=f"{name}c")
        out_gate = symbol.Activation(gates[3], act_type="sigmoid", name=f"{name}o")
        next_c = symbol._plus(forget_gate * states[1], in_gate * in_transform, name=f"{name}state")
        next_h = symbol._mul(
            out_gate, symbol.Activation(next_c, act_type="tanh"), name=f"{name}out"
        )
        return next_h, [next_h, next_c]


class GRUCell(_DenseCell):
    """GRU as cuDNN computes it (MXNet: ``GRUCell``): gates reset, update, new.

    ``h' = (1 - z) * tanh(W_n x + b_n + r * (R_n h + c_n)) + z * h``: the
    reset gate scales the recurrent part *with* its bias.
    """

    def __init__(
        self, num_hidden: int, prefix: str = "gru_", params: RNNParams | None = None
    ) -> None:
        super().__init__(num_hidden, prefix, params)

    @property
    def _gate_names(self) -> Sequence[str]:
        return ("_r", "_z", "_o")

    def __call__(self, inputs: Symbol, states: list[Symbol]) -> tuple[Symbol, list[Symbol]]:
        """One step."""
        self._counter += 1
        name = f"{self._prefix}t{self._counter}_"
        hidden = self._num_hidden
        previous = states[0]
        i2h = symbol.FullyConnected(
            data=inputs, weight=self._iW, bias=self._iB, num_hidden=hidden * 3, name=f"{name}_i2h"
        )
        h2h = symbol.FullyConnected(
            data=previous, weight=self._hW, bias=self._hB, num_hidden=hidden * 3, name=f"{name}_h2h"
        )
        i2h_r, i2h_z, i2h_n = symbol.SliceChannel(i2h, num_outputs=3, name=f"{name}_i2h_slice")
        h2h_r, h2h_z, h2h_n = symbol.SliceChannel(h2h, num_outputs=3, name=f"{name}_h2h_slice")
        reset = symbol.Activation(i2h_r + h2h_r, act_type="sigmoid", name=f"{name}_r_act")
        update = symbol.Activation(i2h_z + h2h_z, act_type="sigmoid", name=f"{name}_z_act")
        candidate = symbol.Activation(i2h_n + reset * h2h_n, act_type="tanh", name=f"{name}_h_act")
        next_h = symbol._plus((1.0 - update) * candidate, update * previous, name=f"{name}out")
        return next_h, [next_h]


def check_gate_names(mode: str) -> Sequence[str]:
    """The gate name suffixes of an RNN ``mode`` (``'lstm'``: ``_i _f _c _o``)."""
    table = {
        "rnn_relu": ("",),
        "rnn_tanh": ("",),
        "lstm": ("_i", "_f", "_c", "_o"),
        "gru": ("_r", "_z", "_o"),
    }
    if mode not in table:
        raise ParamError(f"mode must be one of {', '.join(table)}; got {mode!r}")
    return table[mode]
