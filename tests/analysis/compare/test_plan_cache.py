"""The graph's side of a plan kept between runs (plan_cache.py): read lazily, the same as worked out, and a
damaged cache worked out again, never trusted."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from precision_tool.analysis.compare import plan_cache
from precision_tool.formats.ge.ge_graph import forget_graphs

GRAPH = Path(__file__).resolve().parents[2] / "fixtures" / "real" / "ge_graph" / "oam_resnet50_ge_proto_00000062_Build.txt"


def _fresh(graph: Path, cache: Path) -> plan_cache.GraphPlans:
    plan_cache._plans.cache_clear()  # a new process: nothing kept in memory
    forget_graphs()
    return plan_cache.graph_plans(graph, cache)


def _worked_out(tmp_path: Path) -> tuple[Path, Path, str, plan_cache.GraphSide]:
    """(graph, cache folder, graph name, its side) after a first run that worked the side out and kept it."""
    graph = tmp_path / GRAPH.name
    shutil.copyfile(GRAPH, graph)
    cache = tmp_path / "cache"
    first = _fresh(graph, cache)
    name = first.graph_names[0]
    return graph, cache, name, first.side(name)


def test_a_kept_side_reads_as_worked_out_and_only_when_asked(tmp_path: Path) -> None:
    graph, cache, name, worked_out = _worked_out(tmp_path)
    ops = [(m.sequence, m.name) for group in worked_out.groups for m in group.members]
    assert len(ops) == 170

    again = _fresh(graph, cache)
    assert again.graph_names == [name]
    assert again.ops(name) == ops  # the ids and names a summary shows, without making the side's objects
    assert again._sides == {}
    assert repr(again.side(name)) == repr(worked_out)  # made when a plan asks for it
    assert again.ops(name) == ops


def test_a_damaged_kept_side_is_worked_out_again(tmp_path: Path) -> None:
    graph, cache, name, worked_out = _worked_out(tmp_path)
    (cache_file,) = (cache / "plans").glob("*.json")
    tree = json.loads(cache_file.read_text())
    tree["sides"][name]["groups"][3] = ["not", "a", "group"]
    cache_file.write_text(json.dumps(tree))

    damaged = _fresh(graph, cache)
    assert damaged.ops(name) == [(m.sequence, m.name) for group in worked_out.groups for m in group.members]
    assert repr(damaged.side(name)) == repr(worked_out)
    forget_graphs()


def test_a_damaged_match_number_is_worked_out_again_not_read_as_another_match(tmp_path: Path) -> None:
    graph, cache, name, worked_out = _worked_out(tmp_path)
    (cache_file,) = (cache / "plans").glob("*.json")
    tree = json.loads(cache_file.read_text())
    members = [m for group in tree["sides"][name]["groups"] for m in group[4] if m[8]]
    members[5][8][0] = -1  # a list would take the last match
    cache_file.write_text(json.dumps(tree))

    assert repr(_fresh(graph, cache).side(name)) == repr(worked_out)
