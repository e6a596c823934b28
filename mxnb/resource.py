"""Shared resources of operators: random generators and temporary scratch space.

Idea (MXNet: ``ResourceManager`` and ``Resource`` in include/mxnet/resource.h):
some operators need state that is not an input or an output — a random
generator (Dropout, the samplers) or scratch memory (a big reduction).  They
ask for it by kind, with ``OperatorProperty.forward_resource`` /
``backward_resource`` returning :class:`~mxnb.operator.ResourceRequest` values,
and the system hands the resources over in ``OpContext.requested`` in the
order asked.

Rule: every resource carries its own engine var, and an op that uses a
resource lists that var among the vars it *mutates*.  The engine therefore
serializes all ops that use the same generator (or the same scratch buffer)
in push order — so the same seed gives the same numbers whatever the engine,
and two ops never scribble on one scratch buffer at once.

State kept (the process-wide :data:`manager`):
    _random      context -> :class:`RandomResource` (a ``numpy.random.Generator`` + var)
    _temp        context -> :class:`TempSpaceResource` (a growing scratch block + var)
    global_seed  the seed of the last ``mx.random.seed(n)``; new contexts derive theirs from it

Example::

    >>> import mxnb as mx
    >>> from mxnb.operator import ResourceRequest
    >>> rnd = mx.resource.request(mx.cpu(), ResourceRequest.RANDOM)
    >>> rnd.kind, type(rnd.generator).__name__
    (<ResourceRequest.RANDOM: 'random'>, 'Generator')
    >>> mx.resource.request(mx.cpu(), ResourceRequest.TEMP_SPACE).get_space((2, 3), 'float32').shape
    (2, 3)
"""

from __future__ import annotations

import math
import threading
from collections.abc import Sequence
from typing import Any

import numpy as np

from . import storage
from .base import MXNBError, np_dtype
from .context import Context
from .operator.base import ResourceRequest

__all__ = [
    "RandomResource",
    "Resource",
    "ResourceManager",
    "TempSpaceResource",
    "manager",
    "request",
    "seed",
]

#: The seed used until ``mx.random.seed`` is called (runs are reproducible by default).
DEFAULT_SEED = 0

_DEVICE_CODES = {"cpu": 0, "gpu": 1, "cpu_pinned": 2, "cpu_shared": 3}


def _engine() -> Any:
    from . import engine

    return engine.get()


def _seed_sequence(seed_state: int, ctx: Context) -> np.random.SeedSequence:
    """The seed of one context's generator: the user's seed mixed with the device."""
    return np.random.SeedSequence([seed_state, _DEVICE_CODES[ctx.device_type], ctx.device_id])


class Resource:
    """A resource of one context, guarded by its engine var ``var``.

    Only touch it inside an engine op that lists ``var`` in its mutate vars.
    """

    kind: ResourceRequest

    def __init__(self, ctx: Context, name: str) -> None:
        self.ctx = ctx
        self.var = _engine().new_var(name=f"{name}:{ctx}")

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.ctx!r}>"


class RandomResource(Resource):
    """The random generator of a context (MXNet: ``ResourceRequest::kRandom``).

    Kernels draw from ``ctx.requested[i].generator`` (a ``numpy.random.Generator``),
    e.g. ``generator.random(shape)``.  On a real GPU the generator still
    lives on the host and samples are copied over (cupy's generators do not
    share numpy's streams; not run on real hardware).
    """

    kind = ResourceRequest.RANDOM

    def __init__(self, ctx: Context, seed_state: int) -> None:
        super().__init__(ctx, "random")
        self.generator = np.random.Generator(np.random.PCG64(_seed_sequence(seed_state, ctx)))

    def reseed(self, seed_state: int) -> None:
        """Replace the generator's state (call only inside an op that holds ``var``)."""
        self.generator = np.random.Generator(np.random.PCG64(_seed_sequence(seed_state, self.ctx)))


