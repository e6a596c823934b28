"""The examples in the docstrings of the training modules run and print what they say."""

from __future__ import annotations

import doctest
import importlib

import pytest

MODULES = [
    "mxnb.callback",
    "mxnb.initializer",
    "mxnb.kvstore",
    "mxnb.kvstore.base",
    "mxnb.kvstore.local",
    "mxnb.metric",
    "mxnb.model",
    "mxnb.module",
    "mxnb.module.base_module",
    "mxnb.module.bucketing_module",
    "mxnb.module.executor_group",
    "mxnb.module.module",
    "mxnb.ndarray.mxnet_format",
    "mxnb.operator.ops.optimizer_ops",
    "mxnb.optimizer",
    "mxnb.optimizer.adaptive",
    "mxnb.optimizer.lr_scheduler",
    "mxnb.optimizer.optimizer",
    "mxnb.optimizer.sgd",
    "mxnb.validate",
]


@pytest.mark.timeout(120)
@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples_run(name):
    module = importlib.import_module(name)
    failures, tried = doctest.testmod(module, optionflags=doctest.ELLIPSIS)
    assert tried > 0 and failures == 0
