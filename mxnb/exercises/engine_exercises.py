"""The engine exercises: declare each op's const and mutate vars, graded on every legal schedule.

Idea: the engine orders ops by their declarations and nothing else
(MXNet's rule: two ops are serialized in push order when one of them writes
a var both use).  Each exercise gives the op functions — they read and write
a small store of arrays, one per var — and a program that pushes them with
empty var lists.  The learner fills in ``const_vars`` and ``mutate_vars``;
:func:`~.grader.grade_program` runs the program in every schedule the step
engine allows and compares with the reference run one op at a time.

Rule: a program is ``program(eng, ctx, v, ops)``: ``eng`` takes
``push_sync`` / ``push_async`` / ``push_delete`` as the engine does, ``v``
holds the engine vars by name (``v.x``), ``ops`` the op functions and, for
the async exercise, ``ops.device``.  The last exercise, finding a race,
gives a program with one wrong declaration.

State kept: none (the catalogue holds the exercises).

Example::

    >>> import mxnb as mx
    >>> mx.exercises.check('engine_read_modify_write',
    ...                    mx.exercises.solution('engine_read_modify_write')).passed
    True
"""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

from .catalogue import Exercise, register
from .grader import grade_program
from .schedules import Spec
from .store import Device, Store

__all__ = ["register_debugging"]


def _exercise(name, title, text, spec, starting, solution, parallel=(), success=""):
    exercise = Exercise(name, title, text, starting, solution, "program", lambda p: None, "engine")

    def grade(program: Any) -> Any:
        return grade_program(spec, program, exercise.solution(), parallel, success)

    grade.spec = spec  # type: ignore[attr-defined] - benchmarks/exercises.py runs it once
    object.__setattr__(exercise, "grade", grade)
    return register(exercise)


def _ops(store: Store, device: Device, **kernels: Any) -> Any:
    """Op functions ``fn(run_ctx)`` from kernels ``kernel(store)`` (a device job calls ``fn()``)."""
    namespace = SimpleNamespace(device=device)
    for name, kernel in kernels.items():

        def op(run_ctx: Any = None, kernel: Any = kernel) -> None:
            kernel(store)

        op.__name__ = name
        setattr(namespace, name, op)
    return namespace


# -- 1. a read-modify-write ------------------------------------------------------------------
_exercise(
    "engine_read_modify_write",
    "Engine 1: a read-modify-write",
    "Three ops on var `x` (3 at the start): `double` sets x = 2·x, `add_one` sets x = x + 1, "
    "`report` copies x into `out`. Run one at a time they give `out` = 7. Declare each op's "
    "`const_vars` (vars it only reads) and `mutate_vars` (vars it writes) so that **every** "
    "schedule the engine may choose gives 7.",
    Spec(
        ("x", "out"),
        {"x": 3.0, "out": 0.0},
        lambda store, device: _ops(
            store,
            device,
            double=lambda s: s.write("x", 2 * s.read("x")),
            add_one=lambda s: s.write("x", s.read("x") + 1),
            report=lambda s: s.write("out", s.read("x")),
        ),
    ),
    '''def program(eng, ctx, v, ops):
    """double, add_one, report: fill in the vars each op reads (const) and writes (mutate)."""
    eng.push_sync(ops.double, ctx, const_vars=[], mutate_vars=[], name="double")
    eng.push_sync(ops.add_one, ctx, const_vars=[], mutate_vars=[], name="add_one")
    eng.push_sync(ops.report, ctx, const_vars=[], mutate_vars=[], name="report")
''',
    '''def program(eng, ctx, v, ops):
    """double, add_one, report: each writer mutates x; report reads x and writes out."""
    eng.push_sync(ops.double, ctx, const_vars=[], mutate_vars=[v.x], name="double")
    eng.push_sync(ops.add_one, ctx, const_vars=[], mutate_vars=[v.x], name="add_one")
    eng.push_sync(ops.report, ctx, const_vars=[v.x], mutate_vars=[v.out], name="report")
''',
)

