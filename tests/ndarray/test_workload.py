"""Random imperative workloads give, on every engine, the data numpy gives running them in order."""

from __future__ import annotations

import numpy as np
import pytest

import mxnb as mx


def _run_workload(seed: int, steps: int = 120) -> tuple[list[np.ndarray], list[np.ndarray]]:
    """Apply the same random ops to NDArrays (async) and to numpy arrays (in order)."""
    rng = np.random.default_rng(seed)
    reference = [rng.integers(0, 5, size=(4, 3)).astype(np.float32) for _ in range(4)]
    arrays = [mx.nd.array(item) for item in reference]
    for _ in range(steps):
        kind = rng.integers(0, 7)
        i, j = (int(v) for v in rng.integers(0, len(arrays), size=2))
        row = int(rng.integers(0, 4))
        value = float(rng.integers(-3, 4))
        if kind == 0:  # in place with a scalar
            arrays[i] += value
            reference[i] += value
        elif kind == 1:  # in place with another array (maybe itself)
            arrays[i] += arrays[j] * 0.5
            reference[i] += reference[j] * 0.5
        elif kind == 2:  # a write through a view
            view = arrays[i][row : row + 1]
            view[:] = value
            reference[i][row : row + 1] = value
        elif kind == 3:  # a new array replacing an old one (the old one is GC'd)
            arrays[i] = arrays[j] - arrays[i]
            reference[i] = reference[j] - reference[i]
        elif kind == 4:  # broadcast a row of one array into another
            arrays[i] += arrays[j][row]
            reference[i] += reference[j][row]
        elif kind == 5:  # setitem from another array
            arrays[i][row] = arrays[j][(row + 1) % 4]
            reference[i][row] = reference[j][(row + 1) % 4]
        else:  # a reduction written into a view
            mx.nd.sum(arrays[j], axis=0, out=arrays[i][row])
            reference[i][row] = reference[j].sum(axis=0)
    return [a.asnumpy() for a in arrays], reference


@pytest.mark.timeout(120)
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_random_workload_matches_sequential_numpy(engine, seed):
    got, want = _run_workload(seed)
    for index, (g, w) in enumerate(zip(got, want)):
        np.testing.assert_allclose(g, w, rtol=1e-5, err_msg=f"array {index}, engine {engine}")


@pytest.mark.timeout(120)
def test_pushing_from_several_threads_is_safe(threaded):
    r"""
    thread 0: shared += 1 (x200), own0 += 1 (x200)      every += on `shared` writes its var,
    thread 1: shared += 1 (x200), own1 += 1 (x200)      so the engine serializes them all
    """
    import threading

    shared = mx.nd.zeros((3,))
    owns = [mx.nd.zeros((2, 2)) for _ in range(3)]
    errors: list[BaseException] = []

    def work(index: int) -> None:
        try:
            for _ in range(200):
                counter = shared
                counter += 1  # one op reading and writing shared's var: serialized, never lost
                owns[index] += 1
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert not errors
    assert all(own.asnumpy().tolist() == [[200, 200], [200, 200]] for own in owns)
    assert shared.asnumpy().tolist() == [600, 600, 600]
