"""The two searches of `bisect` over ranked candidates (pure: `passes` is the run's check as a set test)."""

from __future__ import annotations

import pytest

from precision_tool.analysis.bisect.search import StopSearch, halving, prefix_then_prune

NAMES = tuple("abcdefghijklmnop")  # 16 candidates


def _needs(*needed: str, together: bool = True):
    """A check that passes when every needed item is in the set (`together`) or any one is."""
    tried: list[frozenset[str]] = []

    def passes(members: tuple[str, ...]) -> bool:
        tried.append(frozenset(members))
        found = [n in members for n in needed]
        return all(found) if together else any(found)

    return passes, tried


@pytest.mark.parametrize("search", [prefix_then_prune, halving])
@pytest.mark.parametrize("needed", [("a",), ("c",), ("p",), ("b", "k"), ("d", "e", "o")])
def test_each_search_finds_exactly_the_needed_items(search, needed) -> None:
    passes, _ = _needs(*needed)
    assert search(NAMES, passes) == needed


@pytest.mark.parametrize("search", [prefix_then_prune, halving])
@pytest.mark.parametrize("needed", ["b", "m", "p"])
def test_one_of_sixteen_takes_fewer_rounds_than_one_per_candidate(search, needed) -> None:
    passes, tried = _needs(needed)
    assert search(NAMES, passes) == (needed,)
    assert len(set(tried)) <= 9  # a linear search: 16 (one per candidate), here at most 9 with the first round


def test_a_pair_that_only_fails_together_is_named_as_a_pair() -> None:
    # the run breaks only when both f and j are on: switching either off passes
    passes, _ = _needs("f", "j", together=False)
    found = halving(NAMES, passes)
    assert found is not None and len(found) == 1 and found[0] in ("f", "j")
    passes, _ = _needs("f", "j")  # both must be off
    assert halving(NAMES, passes) == ("f", "j")


@pytest.mark.parametrize("search", [prefix_then_prune, halving])
def test_nothing_found_when_every_candidate_together_does_not_pass(search) -> None:
    assert search(NAMES, lambda members: False) is None
    assert search((), lambda members: True) is None


def test_a_stopped_round_ends_the_search() -> None:
    def passes(members):
        raise StopSearch("the command failed another way")

    with pytest.raises(StopSearch):
        prefix_then_prune(NAMES, passes)
