"""``mx.init``: how parameters get their first values, chosen by name as in MXNet.

Idea (MXNet: python/mxnet/initializer.py): an initializer is called as
``init(desc, arr)`` for every parameter array.  ``desc`` is an
:class:`InitDesc` — the parameter's name plus the attributes of its symbol
variable — and the name decides what happens: weights get the
initializer's distribution, everything else a fixed value.

Rules (MXNet 1.9.1's name rules):
    * a variable attribute ``__init__`` (``mx.sym.Variable('w', init=mx.init.One())``)
      overrides the initializer for that parameter (``mx.rnn`` cells put
      :class:`LSTMBias` and :class:`FusedRNN` there);
    * ``*_weight``: :meth:`Initializer._init_weight` (the distribution);
      ``*_bias``, ``*_beta``, ``*_moving_mean``, ``*_min``: 0;
      ``*_gamma``, ``*_moving_var``, ``*_max``: 1;
    * any other name is an error naming the parameter and how to choose its
      initializer.

State kept: each initializer keeps its keyword arguments (``dumps()`` gives
MXNet's JSON form ``["xavier", {"magnitude": 2}]``, the ``__init__`` attribute).

Example::

    >>> import mxnb as mx
    >>> w = mx.nd.zeros((2, 3)); b = mx.nd.ones(2)
    >>> mx.init.Xavier()(mx.init.InitDesc('fc_weight'), w)
    >>> mx.init.Xavier()(mx.init.InitDesc('fc_bias'), b)
    >>> b.asnumpy().tolist(), bool(abs(w.asnumpy()).max() > 0)
    ([0.0, 0.0], True)
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from .base import MXNBError, ShapeError
from .validate import check_number

__all__ = [
    "Constant",
    "FusedRNN",
    "InitDesc",
    "Initializer",
    "LSTMBias",
    "Load",
    "MSRAPrelu",
    "Mixed",
    "Normal",
    "One",
    "Orthogonal",
    "Uniform",
    "Xavier",
    "Zero",
    "create",
    "register",
]

_REGISTRY: dict[str, type[Initializer]] = {}


class InitError(MXNBError, ValueError):
    """An initializer cannot initialize a parameter (unknown name pattern, wrong shape)."""


def register(cls: type[Initializer]) -> type[Initializer]:
    """Class decorator: make ``cls`` known by its lower-case name (``__init__`` attrs, :func:`create`)."""
    _REGISTRY[cls.__name__.lower()] = cls
    return cls


def create(name: str | Initializer, **kwargs: Any) -> Initializer:
    """Return the initializer registered as ``name`` (or ``name`` itself if it is one)."""
    if isinstance(name, Initializer):
        return name
    cls = _REGISTRY.get(str(name).lower())
    if cls is None:
        raise InitError(f"no initializer named {name!r}; known: {', '.join(sorted(_REGISTRY))}")
    return cls(**kwargs)


class InitDesc(str):
    """A parameter's name (it IS the string) with its variable attributes and the global initializer."""

    attrs: dict[str, str]
    global_init: Initializer | None

    def __new__(
        cls, name: str, attrs: Mapping[str, str] | None = None, global_init: Any = None
    ) -> InitDesc:  # noqa: PYI034 - str subclass, as MXNet
        desc = super().__new__(cls, name)
        desc.attrs = dict(attrs or {})
        desc.global_init = global_init
        return desc


_ZERO_SUFFIXES = ("bias", "beta", "moving_mean", "moving_inv_var", "moving_avg", "min")
_ONE_SUFFIXES = ("gamma", "moving_var", "max")


