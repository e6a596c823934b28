"""FusedRNNCell: a whole stacked (bidirectional) RNN as one ``RNN`` operator.

Idea (MXNet: ``FusedRNNCell``): instead of one small graph per time step,
``unroll`` emits a single ``RNN`` node (:mod:`mxnb.operator.ops.rnn`) whose
weights are one packed ``<prefix>parameters`` variable.  ``unpack_weights``
/ ``pack_weights`` convert between that vector and the per-gate arrays the
step-by-step cells name (``lstm_l0_i2h_i_weight`` ...), and ``unfuse()``
returns the equivalent :class:`SequentialRNNCell` of ordinary cells, so the
two compute the same thing with the same (converted) parameters.

Rule: the fused op wants time first (``TNC``); an ``NTC`` input is swapped
in and out around it.  Begin states have shape ``(L*D, 0, H)`` (batch
inferred); ``get_next_state=True`` also returns the final states.

State kept: ``_num_hidden``, ``_num_layers``, ``_mode``,
``_bidirectional``, ``_dropout``, ``_get_next_state``, ``_directions``
(``['l']`` or ``['l', 'r']``) and ``_parameter`` (the packed variable).

Example::

    >>> import mxnb as mx
    >>> cell = mx.rnn.FusedRNNCell(4, num_layers=2, mode='gru', prefix='gru_')
    >>> out, _ = cell.unroll(3, mx.sym.Variable('data'), layout='TNC', merge_outputs=True)
    >>> out.infer_shape(data=(3, 2, 5))[1]
    [(3, 2, 4)]
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import numpy as np

from .. import ndarray as nd
from .. import symbol
from ..base import GraphError, ParamError
from ..operator.ops.rnn import GATES, packed_size
from ..symbol import Symbol
from .combinators import BidirectionalCell, DropoutCell, SequentialRNNCell
from .rnn_cell import (
    BaseRNNCell,
    GRUCell,
    LSTMCell,
    RNNCell,
    RNNParams,
    check_gate_names,
    normalize_sequence,
)

__all__ = ["FusedRNNCell"]


class FusedRNNCell(BaseRNNCell):
    """A multi-layer RNN / LSTM / GRU computed by one ``RNN`` operator."""

    def __init__(
        self,
        num_hidden: int,
        num_layers: int = 1,
        mode: str = "lstm",
        bidirectional: bool = False,
        dropout: float = 0.0,
        get_next_state: bool = False,
        forget_bias: float = 1.0,
        prefix: str | None = None,
        params: RNNParams | None = None,
    ) -> None:
        check_gate_names(mode)
        super().__init__(prefix=f"{mode}_" if prefix is None else prefix, params=params)
        self._num_hidden = num_hidden
        self._num_layers = num_layers
        self._mode = mode
        self._bidirectional = bidirectional
        self._dropout = dropout
        self._get_next_state = get_next_state
        self._directions = ["l", "r"] if bidirectional else ["l"]
        initializer = json.dumps(
            [
                "fusedrnn",
                {
                    "init": None,
                    "num_hidden": num_hidden,
                    "num_layers": num_layers,
                    "mode": mode,
                    "bidirectional": bidirectional,
                    "forget_bias": forget_bias,
                },
            ]
        )
        self._parameter = self.params.get("parameters", init=initializer)

    @property
    def state_info(self) -> list[dict[str, Any]]:
        """``h`` (and ``c`` for an LSTM): ``(num_layers * directions, 0, num_hidden)``."""
        shape = (len(self._directions) * self._num_layers, 0, self._num_hidden)
        count = 2 if self._mode == "lstm" else 1
        return [{"shape": shape, "__layout__": "LNC"} for _ in range(count)]

    @property
    def _gate_names(self) -> Sequence[str]:
        return check_gate_names(self._mode)

    def _slice_names(self, input_size: int) -> list[tuple[str, tuple]]:
        """``(name, shape)`` of every per-gate array, in the packed vector's order."""
        hidden = self._num_hidden
        directions = len(self._directions)
        names: list[tuple[str, tuple]] = []
        for layer in range(self._num_layers):
            width = input_size if layer == 0 else directions * hidden
            for direction in self._directions:
                for group, columns in (("i2h", width), ("h2h", hidden)):
                    for gate in self._gate_names:
                        key = f"{self._prefix}{direction}{layer}_{group}{gate}_weight"
                        names.append((key, (hidden, columns)))
        for layer in range(self._num_layers):
            for direction in self._directions:
                for group in ("i2h", "h2h"):
                    for gate in self._gate_names:
                        key = f"{self._prefix}{direction}{layer}_{group}{gate}_bias"
                        names.append((key, (hidden,)))
        return names

    def _input_size(self, total: int) -> int:
        rest = total - packed_size(
            self._mode, self._num_layers, 0, self._num_hidden, len(self._directions)
        )
        return rest // (len(self._directions) * GATES[self._mode] * self._num_hidden)

    def unpack_weights(self, args: dict[str, Any]) -> dict[str, Any]:
        """Split ``<prefix>parameters`` into the per-layer, per-direction, per-gate arrays."""
        args = dict(args)
        flat = args.pop(self._parameter.name)
        values = flat.asnumpy() if hasattr(flat, "asnumpy") else np.asarray(flat)
        position = 0
        for name, shape in self._slice_names(self._input_size(values.size)):
            size = int(np.prod(shape))
            part = values[position : position + size].reshape(shape)
            args[name] = nd.array(part, dtype=part.dtype)
            position += size
        if position != values.size:
            raise ParamError(
                f"FusedRNNCell '{self._prefix}': parameters has {values.size} values, which no "
                f"input size fits; expected {position}"
            )
        return args

    def pack_weights(self, args: dict[str, Any]) -> dict[str, Any]:
        """Join the per-gate arrays into ``<prefix>parameters`` (undoes ``unpack_weights``)."""
        args = dict(args)
        first = f"{self._prefix}l0_i2h{self._gate_names[0]}_weight"
        if first not in args:
            raise ParamError(f"FusedRNNCell '{self._prefix}': {first!r} is missing from args")
        input_size = int(args[first].shape[1])
        parts = []
        for name, _ in self._slice_names(input_size):
            value = args.pop(name)
            parts.append(
                (value.asnumpy() if hasattr(value, "asnumpy") else np.asarray(value)).ravel()
            )
        flat = np.concatenate(parts)
        args[self._parameter.name] = nd.array(flat, dtype=flat.dtype)
        return args

    def __call__(self, inputs: Symbol, states: list[Symbol]) -> tuple[Symbol, list[Symbol]]:
        """A fused cell cannot be stepped."""
        raise GraphError("FusedRNNCell cannot be stepped; use unroll (or unfuse() first)")

    def unroll(
        self,
        length: int,
        inputs: Symbol | Sequence[Symbol],
        begin_state: list[Symbol] | None = None,
        layout: str = "NTC",
        merge_outputs: bool | None = None,
    ) -> tuple[Symbol | list[Symbol], list[Symbol]]:
        """One ``RNN`` node over the whole sequence (time first inside)."""
        self.reset()
        merged, axis = normalize_sequence(length, inputs, layout, True)
        if axis not in (0, 1):
            raise GraphError(f"FusedRNNCell: layout {layout!r} is not supported; use TNC or NTC")
        if axis == 1:
            merged = symbol.swapaxes(merged, dim1=0, dim2=1)
        states = self.begin_state() if begin_state is None else begin_state
        named = {"state": states[0]}
        if self._mode == "lstm":
            named["state_cell"] = states[1]
        rnn = symbol.RNN(
            data=merged, parameters=self._parameter, state_size=self._num_hidden,
            num_layers=self._num_layers, bidirectional=self._bidirectional, p=self._dropout,
            state_outputs=self._get_next_state, mode=self._mode, name=f"{self._prefix}rnn",
            **named,
        )  # fmt: skip
        if self._get_next_state:
            outputs = rnn[0]
            next_states = [rnn[index] for index in range(1, len(rnn.list_outputs()))]
        else:
            outputs, next_states = rnn, []
        if axis == 1:
            outputs = symbol.swapaxes(outputs, dim1=0, dim2=1)
        outputs, _ = normalize_sequence(length, outputs, layout, merge_outputs)
        return outputs, next_states

    def unfuse(self) -> SequentialRNNCell:
        """The same network as a stack of step-by-step cells (names fit ``unpack_weights``)."""
        hidden = self._num_hidden

        def make(prefix: str) -> BaseRNNCell:
            if self._mode == "lstm":
                return LSTMCell(hidden, prefix=prefix)
            if self._mode == "gru":
                return GRUCell(hidden, prefix=prefix)
            return RNNCell(hidden, activation=self._mode[len("rnn_") :], prefix=prefix)

        stack = SequentialRNNCell()
        for layer in range(self._num_layers):
            if self._bidirectional:
                stack.add(
                    BidirectionalCell(
                        make(f"{self._prefix}l{layer}_"),
                        make(f"{self._prefix}r{layer}_"),
                        output_prefix=f"{self._prefix}bi_l{layer}_",
                    )
                )
            else:
                stack.add(make(f"{self._prefix}l{layer}_"))
            if self._dropout > 0 and layer != self._num_layers - 1:
                stack.add(DropoutCell(self._dropout, prefix=f"{self._prefix}_dropout{layer}_"))
        return stack
