"""The rules a memory plan obeys, checked: :meth:`.plan.MemoryPlan.check`.

Idea: a plan is plain data (:mod:`.plan`); whether it is *right* is a
separate question, asked by tests, by the planners after every plan they
make in debug runs, and by anyone reading a plan from a file.  The rules are
MXNet's (``PlanMemory`` may share storage only between entries whose
lifetimes do not overlap, or hand a block over in place).

Rule (each a function below, raising AssertionError with the entries named):
    * lifetimes lie within the steps; external entries are never placed;
    * an in-place pair is recorded on both sides, in one block, of one size,
      and meets at exactly one step (the source's last read writes the reuser);
    * blocks list exactly their entries, are large enough, and never hold two
      entries alive at once (in an arena block: never overlapping byte ranges);
    * ``internal_bytes`` is the sum of the blocks, at most the naive total;
    * a recomputed entry is marked, as large as its original, made after it.

State kept: none.

Example::

    >>> import mxnb as mx
    >>> net = mx.sym.FullyConnected(mx.sym.Variable('data'), num_hidden=4, name='fc')
    >>> check_plan(mx.executor.plan_memory(net, {'data': (2, 3)}, grad_req='null'))
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .plan_entries import EXTERNAL_STORAGE_ID, EntryKind, PlanEntry

if TYPE_CHECKING:  # annotations only: the plan module calls these
    from .plan import MemoryPlan

__all__ = ["check_plan"]


def check_plan(plan: MemoryPlan) -> None:
    """Raise AssertionError when the plan breaks a rule of memory planning.

    * no two entries alive at the same time share a block (an in-place pair
      may meet at exactly one step: the source's last read is the step that
      writes the reuser);
    * in-place only between entries of equal size, written by the step that
      last reads the source, in the same block;
    * every block is large enough for its entries and lists exactly them;
    * ``internal_bytes == sum(block sizes) <= naive_internal_bytes``,
      ``peak_bytes <= naive_internal_bytes``.
    """
    _check_entries(plan)
    pairs = _check_inplace_pairs(plan)
    _check_blocks(plan, pairs)
    _check_recomputed(plan)


def _check_entries(plan: MemoryPlan) -> None:
    """Lifetimes within the steps; external entries unplaced, internal ones in a block."""
    last = len(plan.steps) - 1
    for entry in plan.entries:
        assert -1 <= entry.first_step <= entry.last_step <= last, (
            f"{entry.name}: bad lifetime [{entry.first_step}, {entry.last_step}]"
        )
        if entry.external:
            assert entry.inplace_source is None, f"{entry.name}: external entry taken in place"
        else:
            assert entry.kind in (
                EntryKind.FORWARD,
                EntryKind.BACKWARD,
                EntryKind.RECOMPUTED,
            ), f"{entry.name}: a {entry.kind.value} entry must be external"
            assert 0 <= entry.storage_id < len(plan.blocks), (
                f"{entry.name}: storage id {entry.storage_id} out of range"
            )


def _check_inplace_pairs(plan: MemoryPlan) -> set[tuple[str, str]]:
    """Each in-place pair: recorded on both sides, one block, one size, meeting at one step."""
    pairs = set(plan.inplace_pairs)
    for source_name, target_name in plan.inplace_pairs:
        source = plan.entry(source_name)
        target = plan.entry(target_name)
        assert target.inplace_source == source_name, f"{target_name}: in-place pair not recorded"
        assert source.storage_id == target.storage_id != EXTERNAL_STORAGE_ID, (
            f"in-place pair {source_name} -> {target_name} in different blocks"
        )
        assert source.nbytes == target.nbytes, (
            f"in-place pair {source_name} -> {target_name}: sizes {source.nbytes} "
            f"!= {target.nbytes}"
        )
        assert source.last_step == target.first_step, (
            f"in-place pair {source_name} -> {target_name}: source still read at step "
            f"{source.last_step} after the reuser is written at step {target.first_step}"
        )
    for entry in plan.entries:
        if entry.inplace_source is not None:
            assert (entry.inplace_source, entry.name) in pairs, (
                f"{entry.name}: in-place source not listed in inplace_pairs"
            )
    return pairs


def _check_blocks(plan: MemoryPlan, pairs: set[tuple[str, str]]) -> None:
    """Blocks numbered in order, listing exactly their entries, large enough, never shared live."""
    by_block: dict[int, set[str]] = {}
    for entry in plan.internal_entries():
        by_block.setdefault(entry.storage_id, set()).add(entry.name)
    total = 0
    for position, block in enumerate(plan.blocks):
        assert block.id == position, f"block {block.id} at position {position}"
        members = [plan.entry(name) for name in block.entries]
        assert {m.name for m in members} == by_block.get(block.id, set()), (
            f"block {block.id}: entry list does not match the entries' storage ids"
        )
        assert members, f"block {block.id} is empty"
        for member in members:
            assert member.offset + member.nbytes <= block.nbytes, (
                f"{member.name} ({member.nbytes} B at offset {member.offset}) does not fit "
                f"block {block.id} ({block.nbytes} B)"
            )
        if any(member.offset for member in members):
            _assert_disjoint_in_arena(members, pairs)
        else:
            _assert_disjoint(members, pairs)
        total += block.nbytes
    assert total == plan.internal_bytes, f"internal_bytes {plan.internal_bytes} != {total}"
    naive = sum(entry.nbytes for entry in plan.internal_entries())
    assert naive == plan.naive_internal_bytes, (
        f"naive_internal_bytes {plan.naive_internal_bytes} != {naive}"
    )
    assert plan.internal_bytes <= plan.naive_internal_bytes, "plan exceeds the naive total"
    assert plan.peak_bytes <= plan.naive_internal_bytes, "peak exceeds the naive total"


def _check_recomputed(plan: MemoryPlan) -> None:
    """A recomputed entry is marked, as large as its original, and made after it."""
    for entry in plan.entries:
        if entry.recompute_of is not None:
            original = plan.entry(entry.recompute_of)
            assert entry.kind is EntryKind.RECOMPUTED, f"{entry.name}: recomputed, not marked"
            assert (original.shape, original.nbytes) == (entry.shape, entry.nbytes), (
                f"{entry.name}: recomputed copy differs in shape from {original.name}"
            )
            assert original.first_step < entry.first_step, (
                f"{entry.name}: recomputed before {original.name} was first computed"
            )


def _assert_disjoint(members: list[PlanEntry], pairs: set[tuple[str, str]]) -> None:
    """Entries of one block, taken in order of writing, never overlap.

    Each must be written after every earlier one's last read, except that it
    may be written at the very step the latest one is last read when it takes
    that one's storage in place.  (Linear in the block's entries: only the two
    latest-ending earlier entries can matter.)
    """
    ordered = sorted(members, key=lambda entry: (entry.first_step, entry.last_step))
    latest: PlanEntry | None = None  # the earlier entry alive the longest
    runner_up = -2  # the last step of the earlier entry alive the second longest
    for entry in ordered:
        if latest is not None and entry.first_step <= latest.last_step:
            handed_over = (
                entry.first_step == latest.last_step
                and (latest.name, entry.name) in pairs
                and runner_up < entry.first_step
            )
            if not handed_over:
                raise AssertionError(
                    f"{latest.name} (alive {latest.first_step}..{latest.last_step}) and "
                    f"{entry.name} (alive {entry.first_step}..{entry.last_step}) share storage "
                    f"block {entry.storage_id} while both are alive"
                )
        if latest is None or entry.last_step >= latest.last_step:
            runner_up = latest.last_step if latest is not None else runner_up
            latest = entry
        else:
            runner_up = max(runner_up, entry.last_step)


def _assert_disjoint_in_arena(members: list[PlanEntry], pairs: set[tuple[str, str]]) -> None:
    """Entries of an arena block alive at the same step occupy disjoint byte ranges.

    An in-place pair shares its range at exactly the step that hands it over.
    """
    active: list[PlanEntry] = []
    for entry in sorted(members, key=lambda e: (e.first_step, e.last_step)):
        active = [other for other in active if other.last_step >= entry.first_step]
        for other in active:
            apart = (
                other.offset + other.nbytes <= entry.offset
                or entry.offset + entry.nbytes <= other.offset
            )
            handed_over = (
                (other.name, entry.name) in pairs
                and other.last_step == entry.first_step
                and other.offset == entry.offset
            )
            if not apart and not handed_over:
                raise AssertionError(
                    f"{other.name} (alive {other.first_step}..{other.last_step}, bytes "
                    f"{other.offset}..{other.offset + other.nbytes}) and {entry.name} (alive "
                    f"{entry.first_step}..{entry.last_step}, bytes {entry.offset}.."
                    f"{entry.offset + entry.nbytes}) share storage block {entry.storage_id} "
                    f"while both are alive"
                )
        active.append(entry)
