"""Cells made of cells: stacks, two directions, dropout between layers, zoneout and residuals.

Idea (MXNet: the same classes in ``python/mxnet/rnn/rnn_cell.py``): a
:class:`SequentialRNNCell` feeds each cell's output to the next and
concatenates their states; a :class:`BidirectionalCell` runs one cell
forward and one backward over time and joins their outputs feature-wise; a
*modifier* wraps one cell and changes what it returns: :class:`ZoneoutCell`
keeps some of the previous output and states (Krueger et al. 2016),
:class:`ResidualCell` adds the input to the output.  :class:`DropoutCell`
has no state and drops inputs.

Rule: states stay one flat list in order of the cells, so
``begin_state()`` of a stack is its cells' begin states, one after another,
and ``unroll`` hands each cell its slice.

State kept: ``_cells`` (the children, in order); a modifier's
``base_cell`` (marked ``_modified`` so it is no longer called directly).

Example::

    >>> import mxnb as mx
    >>> stack = mx.rnn.SequentialRNNCell()
    >>> stack.add(mx.rnn.LSTMCell(4, prefix='l0_'))
    >>> stack.add(mx.rnn.GRUCell(3, prefix='l1_'))
    >>> outputs, states = stack.unroll(2, mx.sym.Variable('data'), merge_outputs=True)
    >>> outputs.infer_shape(data=(5, 2, 6))[1], len(states)
    ([(5, 2, 3)], 3)
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from .. import symbol
from ..base import GraphError, ParamError
from ..symbol import Symbol
from .rnn_cell import BaseRNNCell, RNNParams, normalize_sequence

__all__ = [
    "BidirectionalCell",
    "DropoutCell",
    "ModifierCell",
    "ResidualCell",
    "SequentialRNNCell",
    "ZoneoutCell",
]


class _CellGroup(BaseRNNCell):
    """Shared parts of cells that hold children: states, begin states and weights are theirs."""

    _cells: list[BaseRNNCell]

    def _adopt(self, cell: BaseRNNCell, overriding: bool) -> None:
        if overriding:
            if not cell._own_params:
                raise GraphError(
                    f"{type(self).__name__}: give params either to it or to its cells, not both"
                )
            cell.params._params.update(self.params._params)
        self.params._params.update(cell.params._params)

    @property
    def state_info(self) -> list[dict[str, Any]]:
        """The children's states, one after another."""
        return [info for cell in self._cells for info in cell.state_info]

    def begin_state(self, **kwargs: Any) -> list[Symbol]:  # type: ignore[override]
        """The children's begin states, one after another."""
        if self._modified:
            raise GraphError(f"{type(self).__name__} is wrapped by a modifier cell; call that one")
        return [state for cell in self._cells for state in cell.begin_state(**kwargs)]

    def unpack_weights(self, args: dict[str, Any]) -> dict[str, Any]:
        """Each child unpacks its own weights."""
        for cell in self._cells:
            args = cell.unpack_weights(args)
        return args

    def pack_weights(self, args: dict[str, Any]) -> dict[str, Any]:
        """Each child packs its own weights."""
        for cell in self._cells:
            args = cell.pack_weights(args)
        return args


class SequentialRNNCell(_CellGroup):
    """A stack of cells: each one's output is the next one's input."""

    def __init__(self, params: RNNParams | None = None) -> None:
        super().__init__(prefix="", params=params)
        self._override_cell_params = params is not None
        self._cells = []

    def add(self, cell: BaseRNNCell) -> None:
        """Append a cell on top of the stack."""
        self._cells.append(cell)
        self._adopt(cell, self._override_cell_params)

    def __call__(self, inputs: Symbol, states: list[Symbol]) -> tuple[Symbol, list[Symbol]]:
        """One step through every cell."""
        self._counter += 1
        next_states: list[Symbol] = []
        position = 0
        for cell in self._cells:
            if isinstance(cell, BidirectionalCell):
                raise GraphError("a stack with a BidirectionalCell cannot be stepped; use unroll")
            count = len(cell.state_info)
            inputs, cell_states = cell(inputs, states[position : position + count])
            position += count
            next_states.extend(cell_states)
        return inputs, next_states

    def unroll(
        self,
        length: int,
        inputs: Symbol | Sequence[Symbol],
        begin_state: list[Symbol] | None = None,
        layout: str = "NTC",
        merge_outputs: bool | None = None,
    ) -> tuple[Symbol | list[Symbol], list[Symbol]]:
        """Unroll each cell over the whole sequence in turn (a fused cell stays fused)."""
        self.reset()
        states = self.begin_state() if begin_state is None else begin_state
        position = 0
        next_states: list[Symbol] = []
        last = len(self._cells) - 1
        for index, cell in enumerate(self._cells):
            count = len(cell.state_info)
            inputs, cell_states = cell.unroll(
                length,
                inputs=inputs,
                begin_state=states[position : position + count],
                layout=layout,
                merge_outputs=merge_outputs if index == last else None,
            )
            position += count
            next_states.extend(cell_states)
        return inputs, next_states


