"""What a check returns: a verdict, the reason in words, and for a race the schedule that breaks it.

Idea: a grader that only says "wrong" teaches little.  A :class:`Result`
says whether the answer passed, why not (one paragraph naming the op, the
var and the fix), and, when a race is the reason, carries a
:class:`Counterexample`: the ops in the order they ran in one legal schedule
whose result differs from the sequential one.  The counterexample replays
itself on a fresh step engine (:meth:`Counterexample.replay`) and draws
itself as the engine timeline of that replay, the two racing ops outlined
in red and the missing var named in the title.

Rule: ``Result(passed, message, counterexample)`` unpacks as those three (the
binding API); ``reason`` is a short code tests compare ('race',
'undeclared_write', 'serialized', ...), ``''`` when passed.  In a notebook a
Result shows as Markdown (a tick or a cross, the message) and, with a
counterexample, as the PNG of its timeline.

State kept:
    Result.passed / message / counterexample / reason / details   the verdict
    Counterexample.schedule   op labels in the order they ran ('copy:device' for a device job)
    Counterexample.racing     the two ops whose order decided the result
    Counterexample.var        the var they race on; missing: the declaration that would order them

Example::

    >>> r = Result(False, "op 'add' writes var 'x' but does not declare it", None, "undeclared_write")
    >>> passed, message, counterexample = r
    >>> passed, counterexample is None
    (False, True)
    >>> r._repr_markdown_().splitlines()[0]
    '**✗ not yet** (undeclared_write)'
"""

from __future__ import annotations

import base64
import html
import io
import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

__all__ = ["Counterexample", "Result"]


@dataclass(frozen=True)
class Counterexample:
    """One legal schedule whose result differs from the sequential reference.

    ``replay()`` runs the same program on a fresh step engine in this order and
    returns what it produced (``got`` again: the schedule is the whole story).
    """

    schedule: tuple[str, ...]  # op labels in the order they ran; 'op:device' = a device job
    expected: dict[str, Any]  # what the sequential reference produced
    got: dict[str, Any]  # what this schedule produced
    racing: tuple[str, str] | None  # (earlier pushed op, later pushed op that overtook it)
    var: str | None  # the var they race on
    missing: str  # the declaration that would have ordered them, in words
    replayer: Callable[..., Any] = field(repr=False, compare=False, default=None)

    def replay(self) -> dict[str, Any]:
        """Run the program again in this schedule on a new step engine; return what it produced."""
        return self.replayer(self.schedule)

    def timeline(self) -> Any:
        """The :class:`~mxnb.widgets.Timeline` of a replay, racing ops outlined (a figure view)."""
        from ..engine import trace as _trace

        with _trace() as recorded:
            self.replay()
        return _MarkedTimeline(recorded, self)

    def figure(self) -> Any:
        """The timeline of a replay as a matplotlib Figure."""
        return self.timeline().figure()

    def to_png(self, path: str | os.PathLike, dpi: int = 110) -> str:
        """Write the timeline as a PNG (atomically) and return the path."""
        from ..atomic_file import write_atomically

        buffer = io.BytesIO()
        self.figure().savefig(buffer, format="png", dpi=dpi, bbox_inches="tight")
        write_atomically(path, buffer.getvalue())
        return os.fspath(path)

    def to_text(self) -> str:
        """The schedule, one op per line, the racing ops marked with ``<-``."""
        racing = set(self.racing or ())
        lines = [f"counterexample schedule ({len(self.schedule)} moves):"]
        for index, label in enumerate(self.schedule):
            mark = "   <- races" if label in racing else ""
            lines.append(f"  {index + 1:>2}. {label}{mark}")
        lines.append(f"  expected {self.expected}")
        lines.append(f"  got      {self.got}")
        if self.missing:
            lines.append(f"  missing: {self.missing}")
        return "\n".join(lines)


def _marked_timeline_class() -> type:
    from ..widgets import Timeline

    class MarkedTimeline(Timeline):
        """The replay's timeline with the racing ops' bars outlined in red."""

        def __init__(self, source: Any, example: Counterexample) -> None:
            super().__init__(source, highlight_critical=False, width=9.0)
            self.example = example

        def wait_lanes(self) -> dict[str, list[tuple[float, float | None, str]]]:
            return {}  # the replay's own waits (closing the engine) are not the learner's

        def figure(self) -> Any:
            figure = super().figure()
            axes = figure.axes[0]
            racing = set(self.example.racing or ())
            ids = {f"op{op.op_id}" for op in self.model.ops.values() if op.name in racing}
            for patch in axes.patches:
                if patch.get_gid() in ids:
                    patch.set_edgecolor("#d62728")
                    patch.set_linewidth(3.0)
            order = " → ".join(self.example.schedule)
            title = f"counterexample: {order}"
            if self.example.var:
                title += f"\nracing on var '{self.example.var}': {self.example.missing}"
            axes.set_title("", loc="center")
            axes.set_title(title, fontsize=8, color="#d62728", loc="left")
            return figure

    return MarkedTimeline


def _MarkedTimeline(source: Any, example: Counterexample) -> Any:
    return _marked_timeline_class()(source, example)


@dataclass(frozen=True)
class Result:
    """The verdict of :func:`mxnb.exercises.check`: ``(passed, message, counterexample)``."""

    passed: bool
    message: str
    counterexample: Counterexample | None = None
    reason: str = ""  # '' when passed; else a code such as 'race', 'undeclared_write'
    details: dict[str, Any] = field(default_factory=dict, compare=False)

    def __iter__(self) -> Iterator[Any]:
        return iter((self.passed, self.message, self.counterexample))

    def __bool__(self) -> bool:
        return self.passed

    def __str__(self) -> str:
        head = "passed" if self.passed else f"not yet ({self.reason})"
        text = f"{head}: {self.message}"
        if self.counterexample is not None:
            text += "\n" + self.counterexample.to_text()
        return text

    def _repr_markdown_(self) -> str:
        head = "**✓ passed**" if self.passed else f"**✗ not yet** ({self.reason})"
        text = f"{head}\n\n{self.message}"
        if self.counterexample is not None:
            schedule = " → ".join(f"`{label}`" for label in self.counterexample.schedule)
            text += f"\n\nCounterexample schedule: {schedule}"
            text += (
                f"\n\nexpected `{self.counterexample.expected}`, got `{self.counterexample.got}`"
            )
        return text

    def _repr_png_(self) -> bytes | None:
        if self.counterexample is None:
            return None
        buffer = io.BytesIO()
        self.counterexample.figure().savefig(buffer, format="png", dpi=90, bbox_inches="tight")
        return buffer.getvalue()

    def _repr_html_(self) -> str:
        colour = "#2ca02c" if self.passed else "#d62728"
        head = (
            "&#10003; passed" if self.passed else f"&#10007; not yet ({html.escape(self.reason)})"
        )
        parts = [
            f'<div><b style="color:{colour}">{head}</b>',
            f"<p>{html.escape(self.message)}</p>",
        ]
        png = self._repr_png_()
        if png is not None:
            text = html.escape(self.counterexample.to_text())  # type: ignore[union-attr]
            parts.append(f"<pre>{text}</pre>")
            data = base64.b64encode(png).decode("ascii")
            parts.append(f'<img src="data:image/png;base64,{data}"/>')
        parts.append("</div>")
        return "\n".join(parts)