class Initializer:
    """Base of every initializer: the name rules; subclasses define :meth:`_init_weight`."""

    def __init__(self, **kwargs: Any) -> None:
        self._kwargs = kwargs

    def _number(self, name: str, value: Any, **bounds: Any) -> Any:
        """``value`` checked (finite, in ``bounds``: :func:`mxnb.validate.check_number`).

        Every number of every initializer passes here once: ``Normal(nan)``
        is refused where it is written, not found as NaN weights.
        """
        return check_number(value, name, type(self).__name__, **bounds)

    def dumps(self) -> str:
        """MXNet's JSON form: ``["name", {kwargs}]``."""
        return json.dumps([type(self).__name__.lower(), self._kwargs])

    def __call__(self, desc: str, arr: Any) -> None:
        """Initialize ``arr`` in place for the parameter named ``desc``."""
        if not isinstance(desc, InitDesc):
            desc = InitDesc(desc)
        if desc.global_init is None:
            desc.global_init = self
        init = desc.attrs.get("__init__", "")
        if init:
            klass, kwargs = json.loads(init)
            create(klass, **kwargs)._init_weight(desc, arr)
            return
        name = str(desc)
        if name.startswith("upsampling") and name.endswith("weight"):
            raise InitError(f"{name}: bilinear initialization is not supported; set init= on it")
        if name.endswith("weight"):
            self._init_weight(desc, arr)
        elif name.endswith("gamma"):
            self._init_gamma(desc, arr)
        elif name.endswith("beta"):
            self._init_beta(desc, arr)
        elif name.endswith(_ZERO_SUFFIXES):
            self._init_zero(desc, arr)
        elif name.endswith(_ONE_SUFFIXES):
            self._init_one(desc, arr)
        else:
            self._init_default(desc, arr)

    def _init_zero(self, name: str, arr: Any) -> None:
        arr[:] = 0.0

    def _init_one(self, name: str, arr: Any) -> None:
        arr[:] = 1.0

    def _init_bias(self, name: str, arr: Any) -> None:
        arr[:] = 0.0

    def _init_gamma(self, name: str, arr: Any) -> None:
        arr[:] = 1.0

    def _init_beta(self, name: str, arr: Any) -> None:
        arr[:] = 0.0

    def _init_weight(self, name: str, arr: Any) -> None:
        raise NotImplementedError(f"{type(self).__name__} must define _init_weight")

    def _init_default(self, name: str, arr: Any) -> None:
        raise InitError(
            f"unknown initialization pattern for {name!r}: by name, only *_weight, *_bias, "
            "*_gamma, *_beta, *_moving_mean / *_moving_var, *_min / *_max are initialized; "
            "give this variable an initializer: mx.sym.Variable(name, init=mx.init.Normal())"
        )

    def __repr__(self) -> str:
        args = ", ".join(f"{key}={value!r}" for key, value in self._kwargs.items())
        return f"{type(self).__name__}({args})"


@register
class Zero(Initializer):
    """Every value 0."""

    def _init_weight(self, name: str, arr: Any) -> None:
        arr[:] = 0.0


@register
class One(Initializer):
    """Every value 1."""

    def _init_weight(self, name: str, arr: Any) -> None:
        arr[:] = 1.0


_REGISTRY["zeros"] = Zero
_REGISTRY["ones"] = One


@register
class Constant(Initializer):
    """Every value ``value`` (a number, or an array broadcast to the parameter)."""

    def __init__(self, value: Any) -> None:
        value = value.tolist() if hasattr(value, "tolist") else value
        super().__init__(value=value)
        if isinstance(value, list):
            flat = np.asarray(value, dtype=np.float64).reshape(-1)
            for number in flat:
                self._number("value", float(number))
        else:
            self._number("value", value)
        self.value = value

    def _init_weight(self, name: str, arr: Any) -> None:
        arr[:] = (
            np.asarray(self.value, dtype=arr.dtype) if isinstance(self.value, list) else self.value
        )


@register
class Uniform(Initializer):
    """Uniform on ``[-scale, scale]``."""

    def __init__(self, scale: float = 0.07) -> None:
        super().__init__(scale=scale)
        self.scale = self._number("scale", scale, low=0)

    def _init_weight(self, name: str, arr: Any) -> None:
        from .ndarray import random

        random.uniform(-self.scale, self.scale, out=arr)


@register
class Normal(Initializer):
    """Normal with mean 0 and standard deviation ``sigma``."""

    def __init__(self, sigma: float = 0.01) -> None:
        super().__init__(sigma=sigma)
        self.sigma = self._number("sigma", sigma, low=0)

    def _init_weight(self, name: str, arr: Any) -> None:
        from .ndarray import random

        random.normal(0, self.sigma, out=arr)


