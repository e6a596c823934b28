"""``mx.rnn``: MXNet 1.x's symbolic recurrent cells, unrolled into ordinary graphs.

Step-by-step cells (:mod:`.rnn_cell`): :class:`RNNCell`, :class:`LSTMCell`,
:class:`GRUCell`.  Cells of cells (:mod:`.combinators`):
:class:`SequentialRNNCell`, :class:`BidirectionalCell`, :class:`DropoutCell`,
and the modifiers :class:`ZoneoutCell`, :class:`ResidualCell`.  One fused
operator for a whole stack (:mod:`.fused`): :class:`FusedRNNCell`.  Text
to token ids and batches bucketed by length (:mod:`.io`): :func:`encode_sentences`,
:class:`BucketSentenceIter`.

Every cell's ``unroll(length, inputs, begin_state, layout, merge_outputs)``
returns ``(outputs, states)``; ``begin_state()`` gives ``_zeros`` states
whose batch size shape inference fills in.

Example::

    >>> import mxnb as mx
    >>> cell = mx.rnn.GRUCell(4, prefix='gru_')
    >>> outputs, states = cell.unroll(2, mx.sym.Variable('data'), merge_outputs=False)
    >>> [o.name for o in outputs]
    ['gru_t0_out', 'gru_t1_out']
"""

from .combinators import (
    BidirectionalCell,
    DropoutCell,
    ModifierCell,
    ResidualCell,
    SequentialRNNCell,
    ZoneoutCell,
)
from .fused import FusedRNNCell
from .io import BucketSentenceIter, encode_sentences
from .rnn_cell import BaseRNNCell, GRUCell, LSTMCell, RNNCell, RNNParams

__all__ = [
    "BaseRNNCell",
    "BidirectionalCell",
    "BucketSentenceIter",
    "DropoutCell",
    "FusedRNNCell",
    "GRUCell",
    "LSTMCell",
    "ModifierCell",
    "RNNCell",
    "RNNParams",
    "ResidualCell",
    "SequentialRNNCell",
    "ZoneoutCell",
    "encode_sentences",
]
