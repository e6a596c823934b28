"""Binding the same symbol again reuses its planned graph, and only for the same question."""

import numpy as np

import mxnb as mx
from mxnb.executor import plan_cache


def _net():
    x = mx.sym.Variable("x")
    return mx.sym.Activation(mx.sym.FullyConnected(x, num_hidden=3, name="fc"), act_type="relu")


def test_the_same_question_gets_the_same_plan_and_fresh_arrays():
    net = _net()
    first = net.simple_bind(mx.cpu(), x=(2, 4))
    again = net.simple_bind(mx.cpu(), x=(2, 4))
    assert again.memory_plan is first.memory_plan
    assert again.arg_dict["x"] is not first.arg_dict["x"]
    for exe, value in ((first, 1.0), (again, -1.0)):
        exe.arg_dict["x"][:] = value
        exe.arg_dict["fc_weight"][:] = 1.0
        exe.arg_dict["fc_bias"][:] = 0.0
        exe.forward(is_train=True)
        exe.backward(mx.nd.ones((2, 3)))
    assert first.outputs[0].asnumpy().tolist() == [[4.0] * 3] * 2
    assert again.outputs[0].asnumpy().tolist() == [[0.0] * 3] * 2
    assert (first.grad_dict["x"].asnumpy() == 3).all() and (
        again.grad_dict["x"].asnumpy() == 0
    ).all()


def test_a_different_question_is_planned_again():
    net = _net()
    base = net.simple_bind(mx.cpu(), x=(2, 4)).memory_plan
    assert net.simple_bind(mx.cpu(), x=(5, 4)).memory_plan is not base
    assert net.simple_bind(mx.cpu(), x=(2, 4), grad_req="null").memory_plan is not base
    assert net.simple_bind(mx.cpu(), x=(2, 4), type_dict={"x": "float64"}).memory_plan is not base
    args = {"x": mx.nd.ones((2, 4)), "fc_weight": mx.nd.ones((3, 4)), "fc_bias": mx.nd.ones(3)}
    grads = {name: mx.nd.zeros(array.shape) for name, array in args.items()}
    write = net.bind(mx.cpu(), args, args_grad=grads, grad_req="write").memory_plan
    add = net.bind(mx.cpu(), args, args_grad=grads, grad_req={"x": "add"}).memory_plan
    assert write is not add
    assert net.bind(mx.cpu(), args, args_grad=grads, grad_req="write").memory_plan is write


def test_editing_the_symbol_or_the_mirror_switch_plans_again(monkeypatch):
    net = _net()
    before = net.simple_bind(mx.cpu(), x=(2, 4)).memory_plan
    net._set_attr(force_mirroring="True")
    edited = net.simple_bind(mx.cpu(), x=(2, 4)).memory_plan
    assert edited is not before
    monkeypatch.setenv("MXNB_BACKWARD_DO_MIRROR", "1")
    assert net.simple_bind(mx.cpu(), x=(2, 4)).memory_plan is not edited
    rebuilt = _net()  # equal text, other nodes: its own entry
    assert rebuilt.simple_bind(mx.cpu(), x=(2, 4)).memory_plan is not before


def test_large_symbols_are_not_kept_and_the_cache_is_bounded(monkeypatch):
    monkeypatch.setattr(plan_cache, "MAX_NODES", 3)
    net = _net()
    assert net.simple_bind(mx.cpu(), x=(2, 4)).memory_plan is not (
        net.simple_bind(mx.cpu(), x=(2, 4)).memory_plan
    )
    monkeypatch.setattr(plan_cache, "MAX_NODES", 512)
    monkeypatch.setattr(plan_cache, "SIZE", 2)
    plan_cache.clear()
    for batch in (1, 2, 3):
        net.simple_bind(mx.cpu(), x=(batch, 4))
    assert len(plan_cache._CACHE) == 2
    plan_cache.clear()
    assert not plan_cache._CACHE
    np.testing.assert_equal(net.simple_bind(mx.cpu(), x=(1, 4)).forward()[0].shape, (1, 3))
