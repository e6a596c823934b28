"""The examples in the executor modules' docstrings run and print what they say."""

from __future__ import annotations

import doctest

import pytest

from mxnb.executor import (
    arena,
    bulk,
    executor,
    flops,
    gradient,
    graph,
    memory,
    plan,
    recompute,
    runners,
    sharing,
    tradeoff,
    zoo,
)


@pytest.mark.parametrize(
    "module",
    [
        plan,
        graph,
        gradient,
        flops,
        recompute,
        tradeoff,
        arena,
        memory,
        executor,
        runners,
        sharing,
        zoo,
        bulk,
    ],
    ids=lambda m: m.__name__,
)
def test_docstring_examples_run(module):
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0
    assert result.failed == 0
