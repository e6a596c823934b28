"""Recording and training flags, per thread, and the error of autograd misuse.

Idea (MXNet: ``Imperative::is_recording`` / ``is_training``, thread-local):
two flags decide what the imperative invoke does with an op: *recording*
(``with autograd.record():``) adds it to the tape (:mod:`.tape`), *training*
makes Dropout drop and BatchNorm use the batch's statistics.

Rule: each thread has its own flags; ``record`` / ``pause`` / ``train_mode`` /
``predict_mode`` set them for a ``with`` block and restore them after it.

State kept: ``_state``, a ``threading.local`` with ``recording`` and ``training``.

Example::

    >>> import mxnb as mx
    >>> with mx.autograd.record():
    ...     mx.autograd.is_recording(), mx.autograd.is_training()
    (True, True)
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator

from ..base import MXNBError


class AutogradError(MXNBError, RuntimeError):
    """Autograd misuse: a head not recorded, a graph already freed, in-place writes while recording."""


# ---------------------------------------------------------------------------
# thread-local recording / training flags
# ---------------------------------------------------------------------------


class _State(threading.local):
    recording = False  # ops pushed by this thread are recorded
    training = False  # ops run in training mode (Dropout drops, BatchNorm uses batch stats)


_state = _State()


def is_recording() -> bool:
    """True inside ``record()`` (on this thread)."""
    return _state.recording


def is_training() -> bool:
    """True in training mode (``record()`` default, ``train_mode()``) on this thread."""
    return _state.training


def set_recording(is_recording: bool) -> bool:
    """Turn recording on or off for this thread; return the previous value."""
    previous = _state.recording
    _state.recording = bool(is_recording)
    return previous


def set_training(train_mode: bool) -> bool:
    """Turn training mode on or off for this thread; return the previous value."""
    previous = _state.training
    _state.training = bool(train_mode)
    return previous


@contextlib.contextmanager
def _scope(recording: bool | None, training: bool | None) -> Iterator[None]:
    previous = (_state.recording, _state.training)
    if recording is not None:
        _state.recording = recording
    if training is not None:
        _state.training = training
    try:
        yield
    finally:
        _state.recording, _state.training = previous


def record(train_mode: bool = True) -> contextlib.AbstractContextManager[None]:
    """Record the ops run in the block for a later ``backward`` (training mode by default).

    Example::

        >>> import mxnb as mx
        >>> with mx.autograd.record():
        ...     mx.autograd.is_recording(), mx.autograd.is_training()
        (True, True)
    """
    return _scope(True, train_mode)


def pause(train_mode: bool = False) -> contextlib.AbstractContextManager[None]:
    """Stop recording inside a ``record()`` block (prediction mode by default)."""
    return _scope(False, train_mode)


def train_mode() -> contextlib.AbstractContextManager[None]:
    """Run the block in training mode, leaving recording as it is."""
    return _scope(None, True)


def predict_mode() -> contextlib.AbstractContextManager[None]:
    """Run the block in prediction mode, leaving recording as it is."""
    return _scope(None, False)
