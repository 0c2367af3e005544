"""The two searches over a ranked candidate list, given `passes(set) -> bool` (one round each, answered
from a cache when the set was tried before, so a resumed search replays its finished rounds for free).

- `prefix_then_prune` (bisect precision): candidates added cumulatively in rank order until the run passes
  (the shortest passing prefix found by halving, not one at a time), then each type of that prefix removed
  again when the run passes without it (delta debugging's one-minimal set).
- `halving` (bisect fusion): QuickXplain's recursive halving: a pass alone, or a pair (any group) that only
  fails together, in about k·log2(n/k) rounds for k needed of n candidates.
Both assume more fixes never break a passing run (monotone); `passes` raises `StopSearch` to end early.
"""

from __future__ import annotations

from typing import Callable, Sequence

Test = Callable[[tuple[str, ...]], bool]


class StopSearch(Exception):
    """A round that neither passes nor fails the check (its command failed another way): the search ends."""


def prefix_then_prune(candidates: Sequence[str], passes: Test) -> tuple[str, ...] | None:
    """The kept set, or None when even every candidate together does not pass. Precondition: the empty set
    fails (the caller's first round)."""
    every = tuple(candidates)
    if not every or not passes(every):
        return None
    low, high = 0, len(every)  # prefix `low` fails, prefix `high` passes
    while high - low > 1:
        middle = (low + high) // 2
        if passes(every[:middle]):
            high = middle
        else:
            low = middle
    kept = list(every[:high])
    # the last one is needed (the prefix without it failed); each earlier one is tried without
    for candidate in list(kept[:-1]):
        trial = tuple(c for c in kept if c != candidate)
        if passes(trial):
            kept.remove(candidate)
    return tuple(kept)


def halving(candidates: Sequence[str], passes: Test) -> tuple[str, ...] | None:
    """A minimal set (QuickXplain), or None when every candidate together does not pass. Precondition: the
    empty set fails."""
    every = tuple(candidates)
    if not every or not passes(every):
        return None

    def explain(base: tuple[str, ...], added: bool, rest: tuple[str, ...]) -> tuple[str, ...]:
        if added and passes(base):
            return ()
        if len(rest) == 1:
            return rest
        first, second = rest[:len(rest) // 2], rest[len(rest) // 2:]
        needed_second = explain(base + first, True, second)
        needed_first = explain(base + needed_second, bool(needed_second), first)
        return needed_first + needed_second

    found = explain((), False, every)
    return tuple(c for c in every if c in found)  # in rank order