class DropoutCell(BaseRNNCell):
    """Dropout on the inputs, no state (between the layers of a stack)."""

    def __init__(self, dropout: float, prefix: str = "dropout_", params: RNNParams | None = None):
        super().__init__(prefix, params)
        if not isinstance(dropout, (int, float)):
            raise ParamError(f"DropoutCell: dropout must be a number, got {dropout!r}")
        self.dropout = dropout

    def __call__(self, inputs: Symbol, states: list[Symbol]) -> tuple[Symbol, list[Symbol]]:
        """``Dropout(inputs, p=dropout)`` (nothing when dropout is 0)."""
        if self.dropout > 0:
            inputs = symbol.Dropout(data=inputs, p=self.dropout)
        return inputs, states

    def unroll(self, length, inputs, begin_state=None, layout="NTC", merge_outputs=None):
        """A merged sequence is dropped out in one op; a list step by step."""
        self.reset()
        inputs, _ = normalize_sequence(length, inputs, layout, merge_outputs)
        if isinstance(inputs, Symbol):
            return self(inputs, [])
        return super().unroll(
            length, inputs, begin_state=begin_state, layout=layout, merge_outputs=merge_outputs
        )


class ModifierCell(BaseRNNCell):
    """A cell wrapping another one and changing what it returns; call it, not the base cell."""

    def __init__(self, base_cell: BaseRNNCell) -> None:
        super().__init__()
        base_cell._modified = True
        self.base_cell = base_cell

    @property
    def params(self) -> RNNParams:
        """The base cell's weights."""
        self._own_params = False
        return self.base_cell.params

    @property
    def state_info(self) -> list[dict[str, Any]]:
        """The base cell's states."""
        return self.base_cell.state_info

    def begin_state(self, init_sym: Callable[..., Symbol] = symbol.zeros, **kwargs: Any):  # type: ignore[override]
        """The base cell's begin states."""
        if self._modified:
            raise GraphError(f"{type(self).__name__} is wrapped by a modifier cell; call that one")
        self.base_cell._modified = False
        try:
            return self.base_cell.begin_state(init_sym, **kwargs)
        finally:
            self.base_cell._modified = True

    def unpack_weights(self, args: dict[str, Any]) -> dict[str, Any]:
        """The base cell's."""
        return self.base_cell.unpack_weights(args)

    def pack_weights(self, args: dict[str, Any]) -> dict[str, Any]:
        """The base cell's."""
        return self.base_cell.pack_weights(args)


class ZoneoutCell(ModifierCell):
    """Zoneout: in training, each unit keeps its previous output / state with some probability.

    The mask is ``Dropout(ones_like(x), p)``: nonzero where the new value is
    taken.  The first step's "previous output" is ``zeros((0, 0))``, shaped by
    inference.  At inference Dropout passes everything, so the cell is its
    base cell.
    """

    def __init__(
        self, base_cell: BaseRNNCell, zoneout_outputs: float = 0.0, zoneout_states: float = 0.0
    ) -> None:
        from .fused import FusedRNNCell

        if isinstance(base_cell, (FusedRNNCell, BidirectionalCell)):
            raise GraphError(
                f"ZoneoutCell cannot wrap a {type(base_cell).__name__} (it cannot be stepped); "
                "wrap the cells underneath it (a FusedRNNCell: unfuse() first)"
            )
        super().__init__(base_cell)
        self.zoneout_outputs = zoneout_outputs
        self.zoneout_states = zoneout_states
        self.prev_output: Symbol | None = None

    def reset(self) -> None:
        """Also forget the previous output."""
        super().reset()
        self.prev_output = None

    def __call__(self, inputs: Symbol, states: list[Symbol]) -> tuple[Symbol, list[Symbol]]:
        """One step of the base cell, then keep old values where the masks drop."""
        output, next_states = self.base_cell(inputs, states)

        def keep_new(p: float, new: Symbol, old: Symbol) -> Symbol:
            mask = symbol.Dropout(symbol.ones_like(new), p=p)
            return symbol.where(mask, new, old)

        previous = self.prev_output if self.prev_output is not None else symbol.zeros((0, 0))
        if self.zoneout_outputs != 0.0:
            output = keep_new(self.zoneout_outputs, output, previous)
        if self.zoneout_states != 0.0:
            next_states = [
                keep_new(self.zoneout_states, new, old) for new, old in zip(next_states, states)
            ]
        self.prev_output = output
        return output, next_states


