"""Malformed Chrome trace files (issue 37): one error class, naming the file and what is wrong.

Specification: ``Trace.from_chrome_trace`` either loads a trace every view can
read, or raises :class:`FormatError` whose message names the file and the
field; never ``KeyError``, ``IndexError``, ``TypeError`` or ``RecursionError``.
"""

from __future__ import annotations

import json

import pytest

import mxnb as mx
from mxnb.base import FormatError
from mxnb.engine import Trace


def _valid() -> dict:
    with mx.engine.trace() as tr:
        (mx.nd.ones((2,)) + 1).wait_to_read()
    return tr.to_chrome_trace()


def _changed(change):
    def make():
        document = _valid()
        result = change(document)
        return json.dumps(document if result is None else result).encode()

    return make


def _push(document):
    return next(e for e in document["mxnb"]["events"] if e[0] == "OpPush")


SHAPES = {
    "not JSON": (lambda: b"{not json", "is not JSON"),
    "binary": (lambda: bytes(range(256)), "not UTF-8"),
    "a list": (lambda: b"[1, 2]", "list without a 'traceEvents' key"),
    "a number": (lambda: b"42", "int without a 'traceEvents' key"),
    "no traceEvents": (_changed(lambda d: {"other": 1}), "without a 'traceEvents' key"),
    "traceEvents not a list": (
        _changed(lambda d: {"traceEvents": 5}),
        "'traceEvents' must be a list",
    ),
    "mxnb not an object": (_changed(lambda d: d.update(mxnb=[1])), "'mxnb' must be an object"),
    "mxnb events not a list": (
        _changed(lambda d: d["mxnb"].update(events={"a": 1})),
        "'events' is a list",
    ),
    "event not a list": (_changed(lambda d: d["mxnb"]["events"].append(7)), "is not a list"),
    "unknown kind": (
        _changed(lambda d: d["mxnb"]["events"].append(["Nope"])),
        "unknown kind 'Nope'",
    ),
    "missing fields": (_changed(lambda d: d["mxnb"]["events"].append(["OpEnd"])), "has 0 fields"),
    "extra fields": (
        _changed(lambda d: d["mxnb"]["events"].append(["OpEnd", 1.0, 1, None, False, 9])),
        "has 5 fields; expected 2 to 4",
    ),
    "time a string": (
        _changed(lambda d: _push(d).__setitem__(1, "soon")),
        "field 'time' must be a number, got 'soon'",
    ),
    "bad dependency": (
        _changed(lambda d: _push(d).__setitem__(8, [[1, 2]])),
        "field 'waits_on' must be a list of",
    ),
    "op never pushed": (
        _changed(lambda d: d["mxnb"]["events"].append(["OpEnd", 1.0, 999])),
        "about op 999, which was never pushed",
    ),
    "foreign event without ts": (
        _changed(lambda d: {"traceEvents": [{"ph": "X", "cat": "op", "name": "a"}]}),
        "traceEvents[0]: a complete event needs numbers 'ts'",
    ),
    "foreign event not an object": (
        _changed(lambda d: {"traceEvents": [[1]]}),
        "traceEvents[0] is not an object",
    ),
    "deep nesting": (
        lambda: b'{"traceEvents": ' + b"[" * 100_000 + b"]" * 100_000 + b"}",
        "nested too deeply",
    ),
}


@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_a_malformed_trace_file_is_a_format_error_naming_it(tmp_path, shape):
    make, message = SHAPES[shape]
    path = tmp_path / "bad-trace.json"
    path.write_bytes(make())
    with pytest.raises(FormatError) as error:
        Trace.from_chrome_trace(str(path))
    assert "bad-trace.json" in str(error.value) and message in str(error.value), error.value


def test_a_valid_trace_and_a_foreign_one_still_load(tmp_path):
    path = tmp_path / "good.json"
    path.write_text(json.dumps(_valid()))
    assert Trace.from_chrome_trace(str(path)).ops()
    foreign = {"traceEvents": [{"ph": "X", "cat": "op", "name": "conv", "ts": 5, "dur": 2}]}
    (op,) = Trace.from_chrome_trace(foreign).ops().values()
    assert op.name == "conv"
