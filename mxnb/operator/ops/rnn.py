"""The fused ``RNN`` operator: a whole multi-layer, maybe bidirectional RNN / LSTM / GRU in one op.

Idea (MXNet: ``src/operator/rnn-inl.h``, the cuDNN-compatible layer): one
operator takes the sequence ``data (T, N, I)``, every weight packed into
one flat ``parameters`` vector, and the begin states ``state (L*D, N, H)``
(and ``state_cell`` for an LSTM), and returns ``output (T, N, D*H)`` plus,
with ``state_outputs``, the final states.  ``mx.rnn.FusedRNNCell`` builds it;
``unfuse()`` turns it into the same network of cells.

Rule, the packed layout (cuDNN's, which MXNet keeps): first every weight
matrix, layer by layer, direction by direction, ``W`` (G*H, I_l) then ``R``
(G*H, H); then every bias the same way, ``b_W`` (G*H) then ``b_R`` (G*H).
G is the number of gates (rnn 1, gru 3, lstm 4), in the order LSTM i, f, g,
o and GRU r, z, n; I_l is I for layer 0, D*H above.  GRU's new gate is
``tanh(W_n x + b_Wn + r * (R_n h + b_Rn))``.

Backward is backpropagation through time.  It recomputes the forward
activations from the inputs instead of keeping them as hidden outputs, so
the memory plan holds only what a user sees (what MXNet keeps in a
reserved workspace).  Dropout ``p`` between layers (training only, as
MXNet) is the one exception: its masks are a hidden output,
``dropout_mask (L-1, T, N, D*H)``, so backward sees the masks forward drew.

Example::

    >>> import numpy as np
    >>> from mxnb.operator.ops.rnn import packed_size
    >>> packed_size('lstm', num_layers=1, input_size=3, hidden=2, directions=1)  # 4 gates
    56
"""

from __future__ import annotations

from typing import Any

from ...base import NotSupportedError
from ..base import ResourceRequest
from ..param import ANY, Param
from ..partial import merge, partial_shape
from ..registry import register
from ._common import KernelProp, write

__all__ = ["RNNProp", "packed_size", "unpack_parameters"]

GATES = {"rnn_relu": 1, "rnn_tanh": 1, "lstm": 4, "gru": 3}


def packed_size(mode: str, num_layers: int, input_size: int, hidden: int, directions: int) -> int:
    """Length of the ``parameters`` vector for these sizes."""
    gates = GATES[mode]
    size = 0
    for layer in range(num_layers):
        width = input_size if layer == 0 else directions * hidden
        size += directions * gates * hidden * (width + hidden + 2)
    return size


def _input_size_from(mode: str, num_layers: int, total: int, hidden: int, directions: int) -> int:
    """Invert :func:`packed_size` for the input size (0 when it does not divide)."""
    rest = total - packed_size(mode, num_layers, 0, hidden, directions)
    per_input = directions * GATES[mode] * hidden
    if rest <= 0 or rest % per_input:
        return 0
    return rest // per_input


def unpack_parameters(
    xp: Any, flat: Any, mode: str, num_layers: int, input_size: int, hidden: int, directions: int
) -> list[list[tuple[Any, Any, Any, Any]]]:
    """Views ``[layer][direction] -> (W, R, b_W, b_R)`` into the packed vector."""
    gates = GATES[mode]
    rows = gates * hidden
    position = 0
    weights: list[list[list[Any]]] = []
    for layer in range(num_layers):
        width = input_size if layer == 0 else directions * hidden
        per_layer = []
        for _ in range(directions):
            w = flat[position : position + rows * width].reshape(rows, width)
            position += rows * width
            r = flat[position : position + rows * hidden].reshape(rows, hidden)
            position += rows * hidden
            per_layer.append([w, r])
        weights.append(per_layer)
    for layer in range(num_layers):
        for direction in range(directions):
            weights[layer][direction].append(flat[position : position + rows])
            position += rows
            weights[layer][direction].append(flat[position : position + rows])
            position += rows
    return [[tuple(entry) for entry in per_layer] for per_layer in weights]  # type: ignore[misc]


def _sigmoid(xp: Any, x: Any) -> Any:
    return 1.0 / (1.0 + xp.exp(-x))


