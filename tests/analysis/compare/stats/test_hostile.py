"""Hostile statistics CSVs (issue 11 item 5): a sample of the seeded corpus through the reader, the statistics
compare, `ls dump` and `ni`. The full corpus runs with `python3 tests/analysis/compare/stats/hostile_stats.py` (counts printed)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from precision_tool.analysis.compare.stats_compare import UNREADABLE, compare_statistics, read_stats_result
from tests.analysis.compare.stats.hostile_stats import MUTATIONS, generate, outcome
from tests.analysis.compare.stats.stats_helpers import stats_dir

SAMPLE = 52  # four of each kind


@pytest.fixture(scope="module")
def corpus(tmp_path_factory) -> list[tuple[str, Path]]:
    return generate(tmp_path_factory.mktemp("hostile"), SAMPLE, seed=11, big=1)


def test_the_generator_is_seeded_and_covers_every_kind(tmp_path: Path, corpus):
    again = generate(tmp_path, SAMPLE, seed=11, big=0)
    assert [p.read_bytes() for _, p in again] == [p.read_bytes() for _, p in corpus[:SAMPLE]]
    assert {kind for kind, _ in corpus} == {*MUTATIONS, "50 MB line"}


def test_every_sample_file_reads_or_is_one_error_naming_it(corpus):
    results = [(kind, path, *outcome(path)) for kind, path in corpus]
    failed = [r for r in results if r[2] not in ("read", "refused")]
    assert not failed
    refused = {kind for kind, _, result, _ in results if result == "refused"}
    assert {"empty", "non-utf-8", "5000 digits", "50 MB line"} <= refused
    assert any(result == "read" for _, _, result, _ in results)  # valid mutations (BOM, CRLF, ...) still read


def test_the_statistics_compare_turns_each_sample_file_into_rows(corpus, shared_stats_workspace, tmp_path: Path):
    """Each file alone in a dump folder: compared by name against the demo's pool1/MaxPool golden, or one
    `unreadable` row naming it; never an exception."""
    golden = shared_stats_workspace / "tf" / "dump"
    for number, (kind, path) in enumerate(corpus[:26]):
        folder = tmp_path / f"run{number}"
        folder.mkdir()
        shutil.copy(path, folder / path.name)
        summary = compare_statistics(folder, golden, None, tmp_path / f"r{number}.csv")
        rows = read_stats_result(tmp_path / f"r{number}.csv")
        assert rows, kind
        if outcome(path)[0] == "refused":
            assert summary.unreadable == 1 and rows[0].result == UNREADABLE
            assert summary.unreadable_files[0][0] == str(folder / path.name)


@pytest.mark.parametrize("kind", ["truncated", "5000 digits", "non-utf-8", "empty", "50 MB line", "structure"])
def test_ls_dump_and_ni_through_the_cli(kind: str, corpus, stats_workspace, cli):
    """The op's CSV replaced by a hostile one: `ls dump` lists it or names it (exit 1); `ni` shows the op and
    names the file; never a traceback or a hang."""
    root = stats_workspace()
    target = next(stats_dir(root).glob("MaxPool.pool1_MaxPool.*.csv"))
    source = next(path for k, path in corpus if k == kind)
    shutil.copy(source, target)
    verdict, problem = outcome(target)
    listing = cli("ls", "dump", data=root, timeout=120)
    assert "Traceback" not in listing.out + listing.err
    if verdict == "refused":
        assert listing.status == 1
        assert f"{target}: {problem}" in listing.out
    else:
        assert listing.status == 0 and target.name in listing.out
    info = cli("ni", "pool1/MaxPool", data=root, timeout=120)
    assert "Traceback" not in info.out + info.err
    assert info.status == 0 and f"debug_0 stats: {target}" in info.out
    if verdict == "refused":
        assert problem in info.out
