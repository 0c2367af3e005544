"""The report reads the ops' tensor descriptions kept from an earlier whole parse (analysis/graphs/
op_descs.py) instead of parsing the Build graph again, and the statistics of its outputs through the run's
kept plan: the page's data is the same either way. A graph file that changed, or a damaged kept file, means
one parse again, never a wrong or missing description.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from precision_tool.analysis.graphs import graph_index, op_descs
from precision_tool.analysis.graphs.op_descs import descs_kept, kept_descs
from precision_tool.analysis.report.report_data import collect_report
from precision_tool.config import Settings
from precision_tool.workspace import Workspace

pytestmark = [pytest.mark.tf, pytest.mark.slow]


@pytest.fixture
def workspace(demo_workspace: Path, tmp_path: Path) -> Workspace:
    root = tmp_path / "ws"
    shutil.copytree(demo_workspace, root, symlinks=True)
    shutil.rmtree(root / "temp" / "cache" / "graphs", ignore_errors=True)
    return Workspace(root)


def _fresh() -> None:
    """As a new process finds things: no graph parsed, no descriptions read yet."""
    graph_index._INDEXES.clear()
    op_descs._READ.clear()


def _collect(workspace: Workspace) -> object:
    _fresh()
    newest = sorted((workspace.root / "temp" / "vector_compare").iterdir())[-1]
    return collect_report(workspace, Settings(), sorted(newest.glob("result_*.csv")))


def _build_graph(workspace: Workspace) -> Path:
    return workspace.build_graph_files(0)[0]


def _no_parse(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*_args: object, **_kwargs: object) -> None:
        raise AssertionError("the Build graph was parsed although its descriptions are kept")

    monkeypatch.setattr(graph_index, "load_graph", refuse)
    monkeypatch.setattr(graph_index, "index_file", refuse)


def _page_data(data: object) -> tuple[object, ...]:
    runs = data.runs  # type: ignore[attr-defined]
    # (repr: NaN cosines and statistics are equal as text, not as floats)
    return (data.ops, repr([sorted(run.stats.items()) for run in runs]), repr([run.points for run in runs]),
            data.casts)  # type: ignore[attr-defined]


def test_the_second_report_reads_the_kept_descriptions_and_shows_the_same(workspace, monkeypatch) -> None:
    graph = _build_graph(workspace)
    assert not descs_kept(workspace, graph)
    parsed = _collect(workspace)
    assert descs_kept(workspace, graph)
    assert parsed.ops and all(facts.outputs for facts in parsed.ops.values())  # type: ignore[attr-defined]
    assert any(run.stats for run in parsed.runs)  # type: ignore[attr-defined]
    _no_parse(monkeypatch)
    kept = _collect(workspace)
    assert _page_data(kept) == _page_data(parsed)


def test_a_changed_graph_is_parsed_again(workspace) -> None:
    graph = _build_graph(workspace)
    first = _collect(workspace)
    (old,) = (workspace.cache_dir / "graphs").glob("*.descs*.json")
    graph.write_bytes(graph.read_bytes() + b"\n")  # (same ops; another size, so the kept descriptions are stale)
    assert not descs_kept(workspace, graph)
    again = _collect(workspace)
    assert descs_kept(workspace, graph)
    kept_files = list((workspace.cache_dir / "graphs").glob("*.descs*.json"))
    assert len(kept_files) == 1 and kept_files[0].name != old.name  # the stale one is gone
    assert again.ops == first.ops  # type: ignore[attr-defined]


@pytest.mark.parametrize("damage", [b"", b"{not json", b'{"ops": [["x", 3, []]]}', b'{"ops": 7}', b'{"ops": []}'])
def test_a_damaged_kept_file_means_one_parse_again(workspace, damage: bytes) -> None:
    graph = _build_graph(workspace)
    first = _collect(workspace)
    (kept_file,) = (workspace.cache_dir / "graphs").glob("*.descs*.json")
    kept_file.write_bytes(damage)
    _fresh()
    assert not kept_descs(workspace, graph)  # (None, or {}: no op of the graph described)
    again = _collect(workspace)
    assert again.ops == first.ops  # type: ignore[attr-defined]
    _fresh()
    assert kept_descs(workspace, graph)  # written again from that parse


def test_the_first_vc_keeps_them_so_even_the_first_report_parses_nothing(workspace, monkeypatch) -> None:
    from tests.conftest import run_cli

    shutil.rmtree(workspace.cache_dir)  # (no plan kept: vc parses the Build graph whole, once)
    done = run_cli("vc", data=workspace.root)
    assert done.status == 0, done.out[-2000:] + done.err[-2000:]
    assert descs_kept(workspace, _build_graph(workspace))
    _no_parse(monkeypatch)
    data = _collect(workspace)
    assert data.ops and all(facts.outputs for facts in data.ops.values())  # type: ignore[attr-defined]


def test_several_runs_over_one_graph_read_its_descriptions_once(workspace, monkeypatch) -> None:
    """kept_descs remembers what it read (by the file's name, which carries the graph's size and mtime)."""
    graph = _build_graph(workspace)
    _collect(workspace)
    _fresh()
    first = kept_descs(workspace, graph)
    reads = []
    original = Path.read_text
    monkeypatch.setattr(Path, "read_text", lambda self, *a, **k: reads.append(self) or original(self, *a, **k))
    assert kept_descs(workspace, graph) is first and not reads
    graph.write_bytes(graph.read_bytes() + b"\n")  # another size: another file, never the remembered one
    assert kept_descs(workspace, graph) is None
