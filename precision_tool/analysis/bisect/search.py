"""The two searches over a ranked candidate list, given `passes(set) -> bool` (one round each, answered
from a cache when the set was tried before, so a resumed search replays its finished rounds for free).

- `prefix_then_prune` (bisect precision): candidates added cumulatively in rank order until the run passes
  (the shortest passing prefix found by halving, not one at a time), then the types of that prefix removed
  again where the run passes without them, halves at a time (a minimal set, as delta debugging's).
- `halving` (bisect fusion): QuickXplain's recursive halving: a pass alone, or a pair (any group) that only
  fails together, in about k·log2(n/k) rounds for k needed of n candidates.
Both assume more fixes never break a passing run (monotone); `passes` raises `StopSearch` to end early.
"""

from __future__ import annotations

from typing import Callable, Sequence

Test = Callable[[tuple[str, ...]], bool]


class StopSearch(Exception):
    """A round that neither passes nor fails the check (its command failed another way): the search ends."""


def _explain(passes: Test, base: tuple[str, ...], added: bool, rest: tuple[str, ...]) -> tuple[str, ...]:
    """QuickXplain: a minimal part of `rest` with which `base` passes, given that base + rest passes
    (`added`: whether `base` holds more than the caller's own base, i.e. whether to try it alone)."""
    if added and passes(base):
        return ()
    if len(rest) == 1:
        return rest
    first, second = rest[:len(rest) // 2], rest[len(rest) // 2:]
    needed_second = _explain(passes, base + first, True, second)
    needed_first = _explain(passes, base + needed_second, bool(needed_second), first)
    return needed_first + needed_second


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
    # the last one is needed (the prefix without it failed); the ones before it are removed where the run
    # passes without them, halves at a time (one at a time would cost a round per type of the prefix)
    last = every[high - 1]
    earlier = every[:high - 1]
    needed = _explain(passes, (last,), True, earlier) if earlier else ()
    return tuple(c for c in every if c in needed or c == last)


def halving(candidates: Sequence[str], passes: Test) -> tuple[str, ...] | None:
    """A minimal set (QuickXplain), or None when every candidate together does not pass. Precondition: the
    empty set fails."""
    every = tuple(candidates)
    if not every or not passes(every):
        return None
    found = _explain(passes, (), False, every)
    return tuple(c for c in every if c in found)  # in rank order
