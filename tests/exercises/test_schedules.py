"""The schedule walk: the step engine's legal schedules, against a brute-force count."""

from __future__ import annotations

import itertools
import random

import pytest

from mxnb.exercises.schedules import Spec, all_schedules, walk
from mxnb.exercises.store import Store


def _program(ops_spec):
    """A program pushing ``ops_spec``: (name, read vars, written vars) in push order."""

    def program(eng, ctx, v, ops):
        for name, reads, writes in ops_spec:
            const = [getattr(v, n) for n in reads]
            mutate = [getattr(v, n) for n in writes]
            eng.push_sync(ops.noop, ctx, const_vars=const, mutate_vars=mutate, name=name)

    return program


def _brute_force(ops_spec):
    """Orders of the ops that keep every pair sharing a var one of them writes in push order."""
    conflicts = []
    for i, (_, reads_i, writes_i) in enumerate(ops_spec):
        for j in range(i + 1, len(ops_spec)):
            _, reads_j, writes_j = ops_spec[j]
            if set(writes_i) & set(reads_j + writes_j) or set(writes_j) & set(reads_i):
                conflicts.append((ops_spec[i][0], ops_spec[j][0]))
    names = [name for name, _, _ in ops_spec]
    legal = set()
    for order in itertools.permutations(names):
        position = {name: k for k, name in enumerate(order)}
        if all(position[a] < position[b] for a, b in conflicts):
            legal.add(order)
    return legal


def test_readers_between_writes_swap_and_writes_stay_in_order():
    r"""
    w1 -> {r1, r2} -> w2   on v;   u on other: anywhere (the graph of notebook 01)
    """
    ops_spec = [
        ("w1", [], ["v"]),
        ("r1", ["v"], []),
        ("r2", ["v"], []),
        ("w2", [], ["v"]),
        ("u", [], ["other"]),
    ]
    found = list(all_schedules(_program(ops_spec), ("v", "other")))
    assert len(found) == len(set(found)) == 10
    assert set(found) == _brute_force(ops_spec)


@pytest.mark.parametrize("seed", range(12))
def test_random_small_programs_match_the_brute_force_count(seed):
    """Random programs of 3-6 ops over 2-3 vars: the walk finds exactly the brute-force orders."""
    rng = random.Random(seed)
    variables = ("a", "b", "c")[: rng.randint(2, 3)]
    ops_spec = []
    for index in range(rng.randint(3, 6)):
        touched = rng.sample(variables, rng.randint(1, 2))
        writes = [var for var in touched if rng.random() < 0.4]
        reads = [var for var in touched if var not in writes]
        ops_spec.append((f"op{index}", reads, writes))
    found = list(all_schedules(_program(ops_spec), variables))
    assert len(found) == len(set(found))
    assert set(found) == _brute_force(ops_spec)


def test_a_large_program_is_sampled_and_says_so():
    """Eight independent ops have 8! = 40320 schedules: the walk stops at the bound, then samples."""
    ops_spec = [(f"op{k}", [], [f"v{k}"]) for k in range(8)]
    spec = Spec(tuple(f"v{k}" for k in range(8)), make_ops=lambda store, device: _Noop())
    seen = walk(spec, _program(ops_spec), expected=None, limit=50, samples=20)
    assert not seen.exhaustive
    assert seen.schedules == 50 + 20
    assert frozenset(("op0", "op7")) in seen.together


class _Noop:
    @staticmethod
    def noop(run_ctx=None):
        return None


def test_store_notes_reads_and_writes_per_op_and_hands_out_read_only_views():
    store = Store({"x": __import__("numpy").array([1.0, 2.0])})
    store.current = "scale"
    view = store.read("x")
    with pytest.raises(Exception, match="const input 'x'"):
        view[0] = 5.0
    store.write("x", view * 2)
    assert store.touched() == {"scale": ({"x"}, {"x"})}
    assert store.values["x"].tolist() == [2.0, 4.0]


def test_a_graded_large_program_says_it_was_sampled():
    """A right answer with more legal schedules than the bound passes, and says how it was checked."""
    from mxnb.exercises.grader import grade_program

    ops_spec = [(f"op{k}", [], [f"v{k}"]) for k in range(8)]
    spec = Spec(tuple(f"v{k}" for k in range(8)), make_ops=lambda store, device: _Noop())
    program = _program(ops_spec)
    result = grade_program(spec, program, program, limit=50, samples=20)
    assert result.passed
    assert not result.details["exhaustive"] and result.details["schedules"] == 70
    assert "sampled" in result.message and "more than 50 legal schedules" in result.message
    assert "20 drawn at random (seed 0)" in result.message
