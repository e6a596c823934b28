"""MXNet 1.x names that user code and MXNet's tests import: they exist and behave."""

import os
import threading

import numpy as np
import pytest

import mxnb as mx
from mxnb.ndarray.ndarray import py_slice


def test_mxnet_error_is_the_root_error():
    assert mx.MXNetError is mx.base.MXNetError is mx.MXNBError
    with pytest.raises(mx.MXNetError):
        mx.sym.FullyConnected(mx.sym.Variable("x"), num_hidden=2).infer_shape(
            x=(2, 3), fullyconnected0_weight=(5, 5)
        )


def test_base_helpers():
    assert mx.base._as_list(1) == [1]
    assert mx.base._as_list((1, 2)) == [1, 2]
    same = [3]
    assert mx.base._as_list(same) is same
    assert mx.base.py_str(b"abc") == "abc" and mx.base.py_str("abc") == "abc"
    assert isinstance(np.int64(3), mx.base.integer_types)
    assert not isinstance(3.0, mx.base.integer_types)
    assert mx.base.mx_real_t is np.float32
    assert py_slice is slice


def test_np_shape_scope_is_per_thread_and_restored():
    assert not mx.util.is_np_shape()
    seen = []
    with mx.util.np_shape(True):
        assert mx.util.is_np_shape()
        thread = threading.Thread(target=lambda: seen.append(mx.util.is_np_shape()))
        thread.start()
        thread.join(timeout=10)
    assert seen == [False]
    assert not mx.util.is_np_shape()
    assert mx.util.set_np_shape(True) is False
    assert mx.util.set_np_shape(False) is True


def test_use_np_shape_decorator():
    @mx.util.use_np_shape
    def inside():
        return mx.util.is_np_shape()

    assert inside() is True
    assert mx.util.is_np_shape() is False


def test_runtime_features():
    features = mx.runtime.Features()
    assert "CUDA" in features and "MKLDNN" in features
    assert features.is_enabled("mkldnn") is False
    with pytest.raises(mx.MXNetError, match="unknown feature"):
        features.is_enabled("WARP_DRIVE")


def test_name_and_attribute_modules():
    assert mx.name.NameManager is mx.sym.NameManager
    assert mx.AttrScope is mx.attribute.AttrScope is mx.sym.AttrScope
    with mx.AttrScope(group="4"):
        assert mx.sym.Variable("data").attr("group") == "4"
    with mx.name.Prefix("p_"):
        assert mx.sym.Activation(mx.sym.Variable("d"), act_type="relu").name.startswith("p_")


def test_internal_namespaces_reach_underscore_ops():
    out = mx.nd._internal._plus_scalar(mx.nd.ones(3), scalar=2.0)
    assert out.asnumpy().tolist() == [3.0, 3.0, 3.0]
    sym = mx.sym._internal._mul_scalar(mx.sym.Variable("x"), scalar=3.0)
    assert sym.list_arguments() == ["x"]
    with pytest.raises(AttributeError):
        mx.nd._internal._no_such_op  # noqa: B018


def test_engine_bulk_keeps_results_and_restores_size():
    previous = mx.engine.set_bulk_size(0)
    with mx.engine.bulk(10):
        x = mx.nd.ones((4,))
        for _ in range(20):
            x += 1
        assert mx.engine.set_bulk_size(10) == 10
    assert (x.asnumpy() == 21).all()
    assert mx.engine.set_bulk_size(previous) == 0


def test_load_frombuffer_round_trip(tmp_path):
    path = tmp_path / "a.nd"
    mx.nd.save(str(path), {"w": mx.nd.array([1.0, 2.0])})
    loaded = mx.nd.load_frombuffer(path.read_bytes())
    assert list(loaded) == ["w"] and loaded["w"].asnumpy().tolist() == [1.0, 2.0]
    with pytest.raises(mx.MXNetError, match="<buffer>"):
        mx.nd.load_frombuffer(b"not an ndarray file at all")


def test_from_numpy_copies_values_and_dtype():
    source = np.arange(6, dtype=np.float64).reshape(2, 3)
    array = mx.nd.from_numpy(source)
    assert array.dtype == np.float64 and array.asnumpy().tolist() == source.tolist()
    with pytest.raises(mx.MXNetError, match="C-contiguous"):
        mx.nd.from_numpy(source.T)


def test_inplace_flag_of_shape_methods():
    x = mx.nd.array(np.arange(6, dtype=np.float32).reshape(2, 3, 1))
    assert x.expand_dims(0, inplace=True).shape == (1, 2, 3, 1)
    assert x.squeeze(inplace=True).shape == (2, 3)
    flat = x.flatten(inplace=True)
    assert flat.shape == (2, 3)
    flat[:] = 7
    assert (x.asnumpy() == 7).all()  # a view: MXNet's inplace=True shares memory


