"""``Engine.try_delete_idle``: the light path of a delete, taken only when nothing is pending."""

from __future__ import annotations

import threading

import pytest

import mxnb as mx
from mxnb.base import VarDeletedError


@pytest.mark.timeout(30)
def test_an_idle_var_is_deleted_at_once_and_refuses_later_pushes(engine):
    var = engine.new_var(name="tmp")
    engine.push_sync(lambda rctx: None, mx.cpu(), mutate_vars=[var], name="fill")
    engine.wait_for_var(var)
    if engine.kind == "step":
        assert not engine.try_delete_idle(var)  # the step engine shows every delete as an op
        return
    assert engine.try_delete_idle(var)
    with pytest.raises(VarDeletedError):
        engine.push_sync(lambda rctx: None, mx.cpu(), const_vars=[var], name="late")
    assert not engine.try_delete_idle(var)  # deleted once only


@pytest.mark.timeout(30)
def test_a_var_with_a_pending_write_is_left_to_push_delete(threaded_engine):
    r"""
    blocker      writes var, held until released
    try_delete   must refuse: the write is pending
    """
    var = threaded_engine.new_var(name="busy")
    release = threading.Event()
    threaded_engine.push_sync(lambda rctx: release.wait(10), mx.cpu(), mutate_vars=[var])
    assert not threaded_engine.try_delete_idle(var)
    release.set()
    threaded_engine.wait_for_var(var)
    assert threaded_engine.try_delete_idle(var)


@pytest.mark.timeout(30)
def test_no_light_delete_while_a_trace_records(engine):
    var = engine.new_var(name="traced")
    with mx.engine.trace():
        assert not engine.try_delete_idle(var)
    assert engine.try_delete_idle(var) == (engine.kind != "step")