# -- 2. two parallel readers -----------------------------------------------------------------
_exercise(
    "engine_parallel_readers",
    "Engine 2: two readers in parallel",
    "`fill` sets x = 5; `square` reads x and writes a = x²; `negate` reads x and writes b = −x; "
    "`combine` writes out = a + b (20). Declare the vars so the result is always right **and** "
    "`square` and `negate` may run at the same time: the grader checks that some schedule has "
    "both ready at once.",
    Spec(
        ("x", "a", "b", "out"),
        {"x": 0.0, "a": 0.0, "b": 0.0, "out": 0.0},
        lambda store, device: _ops(
            store,
            device,
            fill=lambda s: s.write("x", 5.0),
            square=lambda s: s.write("a", s.read("x") ** 2),
            negate=lambda s: s.write("b", -s.read("x")),
            combine=lambda s: s.write("out", s.read("a") + s.read("b")),
        ),
    ),
    '''def program(eng, ctx, v, ops):
    """fill x; square and negate read it (in parallel, please); combine their results."""
    eng.push_sync(ops.fill, ctx, const_vars=[], mutate_vars=[], name="fill")
    eng.push_sync(ops.square, ctx, const_vars=[], mutate_vars=[], name="square")
    eng.push_sync(ops.negate, ctx, const_vars=[], mutate_vars=[], name="negate")
    eng.push_sync(ops.combine, ctx, const_vars=[], mutate_vars=[], name="combine")
''',
    '''def program(eng, ctx, v, ops):
    """The readers declare x const, so neither waits for the other."""
    eng.push_sync(ops.fill, ctx, const_vars=[], mutate_vars=[v.x], name="fill")
    eng.push_sync(ops.square, ctx, const_vars=[v.x], mutate_vars=[v.a], name="square")
    eng.push_sync(ops.negate, ctx, const_vars=[v.x], mutate_vars=[v.b], name="negate")
    eng.push_sync(ops.combine, ctx, const_vars=[v.a, v.b], mutate_vars=[v.out], name="combine")
''',
    parallel=(("square", "negate"),),
    success="square and negate can run at the same time.",
)

# -- 3. a reduction into a shared accumulator ------------------------------------------------
_exercise(
    "engine_reduction",
    "Engine 3: a reduction into a shared accumulator",
    "`load_1`, `load_2`, `load_3` write d1, d2, d3 (1, 2, 3); `zero` sets acc = 0 (it holds "
    "garbage before); `add_k` sets acc = acc + dk; `report` copies acc into out (6). Declare the "
    "vars so the sum is always 6 and the three loads may run in parallel.",
    Spec(
        ("d1", "d2", "d3", "acc", "out"),
        {"d1": 0.0, "d2": 0.0, "d3": 0.0, "acc": 100.0, "out": 0.0},
        lambda store, device: _ops(
            store,
            device,
            zero=lambda s: s.write("acc", 0.0),
            report=lambda s: s.write("out", s.read("acc")),
            **{f"load_{k}": (lambda s, k=k: s.write(f"d{k}", float(k))) for k in (1, 2, 3)},
            **{
                f"add_{k}": (lambda s, k=k: s.write("acc", s.read("acc") + s.read(f"d{k}")))
                for k in (1, 2, 3)
            },
        ),
    ),
    '''def program(eng, ctx, v, ops):
    """Three loads, a zero, three adds into acc, a report."""
    for k in (1, 2, 3):
        load = getattr(ops, f"load_{k}")
        eng.push_sync(load, ctx, const_vars=[], mutate_vars=[], name=f"load_{k}")
    eng.push_sync(ops.zero, ctx, const_vars=[], mutate_vars=[], name="zero")
    for k in (1, 2, 3):
        add = getattr(ops, f"add_{k}")
        eng.push_sync(add, ctx, const_vars=[], mutate_vars=[], name=f"add_{k}")
    eng.push_sync(ops.report, ctx, const_vars=[], mutate_vars=[], name="report")
''',
    '''def program(eng, ctx, v, ops):
    """Each add reads its datum and mutates acc: the adds serialize on acc, the loads do not."""
    data = [v.d1, v.d2, v.d3]
    for k in (1, 2, 3):
        load = getattr(ops, f"load_{k}")
        eng.push_sync(load, ctx, const_vars=[], mutate_vars=[data[k - 1]], name=f"load_{k}")
    eng.push_sync(ops.zero, ctx, const_vars=[], mutate_vars=[v.acc], name="zero")
    for k in (1, 2, 3):
        add = getattr(ops, f"add_{k}")
        eng.push_sync(add, ctx, const_vars=[data[k - 1]], mutate_vars=[v.acc], name=f"add_{k}")
    eng.push_sync(ops.report, ctx, const_vars=[v.acc], mutate_vars=[v.out], name="report")
''',
    parallel=(("load_1", "load_2"), ("load_2", "load_3")),
)