def test_set_default_context_per_thread():
    seen = []

    def other():
        mx.test_utils.set_default_context(mx.cpu(3))
        seen.append(mx.current_context())
        with mx.cpu(1):
            seen.append(mx.current_context())
        seen.append(mx.test_utils.default_context())

    thread = threading.Thread(target=other)
    thread.start()
    thread.join(timeout=10)
    assert seen == [mx.cpu(3), mx.cpu(1), mx.cpu(3)]
    assert mx.current_context() == mx.cpu(0)


def test_environment_sets_and_restores():
    os.environ.pop("MXNB_TEST_ENV_A", None)
    os.environ["MXNB_TEST_ENV_B"] = "keep"
    with mx.test_utils.environment({"MXNB_TEST_ENV_A": "1", "MXNB_TEST_ENV_B": None}):
        assert os.environ["MXNB_TEST_ENV_A"] == "1"
        assert "MXNB_TEST_ENV_B" not in os.environ
    assert "MXNB_TEST_ENV_A" not in os.environ
    assert os.environ.pop("MXNB_TEST_ENV_B") == "keep"
    with mx.test_utils.EnvManager("MXNB_TEST_ENV_A", "2"):
        assert os.environ["MXNB_TEST_ENV_A"] == "2"
    assert "MXNB_TEST_ENV_A" not in os.environ


def test_bool_of_a_symbol_raises_not_implemented_for_symbol():
    x = mx.sym.Variable("x")
    with pytest.raises(mx.base.NotImplementedForSymbol, match="bool"):
        bool(x)
    assert issubclass(mx.base.NotImplementedForSymbol, mx.MXNetError)
    assert len(x) == 1  # still a sequence of outputs


def test_hidden_attributes_are_listed_under_both_names():
    data = mx.sym.Variable("data", lr_mult=2)
    conv = mx.sym.Convolution(
        data=data, name="conv", kernel=(1, 1), num_filter=1, attr={"wd_mult": "x"}, lr_mult=1
    )
    listed = conv.list_attr()
    assert listed["wd_mult"] == listed["__wd_mult__"] == "x"
    assert listed["lr_mult"] == listed["__lr_mult__"] == "1"
    assert conv.attr_dict()["data"] == {"__lr_mult__": "2", "lr_mult": "2"}
    assert '"lr_mult"' not in conv.tojson()  # the file keeps MXNet's single hidden key


def test_discard_stderr_silences_file_descriptor_2(capfd):
    with mx.test_utils.discard_stderr():
        os.write(2, b"hidden\n")  # what C code and subprocesses write
    os.write(2, b"shown\n")
    assert capfd.readouterr().err == "shown\n"


def test_use_np_decorates_but_refuses_to_run():
    @mx.test_utils.use_np
    def needs_np_arrays():
        return 1

    with pytest.raises(mx.MXNetError, match="needs_np_arrays.*mx.np"):
        needs_np_arrays()


def _in_thread(function):
    result = []
    thread = threading.Thread(target=lambda: result.append(function()))
    thread.start()
    thread.join(timeout=60)
    return result[0]


def test_current_scopes_are_assignable_class_attributes_per_thread():
    from mxnb.attribute import AttrScope
    from mxnb.name import NameManager

    before_name, before_attr = NameManager.current, AttrScope.current
    try:
        NameManager.current = NameManager()
        NameManager.current.get(None, "main_thread")
        assert NameManager.current() is NameManager.current  # the older call spelling
        assert "main_thread" not in _in_thread(lambda: NameManager.current._counter)
        assert "main_thread" in NameManager.current._counter
        AttrScope.current = AttrScope(y="hi")
        assert _in_thread(lambda: AttrScope.current._attr) == {}
        assert mx.sym.Variable("v").attr("y") == "hi"
    finally:
        NameManager.current, AttrScope.current = before_name, before_attr


def test_context_default_ctx_and_device_type_codes():
    from mxnb.context import Context

    try:
        Context.default_ctx = Context("cpu", 3)
        assert Context.default_ctx == mx.cpu(3) == mx.current_context()
        assert _in_thread(lambda: Context.default_ctx) == mx.cpu(0)
        with mx.cpu(5):
            assert Context.default_ctx == mx.cpu(5)
    finally:
        Context.default_ctx = mx.cpu(0)
    assert [Context.devtype2str[c.device_typeid] for c in (mx.cpu(), mx.gpu(1))] == ["cpu", "gpu"]


def test_internal_bind_names():
    a, b = mx.sym.var("a"), mx.sym.var("b")
    out = (a + b)._bind(mx.cpu(), args={"a": mx.nd.ones((2,)), "b": mx.nd.ones((2,))}).forward()
    assert out[0].asnumpy().tolist() == [2.0, 2.0]
    assert (a * 2)._simple_bind(mx.cpu(), a=(3,)).forward()[0].shape == (3,)
