"""The operator library: importing this package registers every built-in operator.

One family per module (MXNet: src/operator/):

* :mod:`.elemwise` (unary, Cast, ElementWiseSum), :mod:`.binary` (same shape,
  broadcast, comparison), :mod:`.scalar` (an array and a scalar);
* :mod:`.reduce` (sum, mean, max, norm, argmax, ...);
* :mod:`.matrix` (dot, batch_dot, FullyConnected), :mod:`.views` (Reshape,
  Flatten, transpose, broadcast_to, ...);
* :mod:`.join` (Concat, stack, SliceChannel), :mod:`.slicing` (slice, tile,
  repeat, Pad), :mod:`.indexing` (Embedding, take, one_hot, topk, where, clip);
* :mod:`.conv` (Convolution), :mod:`.deconv` (Deconvolution), :mod:`.pool`
  (Pooling), :mod:`.upsampling` (UpSampling, LRN);
* :mod:`.activation` (Activation, LeakyReLU), :mod:`.norm` (BatchNorm,
  Dropout), :mod:`.norm_more` (InstanceNorm, L2Normalization, SyncBatchNorm);
* :mod:`.softmax` (softmax, log_softmax, SoftmaxOutput and the loss layers);
* :mod:`.linalg` (gelqf), :mod:`.optimizer_ops` (sgd_update, adam_update,
  ...: fused optimizer steps), :mod:`.init` (_zeros, _ones, _full, _arange,
  zeros_like, ...), :mod:`.sampling` and :mod:`.samplers` (the random
  samplers), :mod:`.rnn` (the fused RNN operator).

Each module registers its properties with :func:`mxnb.operator.register`, so after
``import mxnb`` every op is reachable by name through the registry, and
through ``mx.nd.<name>`` / ``mx.sym.<name>``.

Kernels are written once against the array module of the context
(``ctx.xp``: numpy on the CPU, cupy on a GPU).  The cupy path has not run on
GPU hardware.  Large BatchNorm, Convolution and Pooling calls split their
work over a small shared thread pool (``MXNB_OP_THREADS``, default: the CPU
count), as MXNet's OpenMP loops do, and elementwise formulas run in blocks
(:mod:`mxnb.operator.split`); :mod:`.eager` runs any op without engine or NDArray.

Example::

    >>> from mxnb.operator import registry
    >>> import mxnb.operator.ops
    >>> registry.get('split').name
    'SliceChannel'
"""

from . import activation, conv, deconv, elemwise, indexing, init, join, matrix, norm  # noqa: I001
from . import binary, scalar  # the binary and scalar elementwise ops, on elemwise's scheme
from . import slicing, upsampling, views  # slice/tile/Pad; UpSampling and LRN; the shape ops
from . import optimizer_ops, pool, reduce, rnn, sampling, softmax
from . import compat, legacy  # after the families they build on
from . import layers_compat, samplers, stats_compat, tensor_compat  # noqa: F401  (likewise)
from . import linalg, norm_more  # norm_more builds on norm
from . import contrib_small, linalg_more, vision_regions, vision_small  # noqa: F401  (register)

__all__ = [
    "activation",
    "binary",
    "compat",
    "conv",
    "deconv",
    "elemwise",
    "indexing",
    "init",
    "join",
    "legacy",
    "linalg",
    "matrix",
    "norm",
    "norm_more",
    "optimizer_ops",
    "pool",
    "reduce",
    "rnn",
    "scalar",
    "sampling",
    "slicing",
    "softmax",
    "upsampling",
    "views",
]
