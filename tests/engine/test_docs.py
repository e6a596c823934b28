"""The examples in the engine modules' docstrings run and print what they say."""

from __future__ import annotations

import doctest
import importlib

import pytest

MODULES = [
    "mxnb.engine",
    "mxnb.engine.base",
    "mxnb.engine.naive",
    "mxnb.engine.idle",
    "mxnb.engine.threaded",
    "mxnb.engine.stepper",
    "mxnb.engine.trace",
    "mxnb.engine.waiting",
    "mxnb.engine.var",
    "mxnb.engine.checks",
    "mxnb.engine.failures",
    "mxnb.engine.debugging",
    "mxnb.engine.events",
    "mxnb.engine.records",
    "mxnb.engine.analysis",
    "mxnb.engine.trace_model",
    "mxnb.engine.chrome",
    "mxnb.engine.stats",
    "mxnb.engine.running",
    "mxnb.engine.lifetime",
    "mxnb.engine.idle_time",
    "mxnb.engine.lineage",
    "mxnb.engine.replay",
    "mxnb.engine.trace_diff",
    "mxnb.engine.lint",
]


@pytest.mark.timeout(60)
@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples_run(name):
    module = importlib.import_module(name)
    failures, tried = doctest.testmod(module, optionflags=doctest.ELLIPSIS)
    assert tried > 0 and failures == 0
