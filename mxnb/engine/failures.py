"""Failures: an op's exception travels with the vars it writes.

Idea (MXNet 1.6+: ``ThreadedVar::var_exception``, a ``shared_ptr`` to the
exception): an exception in an op is stored, as one shared
:class:`ErrorRef`, on every var the op writes.  A later op that reads such a
var is skipped and its outputs inherit the same reference; ``wait_for_var``
raises it as :class:`~mxnb.base.OpError` (original chained) every time, as
long as the var carries it, so a failed array never reads as stale memory.

Rule:
* an op that reads a failed var is skipped (completed without running) and
  its written vars carry the failure it inherited;
* an op that only writes a failed var runs, and its success clears the
  failure: the var was written again;
* ``wait_for_all`` raises the first failure no wait has raised yet, then
  forgets the list; at most :data:`MAX_UNRAISED_ERRORS` are kept.

State kept (on the engine, under its lock):
    _errors          failures not yet raised by a wait (bounded)
    _errors_dropped  failures counted but not kept
    _failures        vars carrying a failure now (a write or a delete clears one):
                     0 means no op can be skipped

Example::

    >>> import mxnb as mx
    >>> eng = mx.engine.create('naive')
    >>> v = eng.new_var(name='v')
    >>> _ = eng.push_sync(lambda rctx: 1 / 0, mx.cpu(), mutate_vars=[v], name='boom')
    >>> try:
    ...     eng.wait_for_var(v)
    ... except mx.base.OpError as err:
    ...     print(err)
    op 'boom' (id ...) failed: ZeroDivisionError: division by zero
"""

from __future__ import annotations

from ..base import OpError
from .var import Opr

__all__ = ["MAX_UNRAISED_ERRORS", "ErrorRef", "Failures"]

#: Failures kept for wait_for_all to raise; older ones are counted, not kept.
MAX_UNRAISED_ERRORS = 64


class ErrorRef:
    """A failure shared by every var it reached (MXNet: ``shared_ptr<exception_ptr>``).

    Clearing it (``exc = None``) clears it on all those vars at once.
    """

    __slots__ = ("exc", "op_id", "op_name")

    def __init__(self, exc: BaseException, op_name: str, op_id: int) -> None:
        self.exc: BaseException | None = exc
        self.op_name = op_name
        self.op_id = op_id

    def to_error(self, exc: BaseException) -> OpError:
        """Return the :class:`OpError` a wait raises for ``exc`` (chain it with ``from``)."""
        message = f"op '{self.op_name}' (id {self.op_id}) failed: {type(exc).__name__}: {exc}"
        return OpError(message, op_name=self.op_name, op_id=self.op_id)


class Failures:
    """The failure half of :class:`~mxnb.engine.base.Engine` (a mixin it inherits)."""

    _errors: list[ErrorRef]
    _errors_dropped: int
    _failures: int

    @staticmethod
    def _failed_input(opr: Opr) -> ErrorRef | None:
        """The failure carried by one of the vars ``opr`` reads, if any (the op is then skipped).

        A var it only writes does not count: writing it again is how a failed
        var recovers (see :meth:`_mark_outputs`).
        """
        for var in opr.const_vars:
            ref = var.error
            if ref is not None:
                return ref
        return None

    def _mark_outputs(
        self, opr: Opr, exc: BaseException | None, inherited: ErrorRef | None
    ) -> list[ErrorRef | None] | None:
        """Set or clear the failure on ``opr``'s written vars as it completes (under the lock).

        Returns the references replaced: the caller drops them after releasing
        the lock (a dropped exception may free user objects whose finalizers push).
        """
        if exc is not None:
            inherited = ErrorRef(exc, opr.name, opr.id)
            self._note_failure(inherited)
        if inherited is None:  # it succeeded: only a failure it wrote over is to clear
            if not self._failures:
                return None
            for var in opr.mutate_vars:
                if var.error is not None:
                    break
            else:
                return None
        replaced = [var.error for var in opr.mutate_vars]
        for var in opr.mutate_vars:
            if inherited is not None and var.error is None:
                self._failures += 1
            elif inherited is None and var.error is not None:
                self._failures -= 1  # written again (or deleted): the var lets go of its failure
            var.error = inherited
        return replaced

    def _note_failure(self, ref: ErrorRef) -> None:
        """Remember a failure for ``wait_for_all`` (under the lock), keeping at most
        :data:`MAX_UNRAISED_ERRORS`: a loop of failing ops nobody waits for must not
        grow memory.  The vars keep their failure either way."""
        if len(self._errors) < MAX_UNRAISED_ERRORS:
            self._errors.append(ref)
        else:  # the first failures explain the rest: later ones are only counted
            self._errors_dropped += 1