@register
class Xavier(Initializer):
    """Glorot & Bengio: scale ``sqrt(magnitude / factor)``, factor from fan in / out.

    ``rnd_type``: ``'uniform'`` on [-scale, scale] or ``'gaussian'`` with sigma scale;
    ``factor_type``: ``'avg'`` (fan_in + fan_out) / 2, ``'in'`` fan_in, ``'out'`` fan_out.
    Fans count the kernel's spatial size (``shape[2:]``).
    """

    def __init__(
        self, rnd_type: str = "uniform", factor_type: str = "avg", magnitude: float = 3
    ) -> None:
        super().__init__(rnd_type=rnd_type, factor_type=factor_type, magnitude=magnitude)
        if rnd_type not in ("uniform", "gaussian"):
            raise InitError(f"Xavier: rnd_type must be 'uniform' or 'gaussian', got {rnd_type!r}")
        if factor_type not in ("avg", "in", "out"):
            raise InitError(
                f"Xavier: factor_type must be 'avg', 'in' or 'out', got {factor_type!r}"
            )
        self.rnd_type = rnd_type
        self.factor_type = factor_type
        self.magnitude = self._number("magnitude", magnitude, low=0)

    def scale_for(self, name: str, shape: Sequence[int]) -> float:
        """The scale for a parameter of ``shape`` (ShapeError for vectors)."""
        if len(shape) < 2:
            raise ShapeError(
                f"Xavier cannot initialize {name!r} of shape {tuple(shape)}: it needs at least "
                "2 dimensions (set init= on this variable, e.g. mx.init.Normal())"
            )
        receptive = float(np.prod(shape[2:])) if len(shape) > 2 else 1.0
        fan_in, fan_out = shape[1] * receptive, shape[0] * receptive
        factor = {"avg": (fan_in + fan_out) / 2.0, "in": fan_in, "out": fan_out}[self.factor_type]
        return float(np.sqrt(self.magnitude / factor))

    def _init_weight(self, name: str, arr: Any) -> None:
        from .ndarray import random

        scale = self.scale_for(name, arr.shape)
        if self.rnd_type == "uniform":
            random.uniform(-scale, scale, out=arr)
        else:
            random.normal(0, scale, out=arr)


@register
class MSRAPrelu(Xavier):
    """He et al.: Gaussian Xavier with ``magnitude = 2 / (1 + slope^2)``."""

    def __init__(self, factor_type: str = "avg", slope: float = 0.25) -> None:
        slope = check_number(slope, "slope", "MSRAPrelu")
        super().__init__("gaussian", factor_type, 2.0 / (1 + slope**2))
        self._kwargs = {"factor_type": factor_type, "slope": slope}


@register
class Orthogonal(Initializer):
    """Saxe et al.: an orthogonal matrix (SVD of a random one) times ``scale``."""

    def __init__(self, scale: float = 1.414, rand_type: str = "uniform") -> None:
        super().__init__(scale=scale, rand_type=rand_type)
        if rand_type not in ("uniform", "normal"):
            raise InitError(
                f"Orthogonal: rand_type must be 'uniform' or 'normal', got {rand_type!r}"
            )
        self.scale = self._number("scale", scale)
        self.rand_type = rand_type

    def _init_weight(self, name: str, arr: Any) -> None:
        rows = arr.shape[0]
        cols = int(np.prod(arr.shape[1:]))
        if self.rand_type == "uniform":
            sample = np.random.uniform(-1.0, 1.0, (rows, cols))
        else:
            sample = np.random.normal(0.0, 1.0, (rows, cols))
        u, _, v = np.linalg.svd(sample, full_matrices=False)
        result = u if u.shape == sample.shape else v
        arr[:] = (self.scale * result.reshape(arr.shape)).astype(arr.dtype)


@register
class LSTMBias(Initializer):
    """An LSTM's ``i2h_bias``: 0, except the forget gate's quarter, ``forget_bias`` (MXNet's gate order).

    :class:`mx.rnn.LSTMCell <mxnb.rnn.LSTMCell>` puts it on its bias variable
    (``__init__`` attribute), so any global initializer leaves that bias to it.
    """

    def __init__(self, forget_bias: float = 1.0) -> None:
        super().__init__(forget_bias=forget_bias)
        self.forget_bias = self._number("forget_bias", forget_bias)

    def _init_weight(self, name: str, arr: Any) -> None:
        if len(arr.shape) != 1 or arr.shape[0] % 4:
            raise ShapeError(
                f"LSTMBias: {str(name)!r} has shape {tuple(arr.shape)}; an LSTM bias is one "
                "vector of 4 * num_hidden values (input, forget, cell, output gates)"
            )
        hidden = arr.shape[0] // 4
        values = np.zeros(arr.shape, dtype=np.float32)
        values[hidden : 2 * hidden] = self.forget_bias
        arr[:] = values


