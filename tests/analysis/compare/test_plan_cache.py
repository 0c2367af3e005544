"""The graph's side of a plan kept between runs (plan_cache.py): read lazily, the same as worked out, planned
from without making every group first (the same plan as worked out), and a damaged cache worked out again,
never trusted."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from precision_tool.analysis.compare import plan_cache
from precision_tool.analysis.compare.graph_plan import plan_from_side
from precision_tool.analysis.compare.matching import DumpIndex
from precision_tool.formats.ge.ge_graph import forget_graphs

REAL = Path(__file__).resolve().parents[2] / "fixtures" / "real" / "ge_graph"
GRAPH = REAL / "oam_resnet50_ge_proto_00000062_Build.txt"
FUSED = REAL / "hicannge_ge_proto_00015_OptimizeQuantGraph_FeGraphFusionAfter.txt"
"""A real graph after fusion: 21 groups of several ops, 42 of their ops inner nodes, a quantized graph."""


def _read_kept(cache_file: Path) -> tuple[dict[str, Any], dict[str, Any]]:
    """(header, sides) of a kept plan file: a header line, the ops line, then the sides."""
    head, _, rest = cache_file.read_bytes().partition(b"\n")
    return json.loads(head), json.loads(rest.partition(b"\n")[2])


def _write_kept(cache_file: Path, head: dict[str, Any], sides: dict[str, Any]) -> None:
    """Write the sides back as damage would leave them: the header (and its CRCs) and ops line as they were."""
    head_line, _, rest = cache_file.read_bytes().partition(b"\n")
    cache_file.write_bytes(head_line + b"\n" + rest.partition(b"\n")[0] + b"\n" + json.dumps(sides).encode())


def _fresh(graph: Path, cache: Path) -> plan_cache.GraphPlans:
    plan_cache._plans.cache_clear()  # a new process: nothing kept in memory
    forget_graphs()
    return plan_cache.graph_plans(graph, cache)


def _worked_out(tmp_path: Path, source: Path = GRAPH) -> tuple[Path, Path, str, plan_cache.GraphSide]:
    """(graph, cache folder, graph name, its side) after a first run that worked the side out and kept it."""
    graph = tmp_path / source.name
    shutil.copyfile(source, graph)
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
    head, sides = _read_kept(cache_file)
    sides[name]["groups"][3] = ["not", "a", "group"]
    _write_kept(cache_file, head, sides)

    damaged = _fresh(graph, cache)
    assert damaged.ops(name) == [(m.sequence, m.name) for group in worked_out.groups for m in group.members]
    assert repr(damaged.side(name)) == repr(worked_out)
    forget_graphs()


def test_a_damaged_match_number_is_worked_out_again_not_read_as_another_match(tmp_path: Path) -> None:
    graph, cache, name, worked_out = _worked_out(tmp_path)
    (cache_file,) = (cache / "plans").glob("*.json")
    head, sides = _read_kept(cache_file)
    members = [m for group in sides[name]["groups"] for m in group[4] if m[8]]
    members[5][8][0] = -1  # a list would take the last match
    _write_kept(cache_file, head, sides)

    assert repr(_fresh(graph, cache).side(name)) == repr(worked_out)


def test_a_damaged_kept_side_is_worked_out_again_before_any_plan(tmp_path: Path) -> None:
    """A plan's groups may be made in the workers: a damaged file must be caught before, by its CRC, even where
    the damage still reads as a group (one op's name changed)."""
    graph, cache, name, worked_out = _worked_out(tmp_path)
    (cache_file,) = (cache / "plans").glob("*.json")
    head, sides = _read_kept(cache_file)
    sides[name]["groups"][7][4][0][0] = "another/op"
    _write_kept(cache_file, head, sides)
    dumps = DumpIndex(by_op={DumpIndex.key(m.name): tmp_path / m.name for g in worked_out.groups for m in g.members})

    damaged = _fresh(graph, cache)
    assert damaged._kept == {}
    plan = damaged.plan(name, dumps)
    assert isinstance(plan.groups, tuple)  # worked out again, not read from the file
    assert repr(plan) == repr(plan_from_side(worked_out, dumps))
    forget_graphs()


def test_a_file_of_one_graph_keeps_one_side_for_its_name_and_for_every_graph(tmp_path: Path) -> None:
    """`vc -g FILE` (no graph name) and a workspace run (the graph's name) plan the same side of a file of one
    graph: it is kept once, under the name (kept twice, every later run read both)."""
    graph, cache, name, worked_out = _worked_out(tmp_path)
    plans = _fresh(graph, cache)
    assert repr(plans.side(None)) == repr(worked_out) and plans.ops(None) == plans.ops(name)
    (cache_file,) = (cache / "plans").glob("*.json")
    assert list(_read_kept(cache_file)[1]) == [name]
    forget_graphs()


def test_a_summary_reads_the_ops_line_only_and_a_damaged_one_is_caught(tmp_path: Path) -> None:
    """The ops' ids and names come from their own line: the sides are not parsed for them (5.4 MB against
    0.8 at 20,000 ops). A damaged ops line fails its CRC: worked out again, never read as other ops."""
    graph, cache, name, worked_out = _worked_out(tmp_path)
    ops = [(m.sequence, m.name) for group in worked_out.groups for m in group.members]
    again = _fresh(graph, cache)
    assert again.ops(name) == ops and again._kept_sides is None  # the sides' JSON not parsed
    assert repr(again.side(name)) == repr(worked_out)

    (cache_file,) = (cache / "plans").glob("*.json")
    head, _, rest = cache_file.read_bytes().partition(b"\n")
    ops_line, _, body = rest.partition(b"\n")
    cache_file.write_bytes(head + b"\n" + ops_line.replace(b'"' + ops[5][1].encode(), b'"x' + ops[5][1].encode()[1:], 1)
                           + b"\n" + body)
    damaged = _fresh(graph, cache)
    assert damaged._kept_ops == {}
    assert damaged.ops(name) == ops
    forget_graphs()


def _same_groups(got: Any, expected: Any) -> None:
    """Group by group (a failing assert on the repr of all of them takes pytest minutes to explain)."""
    got, expected = list(got), list(expected)
    assert len(got) == len(expected)
    for mine, theirs in zip(got, expected):
        assert repr(mine) == repr(theirs)


def _dumps_for(side: plan_cache.GraphSide, tmp_path: Path, every: int, strangers: int = 0) -> DumpIndex:
    """A dump index holding a file for every `every`-th op of `side` (text paths, as a kept index has), and for
    the ops of a few groups of several ops only their inner nodes or none; and `strangers` files of no op."""
    names = [m.name for g in side.groups for m in g.members]
    fused = [g for g in side.groups if len(g.members) > 1]
    keep = set(names[::every])
    for group in fused[:3]:  # only the inner nodes dumped: the group's NaN row
        keep -= {m.name for m in group.members}
        keep |= {m.name for m in group.members if m.inner}
    for group in fused[3:5]:  # nothing dumped
        keep -= {m.name for m in group.members}
    keep |= {f"stranger_{i}" for i in range(strangers)}
    return DumpIndex(by_op={DumpIndex.key(n): str(tmp_path / f"{n}.dump") for n in keep})


@pytest.mark.parametrize(("every", "strangers"), [(1, 0), (2, 0), (7, 0), (3, 400)])
def test_a_plan_from_a_kept_side_is_the_plan_worked_out(tmp_path: Path, every: int, strangers: int) -> None:
    """(With 400 dump files of no op, the plan warns, counting the ops that have a dump.)"""
    graph, cache, name, worked_out = _worked_out(tmp_path, FUSED)
    assert sum(len(g.members) > 1 for g in worked_out.groups) == 21
    dumps = _dumps_for(worked_out, tmp_path, every, strangers)
    expected = plan_from_side(worked_out, dumps)

    kept = _fresh(graph, cache)
    plan = kept.plan(name, dumps)
    assert kept._sides == {}  # no GraphSide objects made
    assert not isinstance(plan.groups, tuple) and len(plan.groups) == len(expected.groups) == 444
    _same_groups(plan.groups, expected.groups)
    assert (plan.warnings, plan.matched_dumps, plan.unmatched_dumps, plan.npu_vs_npu) == (
        expected.warnings, expected.matched_dumps, expected.unmatched_dumps, expected.npu_vs_npu)
    assert ("do not seem to belong together" in plan.warnings[-1]) == bool(strangers)
    _same_groups(plan.groups[100:140:3], expected.groups[100:140:3])
    assert repr(plan.groups[-1]) == repr(expected.groups[-1])
    with pytest.raises(IndexError):
        plan.groups[444]


def test_a_kept_plan_of_a_few_ops_and_a_dump_folder_of_another_graph(tmp_path: Path) -> None:
    graph, cache, name, worked_out = _worked_out(tmp_path, FUSED)
    dumps = _dumps_for(worked_out, tmp_path, 2)
    only = {m.name for g in worked_out.groups[::50] for m in g.members}
    plan = _fresh(graph, cache).plan(name, dumps, only)
    assert [g.index for g in plan.groups] == list(range(0, 444, 50))
    _same_groups(plan.groups, plan_from_side(worked_out, dumps).groups[::50])

    strangers = DumpIndex(by_op={f"other_op_{i}": str(tmp_path / f"{i}.dump") for i in range(500)})
    plan = _fresh(graph, cache).plan(name, strangers)
    assert plan.warnings == plan_from_side(worked_out, strangers).warnings
    assert "do not seem to belong together: 0 of 465 graph ops have a dump, 500 dump files" in plan.warnings[-1]
