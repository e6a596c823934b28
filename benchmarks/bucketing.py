"""Bucketing benchmark: the memory a BucketingModule holds against one Module per bucket.

MXNet's bucketing example (``example/rnn/bucketing``): an LSTM language model
(vocabulary 10,000, embedding 200, two ``LSTMCell(200)``), batch 32, buckets of
10 to 60 steps, trained with SGD.  Every bucket is bound once, then trained on
one batch.  Figures, each against a peer measured in the same run:

1. **Memory**: the bytes held by every bucket's arrays (parameters, gradients,
   inputs, planned blocks; each storage chunk counted once) with
   ``BucketingModule`` against one independent ``Module`` per bucket, and
   against the largest bucket alone (the least memory possible: 1.00x).
2. **Time**: seconds for one forward/backward/update per bucket, bucketing
   against the independent modules (sharing must cost nothing: about 1.0x),
   the best of ``--repeat`` rounds, the two measured in turn.

Run: ``python benchmarks/bucketing.py [--buckets 10 20 30 40 50 60] [--repeat 3]``.
"""

from __future__ import annotations

import argparse
import logging
from typing import Any

import numpy as np
from _util import best_of, ratio, table

import mxnb as mx

VOCAB, EMBED, HIDDEN, LAYERS, BATCH = 10000, 200, 200, 2, 32


def sym_gen_factory() -> Any:
    """``sym_gen(seq_len)`` of MXNet's bucketing LM example."""
    stack = mx.rnn.SequentialRNNCell()
    for layer in range(LAYERS):
        stack.add(mx.rnn.LSTMCell(HIDDEN, prefix=f"lstm_l{layer}_"))

    def sym_gen(seq_len: int) -> Any:
        embed = mx.sym.Embedding(
            mx.sym.Variable("data"), input_dim=VOCAB, output_dim=EMBED, name="embed"
        )
        stack.reset()
        outputs, _ = stack.unroll(seq_len, inputs=embed, merge_outputs=True)
        pred = mx.sym.FullyConnected(
            mx.sym.Reshape(outputs, shape=(-1, HIDDEN)), num_hidden=VOCAB, name="pred"
        )
        label = mx.sym.Reshape(mx.sym.Variable("softmax_label"), shape=(-1,))
        return mx.sym.SoftmaxOutput(pred, label, name="softmax"), ("data",), ("softmax_label",)

    return sym_gen


def batch(seq_len: int) -> Any:
    """A batch of random tokens for bucket ``seq_len``."""
    tokens = np.random.RandomState(seq_len).randint(1, VOCAB, (BATCH, seq_len))
    return mx.io.DataBatch(
        [mx.nd.array(tokens)],
        [mx.nd.array(np.roll(tokens, -1, axis=1))],
        bucket_key=seq_len,
        provide_data=[mx.io.DataDesc("data", (BATCH, seq_len))],
        provide_label=[mx.io.DataDesc("softmax_label", (BATCH, seq_len))],
    )


def held_bytes(modules: list[Any]) -> int:
    """Bytes of every storage chunk the modules' executors hold, each chunk counted once."""
    chunks: dict[int, int] = {}
    for module in modules:
        for exe in module._exec_group.execs:
            arrays = [*exe.arg_dict.values(), *exe.grad_dict.values(), *exe.aux_dict.values()]
            arrays += [*exe._blocks, *exe._head_grads.values()]
            for array in arrays:
                handle = array._chunk.handle
                chunks[id(array._chunk)] = handle.nbytes if handle is not None else array.nbytes
    return sum(chunks.values())


def train_step(module: Any, data: Any) -> None:
    module.forward_backward(data)
    module.update()
    mx.nd.waitall()


def bucketing(buckets: list[int]) -> tuple[Any, list[Any]]:
    """A BucketingModule with every bucket bound (and trained once)."""
    module = mx.mod.BucketingModule(sym_gen_factory(), default_bucket_key=max(buckets))
    module.bind([("data", (BATCH, max(buckets)))], [("softmax_label", (BATCH, max(buckets)))])
    module.init_params(mx.init.Xavier())
    module.init_optimizer(optimizer="sgd", optimizer_params={"learning_rate": 0.01})
    for seq_len in buckets:
        train_step(module, batch(seq_len))
    return module, [module._buckets[seq_len] for seq_len in buckets]


def independent(buckets: list[int]) -> dict[int, Any]:
    """One Module per bucket, each with its own arrays (the peer)."""
    sym_gen = sym_gen_factory()
    modules = {}
    for seq_len in buckets:
        symbol, data_names, label_names = sym_gen(seq_len)
        module = mx.mod.Module(symbol, data_names, label_names)
        module.bind([("data", (BATCH, seq_len))], [("softmax_label", (BATCH, seq_len))])
        module.init_params(mx.init.Xavier())
        module.init_optimizer(optimizer="sgd", optimizer_params={"learning_rate": 0.01})
        train_step(module, batch(seq_len))
        modules[seq_len] = module
    return modules


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--buckets", type=int, nargs="+", default=[10, 20, 30, 40, 50, 60])
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    logging.disable(logging.WARNING)
    buckets = sorted(args.buckets)
    shared, shared_modules = bucketing(buckets)
    alone = independent(buckets)
    mib = 2**20
    ours, peer = held_bytes(shared_modules), held_bytes(list(alone.values()))
    largest = held_bytes([alone[max(buckets)]])
    print(
        f"LSTM LM (vocab {VOCAB}, {LAYERS} x LSTMCell({HIDDEN})), batch {BATCH}, buckets {buckets}"
    )
    print(
        table(
            ["memory held", "MiB", "BucketingModule / this"],
            [
                ["BucketingModule, every bucket bound", f"{ours / mib:.1f}", "1.00x"],
                ["one Module per bucket (peer)", f"{peer / mib:.1f}", ratio(ours, peer)],
                ["the largest bucket alone", f"{largest / mib:.1f}", ratio(ours, largest)],
            ],
        )
    )

    def shared_epoch() -> None:
        for seq_len in buckets:
            train_step(shared, batch(seq_len))

    def alone_epoch() -> None:
        for seq_len in buckets:
            train_step(alone[seq_len], batch(seq_len))

    ours_s = peer_s = float("inf")
    for _ in range(args.repeat):  # interleaved, so a change in the machine's load hits both
        ours_s = min(ours_s, best_of(shared_epoch, 1))
        peer_s = min(peer_s, best_of(alone_epoch, 1))
    print(
        table(
            ["one step per bucket", "seconds", "BucketingModule / this"],
            [
                ["BucketingModule", f"{ours_s:.3f}", "1.00x"],
                ["one Module per bucket (peer)", f"{peer_s:.3f}", ratio(ours_s, peer_s)],
            ],
        )
    )


if __name__ == "__main__":
    main()