# -- 4. an async op with a callback ----------------------------------------------------------
def _copy_job(store: Store) -> None:
    store.write("dst", store.read("src") + 0.5)


_exercise(
    "engine_async_callback",
    "Engine 4: an async op and its callback",
    "`fill` sets src = 4. `copy` is **async**: it starts a copy on the device "
    "(`ops.device.submit(job, callback)`) and returns at once; the job writes dst = src + 0.5 "
    "later, then calls `callback`. `consume` writes out = 10·dst (45). An async op is done "
    "when its `on_complete` is called. Declare the vars, and call `on_complete` at the right "
    "moment.",
    Spec(
        ("src", "dst", "out"),
        {"src": 0.0, "dst": 0.0, "out": 0.0},
        lambda store, device: _ops(
            store,
            device,
            fill=lambda s: s.write("src", 4.0),
            consume=lambda s: s.write("out", 10 * s.read("dst")),
            copy_job=_copy_job,
        ),
    ),
    '''def program(eng, ctx, v, ops):
    """fill src; copy it on the device (async); consume the copy."""

    def copy(run_ctx, on_complete):
        ops.device.submit(ops.copy_job)  # the job runs later, on the device
        on_complete()  # is the copy done here?

    eng.push_sync(ops.fill, ctx, const_vars=[], mutate_vars=[], name="fill")
    eng.push_async(copy, ctx, const_vars=[], mutate_vars=[], name="copy")
    eng.push_sync(ops.consume, ctx, const_vars=[], mutate_vars=[], name="consume")
''',
    '''def program(eng, ctx, v, ops):
    """The device job calls on_complete when the copy is written: then consume may read dst."""

    def copy(run_ctx, on_complete):
        ops.device.submit(ops.copy_job, callback=on_complete)

    eng.push_sync(ops.fill, ctx, const_vars=[], mutate_vars=[v.src], name="fill")
    eng.push_async(copy, ctx, const_vars=[v.src], mutate_vars=[v.dst], name="copy")
    eng.push_sync(ops.consume, ctx, const_vars=[v.dst], mutate_vars=[v.out], name="consume")
''',
)

