"""A forked child gets a fresh engine of the parent's kind (MXNet's at-fork handling).

Specification: after ``fork()`` the child's pushes run (the parent's worker
threads do not exist there), custom operators included, and the parent's
engine is untouched.
"""

from __future__ import annotations

import multiprocessing

import pytest

import mxnb as mx

pytestmark = pytest.mark.timeout(120)


class _Add(mx.operator.CustomOp):
    def forward(self, is_train, req, in_data, out_data, aux):
        self.assign(out_data[0], req[0], in_data[0] + in_data[1])

    def backward(self, req, out_grad, in_data, out_data, in_grad, aux):
        self.assign(in_grad[0], req[0], out_grad[0])
        self.assign(in_grad[1], req[1], out_grad[0])


@mx.operator.register("fork_test_add")
class _AddProp(mx.operator.CustomOpProp):
    def list_arguments(self):
        return ["a", "b"]

    def infer_shape(self, in_shape):
        return in_shape, [in_shape[0]], []

    def create_operator(self, ctx, shapes, dtypes):
        return _Add()


def _custom_add() -> None:
    a, b = mx.nd.array([1.0, 2.0, 3.0]), mx.nd.array([4.0, 5.0, 6.0])
    out = mx.nd.Custom(a, b, op_type="fork_test_add")
    assert out.asnumpy().tolist() == (a + b).asnumpy().tolist() == [5.0, 7.0, 9.0]


@pytest.mark.parametrize("kind", ["threaded_per_device", "threaded", "naive"])
def test_a_forked_child_runs_ops_on_a_fresh_engine(kind):
    old = mx.engine.engine_type()
    mx.engine.set_engine(kind)
    try:
        _custom_add()  # the parent's workers exist and have run ops
        parent_engine = mx.engine.get()
        child = multiprocessing.get_context("fork").Process(target=_custom_add, daemon=True)
        child.start()
        child.join(60)
        alive = child.is_alive()
        if alive:
            child.kill()
        assert not alive and child.exitcode == 0
        assert mx.engine.get() is parent_engine  # the parent keeps its engine
        _custom_add()
    finally:
        mx.engine.set_engine(old)
