"""The reference engine: MXNet's dependency rule in plain, careful Python — the yardstick.

Idea: the benchmark's honest peer for mxnb's engines.  It keeps what any
dependency engine must (per-var queues, a wait count per op, a lock, a ready
queue, two workers) and nothing else: no errors, traces, waits per var,
priorities, hand-over or debug mode.  Whatever mxnb costs beyond it buys those.

Rule (MXNet): ops touching a common var, at least one writing it, run in push
order; reads between two writes run in any order.

Forms:
    ReferenceNaive      the pusher runs each op (and what it made ready) itself
    ReferenceThreaded   two workers; a worker runs its op's first successor inline
                        (a chain stays on one thread); the pushing thread runs ops
                        itself when the workers are behind (more than ``behind`` ready)

Example::

    >>> eng = ReferenceNaive()
    >>> v = eng.new_var()
    >>> eng.push(lambda: None, (), (v,)); eng.wait_for_all()
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Callable


class RefVar:
    """Pending reads, the write holding the var, and the ops queued behind it."""

    __slots__ = ("pending_reads", "pending_write", "queue")

    def __init__(self) -> None:
        self.pending_reads = 0
        self.pending_write: RefOpr | None = None
        self.queue: deque[tuple[RefOpr, bool]] = deque()


class RefOpr:
    """A function, its vars and how many of them have not granted it access yet."""

    __slots__ = ("const_vars", "fn", "mutate_vars", "wait")

    def __init__(self, fn: Callable[[], None], const_vars: tuple, mutate_vars: tuple) -> None:
        self.fn = fn
        self.const_vars = const_vars
        self.mutate_vars = mutate_vars
        self.wait = 0


class ReferenceNaive:
    """The rule, a lock, and the pushing thread running every op that becomes ready."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.pending = 0

    def new_var(self) -> RefVar:
        return RefVar()

    def push(self, fn: Callable[[], None], const_vars: tuple, mutate_vars: tuple) -> None:
        """Book the op on its vars; hand it on when nothing blocks it."""
        opr = RefOpr(fn, const_vars, mutate_vars)
        with self.lock:
            self.pending += 1
            for var in const_vars:  # a read waits only for a pending write
                if var.pending_write is None:
                    var.pending_reads += 1
                else:
                    var.queue.append((opr, False))
                    opr.wait += 1
            for var in mutate_vars:  # a write waits for earlier reads and writes
                if var.pending_write is None:
                    var.pending_write = opr
                    if var.pending_reads:
                        opr.wait += 1
                else:
                    var.queue.append((opr, True))
                    opr.wait += 1
            ready = opr.wait == 0
        if ready:
            self.dispatch(opr)

    def complete(self, opr: RefOpr) -> list[RefOpr]:
        """Release the op's vars; return the ops that became ready."""
        ready = []
        with self.lock:
            self.pending -= 1
            for var in opr.const_vars:
                var.pending_reads -= 1
                writer = var.pending_write
                if var.pending_reads == 0 and writer is not None:
                    writer.wait -= 1
                    if writer.wait == 0:
                        ready.append(writer)
            for var in opr.mutate_vars:
                var.pending_write = None
                queue = var.queue
                while queue:  # the reads behind the write, up to the next write
                    waiting, is_write = queue.popleft()
                    if is_write:
                        var.pending_write = waiting
                        if var.pending_reads == 0:
                            waiting.wait -= 1
                            if waiting.wait == 0:
                                ready.append(waiting)
                        break
                    var.pending_reads += 1
                    waiting.wait -= 1
                    if waiting.wait == 0:
                        ready.append(waiting)
        return ready

    def dispatch(self, opr: RefOpr) -> None:
        """Naive form: run it, and what it makes ready, here and now."""
        todo = [opr]
        while todo:
            current = todo.pop()
            current.fn()
            todo.extend(reversed(self.complete(current)))

    def wait_for_all(self) -> None:
        """Every op ran at its push (or an earlier one's completion)."""

    def shutdown(self) -> None:
        """Nothing to stop."""


class ReferenceThreaded(ReferenceNaive):
    """Two workers on a ready queue, chains run inline, the pusher helps when they are behind."""

    def __init__(self, workers: int = 2, behind: int = 64) -> None:
        super().__init__()
        self.ready: deque[RefOpr | None] = deque()
        self.cond = threading.Condition(self.lock)
        self.behind = behind
        self.threads = [threading.Thread(target=self.work, daemon=True) for _ in range(workers)]
        for thread in self.threads:
            thread.start()

    def dispatch(self, opr: RefOpr) -> None:
        with self.lock:
            self.ready.append(opr)
            self.cond.notify()
            behind = len(self.ready) > self.behind
        if behind:  # run one in the pushing thread
            with self.lock:
                opr = self.ready.popleft() if self.ready else None
            if opr is not None:
                self.run_chain(opr)

    def run_chain(self, opr: RefOpr | None) -> None:
        """Run ``opr``, then its first successor, and so on; queue the other successors."""
        while opr is not None:
            opr.fn()
            ready = self.complete(opr)
            opr = ready[0] if ready else None
            if len(ready) > 1:
                with self.lock:
                    self.ready.extend(ready[1:])
                    self.cond.notify(len(ready) - 1)
            if self.pending == 0:
                with self.lock:
                    self.cond.notify_all()  # wake wait_for_all

    def work(self) -> None:
        while True:
            with self.lock:
                while not self.ready:
                    self.cond.wait()
                opr = self.ready.popleft()
            if opr is None:
                return
            self.run_chain(opr)

    def wait_for_all(self) -> None:
        with self.lock:
            while self.pending:
                self.cond.wait()

    def shutdown(self) -> None:
        with self.lock:
            self.ready.extend([None] * len(self.threads))
            self.cond.notify_all()
        for thread in self.threads:
            thread.join()