# -- 5. a delete that waits for its readers --------------------------------------------------
_exercise(
    "engine_delete_after_readers",
    "Engine 5: a delete that waits for its readers",
    "`fill` sets x = 3; `reader_1` writes a = x + 1, `reader_2` writes b = 2·x; then x's "
    "memory is freed with `ops.free`. Free it only once both readers are done — through the "
    "engine (`eng.push_delete(var, ctx, fn)` is MXNet's `DeleteVariable`), not from the program "
    "itself.",
    Spec(
        ("x", "a", "b"),
        {"x": 0.0, "a": 0.0, "b": 0.0},
        lambda store, device: _ops(
            store,
            device,
            fill=lambda s: s.write("x", 3.0),
            reader_1=lambda s: s.write("a", s.read("x") + 1),
            reader_2=lambda s: s.write("b", 2 * s.read("x")),
            free=lambda s: s.free("x"),
        ),
    ),
    '''def program(eng, ctx, v, ops):
    """fill x, two readers, then free x."""
    eng.push_sync(ops.fill, ctx, const_vars=[], mutate_vars=[v.x], name="fill")
    eng.push_sync(ops.reader_1, ctx, const_vars=[v.x], mutate_vars=[v.a], name="reader_1")
    eng.push_sync(ops.reader_2, ctx, const_vars=[v.x], mutate_vars=[v.b], name="reader_2")
    ops.free(None)  # frees x now: are the readers done?
''',
    '''def program(eng, ctx, v, ops):
    """push_delete runs free as a write on x: after every op pushed on x so far."""
    eng.push_sync(ops.fill, ctx, const_vars=[], mutate_vars=[v.x], name="fill")
    eng.push_sync(ops.reader_1, ctx, const_vars=[v.x], mutate_vars=[v.a], name="reader_1")
    eng.push_sync(ops.reader_2, ctx, const_vars=[v.x], mutate_vars=[v.b], name="reader_2")
    eng.push_delete(v.x, ctx, ops.free)
''',
    parallel=(("reader_1", "reader_2"),),
)


# -- 10. debugging: find the race (registered last by the package) -----------------------
_RACE_START = '''def program(eng, ctx, v, ops):
    """load -> normalize (in place) -> forward, stats -> log.  One declaration is wrong."""
    eng.push_sync(ops.load, ctx, const_vars=[], mutate_vars=[v.batch], name="load")
    eng.push_sync(ops.normalize, ctx, const_vars=[v.batch], mutate_vars=[], name="normalize")
    eng.push_sync(ops.forward, ctx, const_vars=[v.batch], mutate_vars=[v.loss], name="forward")
    eng.push_sync(ops.stats, ctx, const_vars=[v.batch], mutate_vars=[v.mean], name="stats")
    eng.push_sync(ops.log, ctx, const_vars=[v.loss], mutate_vars=[v.logged], name="log")
'''

_RACE_SOLUTION = '''def program(eng, ctx, v, ops):
    """normalize writes the batch in place: it mutates batch."""
    eng.push_sync(ops.load, ctx, const_vars=[], mutate_vars=[v.batch], name="load")
    eng.push_sync(ops.normalize, ctx, const_vars=[], mutate_vars=[v.batch], name="normalize")
    eng.push_sync(ops.forward, ctx, const_vars=[v.batch], mutate_vars=[v.loss], name="forward")
    eng.push_sync(ops.stats, ctx, const_vars=[v.batch], mutate_vars=[v.mean], name="stats")
    eng.push_sync(ops.log, ctx, const_vars=[v.loss], mutate_vars=[v.logged], name="log")
'''


def register_debugging() -> None:
    """Register the debugging exercise (called last: it closes the list)."""
    _exercise(
        "debugging_find_the_race",
        "Debugging: find and fix the race",
        "This pipeline loads a batch, normalises it in place, then runs `forward` (loss = sum of "
        "the batch) and `stats` (mean of the batch) on it, and `log` reads the loss. Sometimes the "
        "loss is wrong. One declaration is wrong: find it with `mx.exercises.check` (its "
        "counterexample shows the schedule), fix it, and keep `forward` and `stats` parallel.",
        Spec(
            ("batch", "loss", "mean", "logged"),
            {"batch": [0.0, 0.0, 0.0, 0.0], "loss": 0.0, "mean": 0.0, "logged": 0.0},
            lambda store, device: _ops(
                store,
                device,
                load=lambda s: s.write("batch", [1.0, 2.0, 3.0, 6.0]),
                normalize=lambda s: s.write("batch", s.read("batch") / s.read("batch").max()),
                forward=lambda s: s.write("loss", s.read("batch").sum()),
                stats=lambda s: s.write("mean", s.read("batch").mean()),
                log=lambda s: s.write("logged", s.read("loss")),
            ),
        ),
        _RACE_START,
        _RACE_SOLUTION,
        parallel=(("forward", "stats"),),
    )
