"""Make the NDArrayIter reference vectors with real MXNet 1.9.1 (run by hand, not by the tests).

    /work/mxnet-venv/bin/python tests/io/data/make_vectors.py

Writes ``csv_iter.json`` (CSVIter over the small csv files it writes here) and
``ndarray_iter.json``: for each case, the iterator's arguments, its
provide_data / provide_label, and for three epochs (reset between them) every
batch's data, label and pad. Shuffled cases seed numpy's global generator with
``seed`` right before the iterator is made, as the tests do.
"""

import json
import os

import mxnet as mx
import numpy as np
from iter_inputs import ndarray_iter_inputs as _inputs

HERE = os.path.dirname(os.path.abspath(__file__))


def _descs(descs):
    return [[d.name, list(d.shape), np.dtype(d.dtype).name, d.layout] for d in descs]


def _case(kind, n, batch_size, mode, shuffle, seed=None, epochs=3):
    data, label = _inputs(kind, n)
    if seed is not None:
        np.random.seed(seed)
    it = mx.io.NDArrayIter(
        data, label, batch_size=batch_size, shuffle=shuffle, last_batch_handle=mode
    )
    record = {
        "kind": kind,
        "n": n,
        "batch_size": batch_size,
        "mode": mode,
        "shuffle": shuffle,
        "seed": seed,
        "provide_data": _descs(it.provide_data),
        "provide_label": _descs(it.provide_label),
        "epochs": [],
    }
    for epoch in range(epochs):
        if epoch:
            it.reset()
        batches = []
        for batch in it:
            batches.append(
                {
                    "data": [d.asnumpy().tolist() for d in batch.data],
                    "label": [l.asnumpy().tolist() for l in batch.label],
                    "pad": batch.pad,
                }
            )
        record["epochs"].append(batches)
    return record


def _csv_cases():
    """CSVIter over small files written here (committed beside this script)."""
    np.savetxt(
        os.path.join(HERE, "csv_data.csv"),
        np.arange(30).reshape(10, 3) * 0.5,
        delimiter=",",
        fmt="%g",
    )
    np.savetxt(os.path.join(HERE, "csv_label.csv"), np.arange(10) * 10, delimiter=",", fmt="%g")
    np.savetxt(
        os.path.join(HERE, "csv_small.csv"), np.arange(18).reshape(3, 6), delimiter=",", fmt="%g"
    )
    specs = [
        {
            "data_csv": "csv_data.csv",
            "data_shape": (3,),
            "label_csv": "csv_label.csv",
            "batch_size": 4,
        },
        {
            "data_csv": "csv_data.csv",
            "data_shape": (3,),
            "label_csv": "csv_label.csv",
            "batch_size": 5,
        },
        {"data_csv": "csv_data.csv", "data_shape": (3,), "batch_size": 3},
        {"data_csv": "csv_small.csv", "data_shape": (2, 3), "batch_size": 4},
    ]
    cases = []
    for spec in specs:
        for round_batch in (True, False):
            args = dict(spec, round_batch=round_batch)
            full = dict(args, data_csv=os.path.join(HERE, spec["data_csv"]))
            if "label_csv" in spec:
                full["label_csv"] = os.path.join(HERE, spec["label_csv"])
            it = mx.io.CSVIter(**full)
            epochs = []
            for epoch in range(3):
                if epoch:
                    it.reset()
                epochs.append(
                    [
                        {
                            "data": [d.asnumpy().tolist() for d in b.data],
                            "label": [l.asnumpy().tolist() for l in b.label],
                            "pad": b.pad,
                        }
                        for b in it
                    ]
                )
            cases.append(
                {
                    "args": {k: list(v) if isinstance(v, tuple) else v for k, v in args.items()},
                    "provide_data": _descs(it.provide_data),
                    "provide_label": _descs(it.provide_label),
                    "epochs": epochs,
                }
            )
    with open(os.path.join(HERE, "csv_iter.json"), "w") as f:
        json.dump({"mxnet": mx.__version__, "cases": cases}, f)
    print(len(cases), "CSVIter cases")


def main():
    cases = []
    for mode in ("pad", "discard", "roll_over"):
        for n, batch_size in ((10, 3), (10, 4), (10, 5), (3, 8), (7, 2)):
            if mode == "roll_over" and batch_size > n:
                continue  # MXNet fails in the second epoch; mxnb raises at construction
            cases.append(_case("array", n, batch_size, mode, False))
        cases.append(_case("array", 10, 3, mode, True, seed=7))
        cases.append(_case("array", 11, 4, mode, True, seed=3))
        for kind in ("list", "dict", "nolabel"):
            cases.append(_case(kind, 9, 4, mode, False))
    with open(os.path.join(HERE, "ndarray_iter.json"), "w") as f:
        json.dump({"mxnet": mx.__version__, "cases": cases}, f)
    print(len(cases), "cases")
    _csv_cases()


if __name__ == "__main__":
    main()
