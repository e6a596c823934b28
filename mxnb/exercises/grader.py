"""Grading a concurrency answer: the schedule walk, then what debug mode saw, in one verdict.

Idea: :func:`~.schedules.walk` says *whether* some legal schedule breaks the
result; this module says *why*, the way a teaching assistant would.  It
compares what each op touched (the store's notes, debug mode's view) with
the vars it declared, finds in the breaking schedule the two ops that ran
out of push order on a var one of them writes, names the declaration that
would have ordered them, and packs it all into a
:class:`~.result.Result` whose counterexample replays on a fresh step engine.

Rule: the reasons, checked in this order —
    'program_error'     the program raised while pushing
    'outside_engine'    the program read or wrote an array itself, outside any op
    'const_for_write'   an op writes a var it declared const
    'undeclared_write'  an op writes a var it did not declare
    'undeclared_read'   an op reads a var it did not declare
    'deadlock'          an op never completes (an async op whose on_complete is never called)
    'wrong_result'      even one op at a time in push order the result differs (an op missing)
    'race'              a legal schedule gives another result (declarations look right:
                        the op completed before its work was done)
    'serialized'        the result is right but two ops that could run at once never do
A counterexample comes with every rejection that has a breaking schedule.

State kept: none.

Example::

    >>> from mxnb.exercises import check
    >>> def program(eng, ctx, v, ops):
    ...     eng.push_sync(ops.double, ctx, mutate_vars=[v.x], name='double')
    ...     eng.push_sync(ops.add_one, ctx, const_vars=[v.x], name='add_one')
    >>> result = check('engine_read_modify_write', program)
    >>> result.passed, result.reason
    (False, 'const_for_write')
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from .result import Counterexample, Result
from .schedules import MAX_SCHEDULES, SAMPLES, SEED, Run, Spec, replay, sequential, walk
from .store import PROGRAM

__all__ = ["grade_program"]


def _declaration_problems(run: Run) -> list[tuple[str, str]]:
    """(reason, sentence) for every touch the op did not declare, in push order."""
    problems: list[tuple[str, str]] = []
    declared = run.grading.declared
    for op, (reads, writes) in sorted(
        run.store.touched().items(), key=lambda item: run.grading.push_index.get(item[0], -1)
    ):
        if op == PROGRAM:
            touched = sorted(reads | writes)
            problems.append(
                (
                    "outside_engine",
                    (
                        f"the program itself touches {_names(touched)} outside any op: nothing "
                        "orders that after the ops pushed before it; push the work as an op "
                        "(or with push_delete) that declares the var"
                    ),
                )
            )
            continue
        const, mutate = declared.get(op, ((), ()))
        for var in sorted(writes):
            if var in mutate:
                continue
            if var in const:
                problems.append(
                    (
                        "const_for_write",
                        (
                            f"op '{op}' writes var '{var}' but declares it const: a const var lets "
                            "it run beside other readers and lets later readers overtake it; put "
                            f"'{var}' in mutate_vars"
                        ),
                    )
                )
            else:
                problems.append(
                    (
                        "undeclared_write",
                        (
                            f"op '{op}' writes var '{var}' but does not declare it: nothing orders it "
                            f"against the other ops on '{var}'; put '{var}' in mutate_vars"
                        ),
                    )
                )
        for var in sorted(reads - writes):
            if var not in const and var not in mutate:
                problems.append(
                    (
                        "undeclared_read",
                        (
                            f"op '{op}' reads var '{var}' but does not declare it: it may run before "
                            f"the op that writes '{var}'; put '{var}' in const_vars"
                        ),
                    )
                )
    return problems


def _names(items: Sequence[str]) -> str:
    return ", ".join(f"'{item}'" for item in items)


def _racing(run: Run) -> tuple[tuple[str, str] | None, str | None, str]:
    """Two touches of one var that ran against push order, one of them a write.

    The first such pair in time, unless a later one overtook an op that then
    failed (a read after a free): that pair explains the result better.
    """
    declared = run.grading.declared
    events = run.store.events
    failed = {error.split(":")[0] for error in run.store.errors}
    inversions = []
    for index, (second, var, second_mode, second_at) in enumerate(events):
        for first, first_var, first_mode, first_at in events[index + 1 :]:
            if first_var != var or first == second or "w" not in (first_mode, second_mode):
                continue
            if first_at < second_at:
                inversions.append((first, second, var))
    if not inversions:
        return None, None, ""
    first, second, var = next((i for i in inversions if i[0] in failed), inversions[0])
    return (first, second), var, _missing(declared, first, second, var, events)


def _missing(
    declared: dict[str, tuple[tuple[str, ...], tuple[str, ...]]],
    first: str,
    second: str,
    var: str,
    events: list[tuple[str, str, str, float]],
) -> str:
    for op in (first, second):
        if op == PROGRAM:
            return f"the program touches '{var}' outside any op"
        const, mutate = declared.get(op, ((), ()))
        writes = any(o == op and v == var and m == "w" for o, v, m, _ in events)
        if writes and var not in mutate:
            kind = "const" if var in const else "no"
            return f"op '{op}' writes '{var}' with {kind} declaration: mutate var '{var}' missing"
        if not writes and var not in const and var not in mutate:
            return f"op '{op}' reads '{var}' undeclared: const var '{var}' missing"
    return (
        f"both declare '{var}', yet '{second}' overtook '{first}': '{first}' completed before "
        "its work on the var was done"
    )


def grade_program(
    spec: Spec,
    program: Callable[..., Any],
    reference: Callable[..., Any],
    parallel: Sequence[tuple[str, str]] = (),
    success: str = "",
    limit: int = MAX_SCHEDULES,
    samples: int = SAMPLES,
) -> Result:
    """Grade ``program`` against ``reference`` on every legal schedule (see the module docstring)."""
    reference_run = sequential(spec, reference)
    expected = reference_run.outcome()
    reference_run.close()
    first = sequential(spec, program)
    if first.program_error is not None:
        error = first.program_error
        first.close()
        return Result(
            False,
            f"the program raised {type(error).__name__} while pushing: {error}",
            None,
            "program_error",
        )
    problems = _declaration_problems(first)
    unfinished = first.unfinished()
    in_order = first.outcome()
    first.close()
    seen = walk(spec, program, expected, limit, samples)
    if seen.exhaustive:
        scope = (
            "the only legal schedule"
            if seen.schedules == 1
            else f"all {seen.schedules} legal schedules"
        )
    else:
        scope = (
            f"{seen.schedules} schedules, sampled: the program has more than {seen.limit} legal "
            f"schedules, so the first {seen.limit} of the walk were checked, then "
            f"{seen.sampled} drawn at random (seed {SEED})"
        )
    counterexample = None
    racing_text = ""
    if seen.mismatch is not None:
        moves, got = seen.mismatch
        bad = replay(spec, program, moves)
        racing, var, missing = _racing(bad)
        bad.close()

        def replayer(schedule: Sequence[str]) -> dict[str, Any]:
            run = replay(spec, program, schedule)
            outcome = run.outcome()
            run.close()
            return outcome

        counterexample = Counterexample(moves, expected, got, racing, var, missing, replayer)
        if racing is not None:
            racing_text = (
                f" In the schedule {' -> '.join(moves)}, '{racing[1]}' ran before '{racing[0]}' "
                f"on var '{var}' ({missing})."
            )
    details = {"schedules": seen.schedules, "exhaustive": seen.exhaustive, "scope": scope}
    if problems:
        reason, sentence = problems[0]
        more = f" ({len(problems) - 1} more like it)" if len(problems) > 1 else ""
        return Result(False, f"{sentence}{more}.{racing_text}", counterexample, reason, details)
    if unfinished:
        return Result(
            False,
            f"ops {_names(unfinished)} never complete: an async op is done only when its "
            "on_complete is called; pass it as the device job's callback",
            counterexample,
            "deadlock",
            details,
        )
    if in_order != expected:
        return Result(
            False,
            f"run one op at a time in push order, the program gives {in_order}, the reference "
            f"{expected}: an op is missing, pushed twice or pushed out of order",
            counterexample,
            "wrong_result",
            details,
        )
    if counterexample is not None:
        return Result(
            False,
            f"a legal schedule gives {counterexample.got}, the sequential run "
            f"{counterexample.expected}.{racing_text}",
            counterexample,
            "race",
            details,
        )
    for a, b in parallel:
        if frozenset((a, b)) not in seen.together:
            return Result(
                False,
                f"the result is right in {scope}, but ops '{a}' and '{b}' are never ready at "
                "the same time: a var they share is declared mutate by one of them; readers "
                "declare it const so the engine may run them in parallel",
                None,
                "serialized",
                details,
            )
    text = f"right in {scope}." + (f" {success}" if success else "")
    return Result(True, text, None, "", details)
