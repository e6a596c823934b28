"""Our stand-in for MXNet's tests/python/unittest/common.py (not a copy): the names the test
files import, written for this measurement against mxnb."""

import contextlib
import functools
import multiprocessing
import random
from tempfile import TemporaryDirectory  # noqa: F401  (the test files import it from here)

import numpy as np
import pytest

import mxnb as mx


def with_seed(seed=None):
    def decorate(function):
        @functools.wraps(function)
        def wrapper(*args, **kwargs):
            value = np.random.randint(0, 2**31) if seed is None else seed
            np.random.seed(value)
            random.seed(value)
            return function(*args, **kwargs)

        return wrapper

    return decorate


@contextlib.contextmanager
def random_seed(seed=None):
    """Seed numpy, Python and mx.random inside the block (``None``: a seed from OS entropy).

    On exit all three continue from a seed drawn from the outer numpy stream before
    the block, so the code after it does not depend on what the block drew."""
    next_seed = int(np.random.randint(0, 2**31 - 1))
    if seed is None:
        seed = int(np.random.default_rng().integers(0, 2**31 - 1))
    np.random.seed(seed)
    random.seed(seed)
    mx.random.seed(seed)
    try:
        yield
    finally:
        np.random.seed(next_seed)
        random.seed(next_seed)
        mx.random.seed(next_seed)


def run_in_spawned_process(func, env, *args):
    """Run ``func(*args)`` in a fresh process with ``env`` added to its environment."""
    import os

    saved = dict(os.environ)
    os.environ.update(env)
    try:
        process = multiprocessing.get_context("spawn").Process(target=func, args=args)
        process.start()
        process.join()
        assert process.exitcode == 0, f"{func.__name__} failed in a spawned process"
    finally:
        os.environ.clear()
        os.environ.update(saved)
    return True


def setup_module():
    pass


def teardown():
    pass


def teardown_module():
    pass


def assertRaises(expected_exception, func, *args, **kwargs):
    with pytest.raises(expected_exception):
        func(*args, **kwargs)


def assert_raises_cudnn_not_satisfied(min_version):
    return lambda function: function


def assert_raises_cuda_not_satisfied(min_version):
    return lambda function: function


def xfail_when_nonstandard_decimal_separator(function):
    return function


def with_environment(*args):
    return mx.test_utils.environment(*args)


def retry(n):
    return lambda function: function


class models:
    """The two small networks MXNet's tests build (an MLP and a conv net)."""

    @staticmethod
    def mlp2():
        data = mx.symbol.Variable("data")
        out = mx.symbol.FullyConnected(data=data, name="fc1", num_hidden=1000)
        out = mx.symbol.Activation(data=out, act_type="relu")
        out = mx.symbol.FullyConnected(data=out, name="fc2", num_hidden=10)
        return out

    @staticmethod
    def conv():
        data = mx.symbol.Variable("data")
        conv1 = mx.symbol.Convolution(
            data=data, name="conv1", num_filter=32, kernel=(3, 3), stride=(2, 2)
        )
        bn1 = mx.symbol.BatchNorm(data=conv1, name="bn1")
        act1 = mx.symbol.Activation(data=bn1, name="relu1", act_type="relu")
        mp1 = mx.symbol.Pooling(
            data=act1, name="mp1", kernel=(2, 2), stride=(2, 2), pool_type="max"
        )
        conv2 = mx.symbol.Convolution(
            data=mp1, name="conv2", num_filter=32, kernel=(3, 3), stride=(2, 2)
        )
        bn2 = mx.symbol.BatchNorm(data=conv2, name="bn2")
        act2 = mx.symbol.Activation(data=bn2, name="relu2", act_type="relu")
        mp2 = mx.symbol.Pooling(
            data=act2, name="mp2", kernel=(2, 2), stride=(2, 2), pool_type="max"
        )
        fl = mx.symbol.Flatten(data=mp2, name="flatten")
        fc2 = mx.symbol.FullyConnected(data=fl, name="fc2", num_hidden=10)
        softmax = mx.symbol.SoftmaxOutput(data=fc2, name="sm")
        return softmax