class ResidualCell(ModifierCell):
    """The base cell's output plus its input (Wu et al. 2016, GNMT)."""

    def __call__(self, inputs: Symbol, states: list[Symbol]) -> tuple[Symbol, list[Symbol]]:
        """One step: ``output + inputs``."""
        output, states = self.base_cell(inputs, states)
        return _plus_residual(output, inputs), states

    def unroll(self, length, inputs, begin_state=None, layout="NTC", merge_outputs=None):
        """Unroll the base cell, then add the inputs to the outputs (merged or step by step)."""
        self.reset()
        self.base_cell._modified = False
        try:
            outputs, states = self.base_cell.unroll(
                length, inputs=inputs, begin_state=begin_state, layout=layout,
                merge_outputs=merge_outputs,
            )  # fmt: skip
        finally:
            self.base_cell._modified = True
        if merge_outputs is None:
            merge_outputs = isinstance(outputs, Symbol)
        inputs, _ = normalize_sequence(length, inputs, layout, merge_outputs)
        if merge_outputs:
            return _plus_residual(outputs, inputs), states
        return [_plus_residual(out, step) for out, step in zip(outputs, inputs)], states


def _plus_residual(output: Symbol, inputs: Symbol) -> Symbol:
    return symbol.elemwise_add(output, inputs, name=f"{output.name}_plus_residual")


class BidirectionalCell(_CellGroup):
    """One cell reads the sequence forward, another backward; outputs join feature-wise.

    The backward cell's outputs are put back in time order before the join,
    so output ``t`` sees the whole sequence.  Begin states are the forward
    cell's, then the backward cell's; ``unroll`` returns the final states
    nested, ``[forward_states, backward_states]``, as MXNet does.
    """

    def __init__(
        self,
        l_cell: BaseRNNCell,
        r_cell: BaseRNNCell,
        params: RNNParams | None = None,
        output_prefix: str = "bi_",
    ) -> None:
        super().__init__("", params=params)
        self._output_prefix = output_prefix
        self._override_cell_params = params is not None
        for cell in (l_cell, r_cell):
            self._adopt(cell, self._override_cell_params)
        self._cells = [l_cell, r_cell]

    def unroll(
        self,
        length: int,
        inputs: Symbol | Sequence[Symbol],
        begin_state: list[Symbol] | None = None,
        layout: str = "NTC",
        merge_outputs: bool | None = None,
    ) -> tuple[Symbol | list[Symbol], list[Symbol]]:
        """Unroll both cells; join output ``t`` of the forward and of the backward pass."""
        self.reset()
        steps, _ = normalize_sequence(length, inputs, layout, False)
        states = self.begin_state() if begin_state is None else begin_state
        l_cell, r_cell = self._cells
        split = len(l_cell.state_info)
        l_outputs, l_states = l_cell.unroll(
            length, inputs=steps, begin_state=states[:split], layout=layout,
            merge_outputs=merge_outputs,
        )  # fmt: skip
        r_outputs, r_states = r_cell.unroll(
            length, inputs=list(reversed(steps)), begin_state=states[split:], layout=layout,
            merge_outputs=merge_outputs,
        )  # fmt: skip
        if merge_outputs is None:
            merge_outputs = isinstance(l_outputs, Symbol) and isinstance(r_outputs, Symbol)
        if merge_outputs:
            l_merged, _ = normalize_sequence(length, l_outputs, layout, True)
            r_list, _ = normalize_sequence(length, r_outputs, layout, False)
            r_merged, _ = normalize_sequence(length, list(reversed(r_list)), layout, True)
            joined = symbol.Concat(l_merged, r_merged, dim=2, name=f"{self._output_prefix}out")
            return joined, [l_states, r_states]  # nested, as MXNet returns them
        l_list, _ = normalize_sequence(length, l_outputs, layout, False)
        r_list, _ = normalize_sequence(length, r_outputs, layout, False)
        outputs = [
            symbol.Concat(left, right, dim=1, name=f"{self._output_prefix}t{index}")
            for index, (left, right) in enumerate(zip(l_list, reversed(r_list)))
        ]
        return outputs, [l_states, r_states]