@register("RNN")
class RNNProp(KernelProp):
    """A fused multi-layer RNN (modes rnn_relu, rnn_tanh, lstm, gru), maybe bidirectional."""

    state_size = Param(int, low=1, doc="Hidden units per layer and direction (H).")
    num_layers = Param(int, low=1, doc="Number of stacked layers (L).")
    bidirectional = Param(bool, default=False, doc="Also run each layer backward in time.")
    mode = Param(str, choices=("rnn_relu", "rnn_tanh", "lstm", "gru"), doc="The cell type.")
    p = Param(float, default=0.0, low=0.0, high=1.0, doc="Dropout between layers (training).")
    state_outputs = Param(bool, default=False, doc="Also return the final states.")
    projection_size = Param(int, default=None, optional=True, low=1, doc="Unsupported (LSTMP).")
    lstm_state_clip_min = Param(
        float, default=None, optional=True, unbounded=ANY, doc="Clip c from below."
    )
    lstm_state_clip_max = Param(
        float, default=None, optional=True, unbounded=ANY, doc="Clip c from above."
    )
    lstm_state_clip_nan = Param(bool, default=False, doc="Unsupported.")
    use_sequence_length = Param(bool, default=False, doc="Unsupported (variable lengths).")

    def init(self, kwargs: dict[str, Any]) -> None:
        """Parse; refuse what is not implemented, naming the parameter."""
        super().init(kwargs)
        for name in ("projection_size", "use_sequence_length", "lstm_state_clip_nan"):
            if self._param_values.get(name):
                raise NotSupportedError(f"RNN: {name} is not supported by mxnb")

    @property
    def directions(self) -> int:
        """2 when bidirectional, else 1."""
        return 2 if self.bidirectional else 1

    def list_arguments(self):
        """``data, parameters, state`` (+ ``state_cell`` for an LSTM)."""
        names = ["data", "parameters", "state"]
        return names + ["state_cell"] if self.mode == "lstm" else names

    @property
    def has_dropout(self) -> bool:
        """Whether dropout acts between layers (p > 0 and more than one layer)."""
        return self.p > 0 and self.num_layers > 1

    def list_outputs(self):
        """``output`` (+ ``state_output``, ``statecell_output`` with state_outputs).

        With dropout between layers a hidden ``dropout_mask`` comes last.
        """
        names = ["output"]
        if self.state_outputs:
            names.append("state_output")
            if self.mode == "lstm":
                names.append("statecell_output")
        return names + ["dropout_mask"] if self.has_dropout else names

    def num_visible_outputs(self):
        """Every output but the hidden dropout mask."""
        return self.num_outputs() - (1 if self.has_dropout else 0)

    def forward_resource(self, in_shape):
        """The RANDOM resource when dropout draws masks."""
        return [ResourceRequest.RANDOM] if self.has_dropout else []

    @partial_shape
    def infer_shape(self, in_shape, out_shape=None):
        """data (T, N, I), state (L*D, N, H), output (T, N, D*H); known dims flow both ways."""
        hidden, layers, dirs = self.state_size, self.num_layers, self.directions
        outs = list(out_shape or [None] * self.num_outputs())
        data = merge(in_shape[0], (0, 0, 0), "data (T, N, I)")
        data = merge(data, None if outs[0] is None else tuple(outs[0][:2]) + (0,), "data")
        states = [in_shape[2], *(in_shape[3:4] if self.mode == "lstm" else [])]
        states += [shape for shape in outs[1:]]
        state = merge((layers * dirs, data[1], hidden), None, "state")
        for given in states:
            state = merge(state, given, f"state (num_layers*directions={layers * dirs}, N, H)")
        data = (data[0], state[1], data[2])
        total = 0 if in_shape[1] is None else int(in_shape[1][0])
        if data[2] == 0 and total:
            data = data[:2] + (_input_size_from(self.mode, layers, total, hidden, dirs),)
        params = (packed_size(self.mode, layers, data[2], hidden, dirs),) if data[2] else None
        params = merge(params, in_shape[1], "parameters")
        ins = [data, params, state] + ([state] if self.mode == "lstm" else [])
        output = (data[0], data[1], dirs * hidden)
        outs = [output] + [state] * (self.num_visible_outputs() - 1)
        if self.has_dropout:
            outs.append((layers - 1,) + output)
        return ins, outs, []

    def declare_backward_dependency(self, out_grad, in_data, out_data):
        """The head gradients and every input (backward recomputes the forward pass)."""
        visible = self.num_visible_outputs()
        masks = [out_data[visible]] if self.has_dropout else []
        return [*out_grad[:visible], *in_data, *masks]

    # -- computation -------------------------------------------------------------
    def _run(
        self, xp: Any, in_data: Any, keep: bool, masks: Any = None
    ) -> tuple[Any, list, list, list]:
        """Forward through every layer; with ``keep`` return each step's activations.

        ``masks[l]`` (if given) scales layer ``l``'s output before layer ``l + 1`` reads it.
        """
        x = in_data[0]
        steps, batch, input_size = x.shape
        hidden, dirs = self.state_size, self.directions
        weights = unpack_parameters(
            xp, in_data[1], self.mode, self.num_layers, input_size, hidden, dirs
        )
        h0 = in_data[2]
        c0 = in_data[3] if self.mode == "lstm" else None
        final_h, final_c, caches = [], [], []
        layer_input = x
        for layer in range(self.num_layers):
            outputs = xp.empty((steps, batch, dirs * hidden), dtype=x.dtype)
            layer_caches = []
            for direction in range(dirs):
                index = layer * dirs + direction
                h, c, out, cache = self._direction(
                    xp, layer_input, weights[layer][direction], h0[index],
                    None if c0 is None else c0[index], direction == 1, keep,
                )  # fmt: skip
                outputs[:, :, direction * hidden : (direction + 1) * hidden] = out
                final_h.append(h)
                final_c.append(c)
                layer_caches.append(cache)
            caches.append((layer_input, layer_caches))
            if masks is not None and layer < self.num_layers - 1:
                outputs = outputs * masks[layer]
            layer_input = outputs
        return layer_input, final_h, final_c, caches

    def _direction(self, xp, x, weight, h, c, reverse, keep):
        w, r, bw, br = weight
        steps = x.shape[0]
        hidden = self.state_size
        projected = (x.reshape(-1, x.shape[2]) @ w.T + bw).reshape(steps, x.shape[1], -1)
        out = xp.empty((steps, x.shape[1], hidden), dtype=x.dtype)
        cache = []
        order = range(steps - 1, -1, -1) if reverse else range(steps)
        for t in order:
            recurrent = h @ r.T + br
            gates = projected[t] + recurrent
            previous_h, previous_c = h, c
            if self.mode == "lstm":
                i = _sigmoid(xp, gates[:, :hidden])
                f = _sigmoid(xp, gates[:, hidden : 2 * hidden])
                g = xp.tanh(gates[:, 2 * hidden : 3 * hidden])
                o = _sigmoid(xp, gates[:, 3 * hidden :])
                c = f * c + i * g
                if self.lstm_state_clip_min is not None or self.lstm_state_clip_max is not None:
                    c = xp.clip(c, self.lstm_state_clip_min, self.lstm_state_clip_max)
                tanh_c = xp.tanh(c)
                h = o * tanh_c
                saved = (i, f, g, o, tanh_c)
            elif self.mode == "gru":
                z_r = _sigmoid(xp, gates[:, :hidden])
                z_u = _sigmoid(xp, gates[:, hidden : 2 * hidden])
                n = xp.tanh(projected[t][:, 2 * hidden :] + z_r * recurrent[:, 2 * hidden :])
                h = (1.0 - z_u) * n + z_u * h
                saved = (z_r, z_u, n, recurrent[:, 2 * hidden :])
            else:
                h = xp.maximum(gates, 0) if self.mode == "rnn_relu" else xp.tanh(gates)
                saved = (h,)
            out[t] = h
            if keep:
                cache.append((t, previous_h, previous_c, saved))
        return h, c, out, cache

    def forward(self, ctx, in_data, req, out_data, aux):
        """Run the layers; write the output and (with state_outputs) the final states."""
        xp = ctx.xp
        masks = None
        if self.has_dropout:
            masks = self._draw_masks(ctx, out_data[-1].shape, in_data[0].dtype)
            write(out_data[-1], req[-1], masks)
        output, final_h, final_c, _ = self._run(xp, in_data, keep=False, masks=masks)
        write(out_data[0], req[0], output)
        if self.state_outputs:
            write(out_data[1], req[1], xp.stack(final_h))
            if self.mode == "lstm":
                write(out_data[2], req[2], xp.stack(final_c))

    def _draw_masks(self, ctx: Any, shape: tuple, dtype: Any) -> Any:
        """Inverted-dropout masks in training (keep / (1 - p)); ones in inference."""
        xp = ctx.xp
        if not ctx.is_train:
            return xp.ones(shape, dtype=dtype)
        keep = 1.0 - self.p
        draws = xp.asarray(ctx.requested[0].generator.random(shape, dtype="float64"))
        return ((draws < keep) * (1.0 / keep if keep > 0 else 0.0)).astype(dtype)

    def backward(self, ctx, out_grad, in_data, out_data, req, in_grad, aux):
        """Backpropagation through time over the recomputed activations."""
        xp = ctx.xp
        masks = out_data[-1] if self.has_dropout else None
        _, _, _, caches = self._run(xp, in_data, keep=True, masks=masks)
        hidden, dirs = self.state_size, self.directions
        x = in_data[0]
        weights = unpack_parameters(
            xp, in_data[1], self.mode, self.num_layers, x.shape[2], hidden, dirs
        )
        grad_params = xp.zeros_like(in_data[1])
        grad_weights = unpack_parameters(
            xp, grad_params, self.mode, self.num_layers, x.shape[2], hidden, dirs
        )
        grad_h0 = xp.zeros_like(in_data[2])
        grad_c0 = xp.zeros_like(in_data[3]) if self.mode == "lstm" else None
        grad_hy = out_grad[1] if self.state_outputs else None
        grad_cy = out_grad[2] if self.state_outputs and self.mode == "lstm" else None
        grad_out = out_grad[0]
        for layer in range(self.num_layers - 1, -1, -1):
            layer_input, layer_caches = caches[layer]
            grad_input = xp.zeros_like(layer_input)
            for direction in range(dirs):
                index = layer * dirs + direction
                dh = xp.zeros_like(grad_h0[index]) if grad_hy is None else grad_hy[index].copy()
                dc = None
                if self.mode == "lstm":
                    dc = xp.zeros_like(grad_h0[index]) if grad_cy is None else grad_cy[index].copy()
                dh, dc = self._direction_backward(
                    xp, layer_input, weights[layer][direction], grad_weights[layer][direction],
                    grad_out[:, :, direction * hidden : (direction + 1) * hidden],
                    layer_caches[direction], dh, dc, grad_input,
                )  # fmt: skip
                grad_h0[index] = dh
                if grad_c0 is not None:
                    grad_c0[index] = dc
            grad_out = grad_input
            if masks is not None and layer > 0:
                grad_out = grad_out * masks[layer - 1]
        write(in_grad[0], req[0], grad_out)
        write(in_grad[1], req[1], grad_params)
        write(in_grad[2], req[2], grad_h0)
        if self.mode == "lstm":
            write(in_grad[3], req[3], grad_c0)

    def _direction_backward(self, xp, x, weight, grad_weight, grad_out, cache, dh, dc, grad_x):
        w, r, _, _ = weight
        gw, gr, gbw, gbr = grad_weight
        for t, previous_h, previous_c, saved in reversed(cache):
            dh = dh + grad_out[t]
            if self.mode == "lstm":
                i, f, g, o, tanh_c = saved
                dc = dc + dh * o * (1.0 - tanh_c * tanh_c)
                d_gates = xp.concatenate(
                    [
                        dc * g * i * (1.0 - i),
                        dc * previous_c * f * (1.0 - f),
                        dc * i * (1.0 - g * g),
                        dh * tanh_c * o * (1.0 - o),
                    ],
                    axis=1,
                )
                dc = dc * f
                d_input, d_recurrent = d_gates, d_gates
                dh_direct = 0.0
            elif self.mode == "gru":
                z_r, z_u, n, recurrent_n = saved
                dn = dh * (1.0 - z_u) * (1.0 - n * n)
                d_update = dh * (previous_h - n) * z_u * (1.0 - z_u)
                d_reset = dn * recurrent_n * z_r * (1.0 - z_r)
                d_input = xp.concatenate([d_reset, d_update, dn], axis=1)
                d_recurrent = xp.concatenate([d_reset, d_update, dn * z_r], axis=1)
                dh_direct = dh * z_u
            else:
                (h,) = saved
                derivative = (h > 0).astype(h.dtype) if self.mode == "rnn_relu" else 1.0 - h * h
                d_input = d_recurrent = dh * derivative
                dh_direct = 0.0
            gw += d_input.T @ x[t]
            gbw += d_input.sum(axis=0)
            gr += d_recurrent.T @ previous_h
            gbr += d_recurrent.sum(axis=0)
            grad_x[t] += d_input @ w
            dh = d_recurrent @ r + dh_direct
        return dh, dc
