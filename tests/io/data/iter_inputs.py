"""The NDArrayIter inputs of each case kind, shared by make_vectors.py (MXNet) and the tests."""

import numpy as np


def ndarray_iter_inputs(kind, n):
    """(data, label) of ``kind``: an array, a list, a dict, or data without label."""
    x = np.arange(n * 4, dtype=np.float32).reshape(n, 2, 2)
    y = np.arange(n, dtype=np.float32) * 10
    if kind == "array":
        return x, y
    if kind == "list":
        return [x, x[:, :1] + 1000], [y, y + 1]
    if kind == "dict":
        return {"b_img": x, "a_img": x[:, 0] - 5}, {"lab": y}
    if kind == "nolabel":
        return x, None
    raise ValueError(kind)