@register
class FusedRNN(Initializer):
    """The packed ``parameters`` of a :class:`mx.rnn.FusedRNNCell <mxnb.rnn.FusedRNNCell>`.

    MXNet's rule: unpack the vector into its per-layer, per-gate weights and
    biases, initialize each by name with ``init`` (or the global initializer
    when ``init`` is None), set every LSTM forget-gate bias (``*_f_bias``, both
    ``i2h`` and ``h2h``) to ``forget_bias``, and pack them back.
    """

    def __init__(
        self,
        init: Initializer | str | None,
        num_hidden: int,
        num_layers: int,
        mode: str,
        bidirectional: bool = False,
        forget_bias: float = 1.0,
    ) -> None:
        if isinstance(init, str):
            klass, kwargs = json.loads(init)
            init = create(klass, **kwargs)
        super().__init__(
            init=None if init is None else init.dumps(),
            num_hidden=num_hidden,
            num_layers=num_layers,
            mode=mode,
            bidirectional=bidirectional,
            forget_bias=forget_bias,
        )
        self._init = init
        self._cell_args = (int(num_hidden), int(num_layers), str(mode), bool(bidirectional))
        self._forget_bias = self._number("forget_bias", forget_bias)

    def _init_weight(self, name: str, arr: Any) -> None:
        from .rnn import FusedRNNCell

        num_hidden, num_layers, mode, bidirectional = self._cell_args
        cell = FusedRNNCell(num_hidden, num_layers, mode, bidirectional, prefix="")
        global_init = getattr(name, "global_init", None)
        args = cell.unpack_weights({"parameters": arr})
        for part, values in args.items():
            if mode == "lstm" and part.endswith("_f_bias"):
                values[:] = self._forget_bias
                continue
            inner = self._init or global_init
            if inner is None:
                raise InitError(
                    f"FusedRNN: no initializer for {part!r} of {str(name)!r}; give FusedRNN an "
                    "init, or call it through a global initializer (Module.init_params)"
                )
            inner(InitDesc(part, global_init=global_init), values)
        arr[:] = cell.pack_weights(args)["parameters"]


@register
class Mixed(Initializer):
    """The first initializer whose regular expression matches the parameter's name."""

    def __init__(self, patterns: Sequence[str], initializers: Sequence[Initializer]) -> None:
        if len(patterns) != len(initializers):
            raise InitError("Mixed: give one initializer per pattern")
        super().__init__()
        self.map = [(re.compile(pattern), init) for pattern, init in zip(patterns, initializers)]

    def __call__(self, desc: str, arr: Any) -> None:
        """Initialize with the first matching initializer."""
        for pattern, init in self.map:
            if pattern.match(desc):
                init(desc, arr)
                return
        raise InitError(
            f"Mixed: parameter {str(desc)!r} matches none of the patterns "
            f"{[p.pattern for p, _ in self.map]}; add a catch-all pattern '.*'"
        )


@register
class Load(Initializer):
    """Values from a dict (or an ``mx.nd.load``-able file); ``arg:`` / ``aux:`` prefixes stripped."""

    def __init__(
        self,
        param: str | Mapping[str, Any],
        default_init: Initializer | None = None,
        verbose: bool = False,
    ) -> None:
        super().__init__()
        if isinstance(param, str):
            from .ndarray import load

            param = load(param)
        self.param = {
            (name[4:] if name.startswith(("arg:", "aux:")) else name): value
            for name, value in dict(param).items()
        }
        self.default_init = default_init
        self.verbose = verbose

    def __call__(self, desc: str, arr: Any) -> None:
        """Copy the stored value (shapes must match), else use ``default_init``."""
        name = str(desc)
        if name in self.param:
            value = self.param[name]
            if tuple(value.shape) != tuple(arr.shape):
                raise ShapeError(
                    f"Load: parameter {name!r} has shape {tuple(arr.shape)} but the loaded "
                    f"value has {tuple(value.shape)}"
                )
            arr[:] = value
        elif self.default_init is not None:
            self.default_init(desc, arr)
        else:
            raise InitError(
                f"Load: cannot initialize {name!r}: not in the loaded parameters and no "
                "default_init was given"
            )
