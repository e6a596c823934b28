"""The examples in the widgets' docstrings run and say what they claim."""

from __future__ import annotations

import doctest
import importlib

import pytest

MODULES = [
    "mxnb.widgets",
    "mxnb.widgets._render",
    "mxnb.widgets.model",
    "mxnb.widgets.dag",
    "mxnb.widgets.timeline",
    "mxnb.widgets.memory",
    "mxnb.widgets.stats",
    "mxnb.widgets.network",
    "mxnb.widgets.plan_view",
    "mxnb.widgets.tradeoff",
    "mxnb.widgets.canvas",
    "mxnb.widgets.monitor",
    "mxnb.widgets.trace_diff_view",
]


@pytest.mark.timeout(120)
@pytest.mark.parametrize("name", MODULES)
def test_module_examples(name):
    module = importlib.import_module(name)
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    assert result.failed == 0
