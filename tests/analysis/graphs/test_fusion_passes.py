"""UB fusion passes (attribute pass_name_ub) count as much as graph passes (pass_name): `ls -f` matches
them, and `ls` and `ni` show every pass that made an op."""

from __future__ import annotations

import copy
import re
from pathlib import Path

from precision_tool.formats.ge.ge_graph import Model, attr_list_str, attr_str


def _listed(out: str) -> list[str]:
    """The op names of an `ls` listing: the word after id and type on each op row."""
    return [m.group(1) for m in re.finditer(r"^ +\d+  \S+ +(\S+)", out, re.M)]


def test_every_pass_that_ac_says_fired_finds_its_ops(cli, demo_root: Path) -> None:
    checked = cli("ac", data=demo_root, env={"COLUMNS": "120"})
    tables = checked.out[checked.out.index("graph fusion passes that fired"):checked.out.index("Cast ops")]
    passes = re.findall(r"^│ (\w+) +│ +[1-9]\d* │", tables, re.M)  # (fired: a non-zero effect count)
    assert {"AABiasaddConvFusion", "TbeConvElemwiseFusionPass", "MatMulBiasAddFusionPass"} <= set(passes), tables
    for name in passes:
        listed = cli("ls", "-f", name, data=demo_root)
        assert listed.status == 0 and _listed(listed.out), (name, listed.out)
    ub = cli("ls", "-f", "TbeConvElemwiseFusionPass", data=demo_root).out
    assert _listed(ub) == ["conv1/Conv2D"], ub
    assert not _listed(cli("ls", "-f", "Fusion + Tbe", data=demo_root).out)  # each pass is matched on its own
    assert "[AABiasaddConvFusion + TbeConvElemwiseFusionPass]" in ub
    info = cli("ni", "conv1/Conv2D", data=demo_root).out.splitlines()
    assert "  FusionPass   AABiasaddConvFusion + TbeConvElemwiseFusionPass" in info


def test_ub_pass_alone_and_list_valued_passes(cli, make_workspace, tf_ge_model: Model) -> None:
    model = copy.deepcopy(tf_ge_model)
    graph = model.graphs[0]
    relu, pool = graph.op("conv1/Relu"), graph.op("pool")
    assert relu is not None and pool is not None
    relu.attrs["pass_name_ub"] = attr_str("TbeEltwiseFusionPass")  # a UB pass and no graph pass
    pool.attrs["pass_name"] = attr_list_str(["PoolFirstPass", "PoolSecondPass"])  # a list, as some GE versions
    pool.attrs["pass_name_ub"] = attr_list_str(["PoolFirstPass", "PoolUbPass"])  # write (repeats shown once)
    root = make_workspace({0: model})
    assert _listed(cli("ls", "-f", "eltwise", data=root).out) == ["conv1/Relu"]
    for needle in ("PoolSecond", "poolubpass"):
        listed = cli("ls", "-f", needle, data=root).out
        assert _listed(listed) == ["pool"], listed
        assert "pool  [PoolFirstPass + PoolSecondPass + PoolUbPass]" in listed, listed
    info = cli("ni", "pool", data=root).out.splitlines()
    assert "  FusionPass   PoolFirstPass + PoolSecondPass + PoolUbPass" in info
    # a summary cached before UB passes were indexed (cache version 2) is not reused
    import json

    from precision_tool.analysis.graphs.graph_summary import CACHE_VERSION

    (cache,) = (root / "temp" / "cache" / "graphs").glob("*.json")
    tree = json.loads(cache.read_text())
    assert tree["version"] == CACHE_VERSION
    tree["version"] = 2
    for row in tree["ops"]:
        row[5] = None if row[1] == "conv1/Relu" else row[5]  # what version 2 held: no UB pass
    cache.write_text(json.dumps(tree))
    again = cli("ls", "-f", "eltwise", data=root).out
    assert _listed(again) == ["conv1/Relu"] and "[TbeEltwiseFusionPass]" in again
