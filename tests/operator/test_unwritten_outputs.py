"""Debug mode finds kernels that leave (part of) an output they must overwrite unwritten.

Specification: under ``mx.engine.debug()``, in the imperative invoke and in
the executor, a float output with req 'write' that a kernel leaves partly or
wholly unwritten raises :class:`OpError` naming the op, the output and how
many elements; in-place outputs (sharing the input's memory) and complete
kernels pass; outside debug mode nothing is checked (no cost).
"""

from __future__ import annotations

import pytest

import mxnb as mx
from mxnb import operator as op
from mxnb.base import OpError


def _half_kernel(src, env, ret, req, run_ctx):
    ret[: ret.shape[0] // 2] = src[: ret.shape[0] // 2] * 2  # forgets the second half


def _full_kernel(src, env, ret, req, run_ctx):
    op.assign(ret, req, src * 2)


op.simple_op("test_half_written").set_function(_half_kernel)
op.simple_op("test_fully_written").set_function(_full_kernel)


def test_debug_mode_names_an_output_left_partly_unwritten():
    x = mx.nd.ones((4,))
    with mx.engine.debug():
        with pytest.raises(OpError, match=r"left 2 of 4 element\(s\) of output 'output'"):
            mx.nd.test_half_written(x).asnumpy()
        assert mx.nd.test_fully_written(x).asnumpy().tolist() == [2.0] * 4
        y = mx.nd.ones((3,))
        y += 1  # in place: the output is the input, never poisoned
        assert y.asnumpy().tolist() == [2.0] * 3


def test_debug_mode_checks_the_executor_too():
    net = mx.sym.test_half_written(mx.sym.var("x"), name="half")
    exe = net.simple_bind(mx.cpu(), x=(4,), grad_req="null")
    with mx.engine.debug():
        with pytest.raises(OpError, match="half"):
            exe.forward()[0].asnumpy()


def test_outside_debug_mode_nothing_is_checked():
    out = mx.nd.test_half_written(mx.nd.ones((4,))).asnumpy()
    assert out[:2].tolist() == [2.0, 2.0]
