"""Hostile fusion_result.json files (tests/real/hostile_fusion.py makes them from the real files):
every one ends in the oracle's result or one FormatError line naming the file — never a traceback, a
hang, a result where nothing valid could be read, or a result that differs from the oracle.
The whole corpus (with four 50 MB lines) goes through the reader in-process (seconds); one case of each
mutation kind, a 50 MB line and a line of half a million graph records go through the real CLI. `python3 tests/real/hostile_fusion.py` runs all of it through the CLI."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from tests.real.hostile_fusion import MUTATIONS, corpus, in_process, oracle, through_cli

COUNT = 1000


@pytest.fixture(scope="module")
def hostile_files(tmp_path_factory) -> list[Path]:
    folder = tmp_path_factory.mktemp("hostile_fusion")
    paths = []
    for case in corpus(seed=11, count=COUNT, big=4):
        path = folder / f"{case.name}.json"
        path.write_bytes(case.data)
        paths.append(path)
    return paths


def test_corpus_is_seeded_and_covers_every_kind(hostile_files: list[Path]) -> None:
    assert len(hostile_files) == COUNT + 4
    kinds = Counter(p.name.split("_")[1] for p in hostile_files)
    assert set(kinds) == {name for name, _, _ in MUTATIONS} | {"bigline"}
    again = next(corpus(seed=11, count=1))
    assert again.data == hostile_files[0].read_bytes()
    # the corpus is hostile, not noise: most files cannot be read, some still can
    readable = 0
    for path in hostile_files[:200]:
        try:
            oracle(path.read_bytes())
            readable += 1
        except Exception:
            pass
    assert 10 < readable < 150


def test_every_file_in_process(hostile_files: list[Path]) -> None:
    outcomes = Counter()
    bad = []
    for path in hostile_files:
        outcome = in_process(path)
        outcomes[outcome] += 1
        if outcome not in ("result", "named"):
            bad.append((outcome, path.name))
    assert not bad, (dict(outcomes), bad[:20])
    assert outcomes["named"] > 500 and outcomes["result"] > 50


def test_one_of_each_kind_through_ac(hostile_files: list[Path], tmp_path: Path) -> None:
    first: dict[str, Path] = {}
    for path in hostile_files:
        first.setdefault(path.name.split("_")[1], path)
    # and the 50 MB line of half a million graph records (`ac` would print tables for hours)
    first["many graphs"] = next(p for p in hostile_files if p.name.startswith("big3_"))
    outcomes = {kind: through_cli(path, tmp_path / kind) for kind, path in sorted(first.items())}
    assert all(outcome in ("result", "named") for outcome in outcomes.values()), outcomes
