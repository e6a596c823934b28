"""Module checks names and parameters at bind (issue 37): no training on a label nobody feeds.

Specification: the labels bound are the module's ``label_names`` and inputs of
the symbol (MXNet warns, then trains on an all-zero label); training needs the
labels the symbol reads; every parameter has a value when a loaded module is
bound; unknown parameters are refused unless ``allow_extra``; ``fit`` over an
iterator with no batch names the problem (MXNet 1.9.1 leaks StopIteration).
"""

from __future__ import annotations

import numpy as np
import pytest

import mxnb as mx
from mxnb.base import MXNBError


def _net():
    fc = mx.sym.FullyConnected(mx.sym.Variable("data"), num_hidden=3, name="fc")
    return mx.sym.SoftmaxOutput(fc, name="softmax")


def _iter(label_name="softmax_label"):
    rng = np.random.RandomState(0)
    x = rng.rand(12, 4).astype("float32")
    y = (x.sum(axis=1) > 2).astype("float32") + 1
    return mx.io.NDArrayIter(x, y, batch_size=4, label_name=label_name)


def test_an_iterator_label_of_another_name_is_refused_at_bind():
    mod = mx.mod.Module(_net(), context=mx.cpu())
    with pytest.raises(MXNBError, match=r"named \['lbl'\] but the module's label_names are"):
        mod.fit(_iter("lbl"), num_epoch=1)
    assert not mod.binded


def test_a_module_named_after_the_iterator_trains():
    fc = mx.sym.FullyConnected(mx.sym.Variable("data"), num_hidden=3, name="fc")
    net = mx.sym.SoftmaxOutput(fc, mx.sym.Variable("lbl"), name="softmax")
    mod = mx.mod.Module(net, label_names=["lbl"], context=mx.cpu())
    mod.fit(_iter("lbl"), num_epoch=2, optimizer_params={"learning_rate": 0.5})
    predicted = mod.predict(_iter("lbl")).asnumpy().argmax(axis=1)
    assert set(predicted.tolist()) != {0}  # trained on the real labels (1 and 2)


def test_training_without_the_labels_the_symbol_reads_is_refused():
    mod = mx.mod.Module(_net(), context=mx.cpu())
    with pytest.raises(MXNBError, match=r"no label shapes.*\['softmax_label'\]"):
        mod.bind([("data", (4, 4))], for_training=True)
    mod.bind([("data", (4, 4))], for_training=False)  # predicting needs no label
    assert mod.binded


def test_a_loaded_checkpoint_missing_a_weight_is_refused_at_bind(tmp_path):
    prefix = str(tmp_path / "m")
    mod = mx.mod.Module(_net(), context=mx.cpu())
    mod.fit(_iter(), num_epoch=1)
    mod.save_checkpoint(prefix, 1)
    params = mx.nd.load(prefix + "-0001.params")
    del params["arg:fc_weight"]
    mx.nd.save(prefix + "-0001.params", params)
    loaded = mx.mod.Module.load(prefix, 1, context=mx.cpu())
    with pytest.raises(MXNBError, match=r"no value for \['fc_weight'\]"):
        loaded.bind(_iter().provide_data, _iter().provide_label, for_training=False)


def test_extra_parameters_are_refused_unless_allowed():
    mod = mx.mod.Module(_net(), context=mx.cpu())
    mod.bind([("data", (4, 4))], [("softmax_label", (4,))])
    mod.init_params()
    args, auxs = mod.get_params()
    extra = dict(args, fc2_weight=mx.nd.ones((2, 2)))
    with pytest.raises(MXNBError, match=r"\['fc2_weight'\] are not parameters"):
        mod.set_params(extra, auxs)  # MXNet 1.9.1 ignores it silently
    mod.set_params(extra, auxs, allow_extra=True)


def test_fit_over_an_iterator_with_no_batch_names_it():
    it = _iter()
    for _ in it:
        pass
    mod = mx.mod.Module(_net(), context=mx.cpu())
    with pytest.raises(MXNBError, match="gave no batch in epoch 0.*reset"):
        mod.fit(it, num_epoch=1)
