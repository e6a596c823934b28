"""An unrolled LSTM language model, as MXNet's ``example/rnn/old/lstm.py``.

Example::

    >>> from mxnb.executor.zoo import lstm
    >>> net = lstm.lstm_unrolled(num_layers=1, seq_len=2, num_hidden=4, num_embed=4, num_classes=5)
    >>> net.list_outputs()
    ['softmax_output']
"""

from __future__ import annotations

from typing import Any

from .symbols import default_symbol as _default

__all__ = ["lstm_shapes", "lstm_unrolled"]


def lstm_unrolled(
    num_layers: int = 2,
    seq_len: int = 35,
    num_hidden: int = 200,
    num_embed: int = 200,
    num_classes: int = 10000,
    sym: Any = None,
) -> Any:
    """An LSTM unrolled over ``seq_len`` steps, as MXNet's ``example/rnn/old/lstm.py``.

    Inputs: ``data`` (batch, seq_len, num_embed) (the embedded words),
    ``l{i}_init_c`` / ``l{i}_init_h`` (batch, num_hidden) and ``softmax_label``
    (seq_len * batch,).  Weights are shared across time steps, so their
    gradients are sums over the steps.  Each cell is FullyConnected +
    elementwise ops: gates = i2h(x) + h2h(h); c = f*c + i*g; h = o*tanh(c).
    """
    sym = _default(sym)
    params = [
        {
            key: sym.Variable(f"l{layer}_{key}")
            for key in ("i2h_weight", "i2h_bias", "h2h_weight", "h2h_bias")
        }
        for layer in range(num_layers)
    ]
    states = [
        (sym.Variable(f"l{layer}_init_c"), sym.Variable(f"l{layer}_init_h"))
        for layer in range(num_layers)
    ]
    data = sym.Variable("data")
    words = sym.SliceChannel(
        data=data, num_outputs=seq_len, axis=1, squeeze_axis=True, name="slice"
    )
    hidden_all = []
    for step in range(seq_len):
        hidden = words[step]
        for layer in range(num_layers):
            prefix = f"t{step}_l{layer}"
            next_c, next_h = _lstm_cell(
                sym, hidden, states[layer], params[layer], num_hidden, prefix
            )
            states[layer] = (next_c, next_h)
            hidden = next_h
        hidden_all.append(hidden)
    concat = sym.Concat(*hidden_all, dim=0, name="concat")
    pred = sym.FullyConnected(data=concat, num_hidden=num_classes, name="pred")
    return sym.SoftmaxOutput(data=pred, name="softmax")


def _lstm_cell(
    sym: Any, hidden: Any, state: tuple, param: dict, num_hidden: int, prefix: str
) -> Any:
    """One cell at one step: gates = i2h(x) + h2h(h); c = f*c + i*g; h = o*tanh(c)."""
    prev_c, prev_h = state
    i2h = sym.FullyConnected(
        data=hidden, weight=param["i2h_weight"], bias=param["i2h_bias"],
        num_hidden=num_hidden * 4, name=f"{prefix}_i2h",
    )  # fmt: skip
    h2h = sym.FullyConnected(
        data=prev_h, weight=param["h2h_weight"], bias=param["h2h_bias"],
        num_hidden=num_hidden * 4, name=f"{prefix}_h2h",
    )  # fmt: skip
    gates = i2h + h2h
    parts = sym.SliceChannel(data=gates, num_outputs=4, name=f"{prefix}_slice")
    in_gate = sym.Activation(data=parts[0], act_type="sigmoid")
    in_transform = sym.Activation(data=parts[1], act_type="tanh")
    forget_gate = sym.Activation(data=parts[2], act_type="sigmoid")
    out_gate = sym.Activation(data=parts[3], act_type="sigmoid")
    next_c = (forget_gate * prev_c) + (in_gate * in_transform)
    next_h = out_gate * sym.Activation(data=next_c, act_type="tanh")
    return next_c, next_h


def lstm_shapes(
    batch: int, num_layers: int = 2, seq_len: int = 35, num_hidden: int = 200, num_embed: int = 200
) -> dict[str, tuple]:
    """The input shapes of :func:`lstm_unrolled` built with these sizes, at ``batch``: the
    embedded words, each layer's begin states and the labels."""
    shapes: dict[str, tuple] = {"data": (batch, seq_len, num_embed)}
    for layer in range(num_layers):
        shapes[f"l{layer}_init_c"] = shapes[f"l{layer}_init_h"] = (batch, num_hidden)
    return {**shapes, "softmax_label": (batch * seq_len,)}