class TempSpaceResource(Resource):
    """A scratch block of a context that grows to the largest request and is reused.

    MXNet: ``ResourceRequest::kTempSpace``.  The block comes from the context's
    storage manager, so it shows in ``mx.storage.stats`` and in the memory trace.
    """

    kind = ResourceRequest.TEMP_SPACE

    def __init__(self, ctx: Context) -> None:
        super().__init__(ctx, "temp_space")
        self.handle: storage.Handle | None = None

    @property
    def capacity(self) -> int:
        """Bytes held now (0 before the first request)."""
        return 0 if self.handle is None else self.handle.capacity

    def get_space(self, shape: Sequence[int] | int, dtype: Any = "float32") -> Any:
        """Return an uninitialised array of ``shape`` and ``dtype`` over the scratch block.

        Contents are garbage and do not outlive the op; the next op holding
        the var overwrites them.
        """
        shape = (
            (int(shape),) if isinstance(shape, (int, np.integer)) else tuple(int(s) for s in shape)
        )
        dtype = np_dtype(dtype)
        nbytes = math.prod(shape) * dtype.itemsize
        if self.handle is None or self.handle.capacity < nbytes:
            if self.handle is not None:
                storage.free(self.handle)
            self.handle = storage.alloc_exact(nbytes, self.ctx)  # lives as long as the context
        return self.handle.buffer[:nbytes].view(dtype).reshape(shape)

    def release(self) -> None:
        """Give the scratch block back (call only inside an op that holds ``var``)."""
        if self.handle is not None:
            storage.free(self.handle)
            self.handle = None


class ResourceManager:
    """Hands out the resources of each context (MXNet: ``ResourceManager::Get()``).

    One random resource and one temp-space resource per context, created on
    first request.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._random: dict[Context, RandomResource] = {}
        self._temp: dict[Context, TempSpaceResource] = {}
        self.global_seed = DEFAULT_SEED

    def request(self, ctx: Context, kind: ResourceRequest) -> Resource:
        """Return the resource of ``kind`` for ``ctx``."""
        if kind is ResourceRequest.RANDOM:
            found: Resource | None = self._random.get(ctx)
        elif kind is ResourceRequest.TEMP_SPACE:
            found = self._temp.get(ctx)
        else:
            raise MXNBError(
                f"unknown resource request {kind!r}; use ResourceRequest.RANDOM or TEMP_SPACE"
            )
        if found is not None:
            return found
        with self._lock:
            if kind is ResourceRequest.RANDOM:
                if ctx not in self._random:
                    self._random[ctx] = RandomResource(ctx, self.global_seed)
                return self._random[ctx]
            if ctx not in self._temp:
                self._temp[ctx] = TempSpaceResource(ctx)
            return self._temp[ctx]

    def request_all(self, ctx: Context, kinds: Sequence[ResourceRequest]) -> list[Resource]:
        """Return the resources for ``kinds`` in order (what ``OpContext.requested`` holds)."""
        return [self.request(ctx, kind) for kind in kinds]

    def seed(self, seed_state: int, ctx: Context | str = "all") -> None:
        """Reseed the generators of every context (``'all'``) or of one context.

        The reseed is pushed to the engine as a write on each generator's var,
        so it takes effect after the random ops already pushed and before the
        ones pushed later, whatever the engine.
        """
        seed_state = int(seed_state)
        with self._lock:
            if ctx == "all":
                self.global_seed = seed_state
                targets = list(self._random.values())
            else:
                ctx = Context(ctx)  # type: ignore[arg-type]
                if ctx not in self._random:
                    self._random[ctx] = RandomResource(ctx, seed_state)
                targets = [self._random[ctx]]
        eng = _engine()
        for resource in targets:
            eng.push_sync(
                _reseed_fn(resource, seed_state),
                resource.ctx,
                const_vars=[],
                mutate_vars=[resource.var],
                name="random_seed",
            )


def _reseed_fn(resource: RandomResource, seed_state: int) -> Any:
    def run(run_ctx: Any) -> None:
        resource.reseed(seed_state)

    return run


#: The process-wide resource manager.
manager = ResourceManager()


def request(ctx: Context, kind: ResourceRequest) -> Resource:
    """Return the process-wide resource of ``kind`` for ``ctx``."""
    return manager.request(ctx, kind)


def seed(seed_state: int, ctx: Context | str = "all") -> None:
    """Seed the random generators (see :meth:`ResourceManager.seed`)."""
    manager.seed(seed_state, ctx)
