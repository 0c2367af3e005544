"""`ls`, `ni`, completion and the `ac` graph checks through the one-shot CLI on written workspaces."""

from __future__ import annotations

import json
import re
import time
from pathlib import Path

from precision_tool.formats.ge.ge_graph import Model

OP_ROW = re.compile(r"^  +(\d+)  (\S+) +(\S+)(?:  \[([^\]]+)\])?(?:  kernel (\S+))?$")


def ls_ops(out: str) -> list[tuple[str, str, str]]:
    """(type, fusion pass or '-', name) of each op row of `ls` (in a pipe: one line per row)."""
    return [(m.group(2), m.group(4) or "-", m.group(3)) for m in map(OP_ROW.match, out.splitlines()) if m]


def test_ls_filters_and_counts(cli, make_workspace, tf_ge_model: Model) -> None:
    root = make_workspace({0: tf_ge_model})
    result = cli("ls", data=root)
    assert result.status == 0, result.err
    assert ("Conv2D", "TbeConvBiasaddFusionPass", "conv1/Conv2D") in ls_ops(result.out)
    assert len(ls_ops(result.out)) == len(tf_ge_model.graphs[0].ops)
    assert f"{len(tf_ge_model.graphs[0].ops)} op(s)" in result.out
    result = cli("ls", "-t", "cast", "-n", "TO_", data=root)
    lines = result.out.strip().splitlines()
    assert lines[-1] == "3 op(s)" and ls_ops(result.out) == [("Cast", "-", n) for n in ("to_half", "to_float", "to_int")]
    result = cli("ls", "-f", "Biasadd", "-k", "te_conv2d", data=root)
    assert ls_ops(result.out) == [("Conv2D", "TbeConvBiasaddFusionPass", "conv1/Conv2D")]
    assert result.out.splitlines()[1:3] == ["  id  type    name  [fusion pass]  kernel",
                                           "   2  Conv2D  conv1/Conv2D  [TbeConvBiasaddFusionPass]  kernel te_conv2d_2"]
    assert result.out.strip().splitlines()[-1] == "1 op(s)"
    # the summary was cached under temp/cache/graphs, keyed by path, size and mtime
    caches = list((root / "temp" / "cache" / "graphs").glob("*.json"))
    assert len(caches) == 1 and json.loads(caches[0].read_text())["size"] > 0


def test_ni_panel_dump_and_golden(cli, make_workspace, tf_ge_model: Model) -> None:
    import numpy as np

    from precision_tool.formats.tf.golden import golden_file_name
    from precision_tool.formats.npu.npu_dump import dump_file_name
    from precision_tool.formats.npu.npu_dump_write import TensorSpec, write_dump

    root = make_workspace({0: tf_ge_model})
    dump_dir = root / "npu" / "debug_0" / "dump" / "20240613143502" / "0" / "ge_default_1" / "1" / "0"
    dump_dir.mkdir(parents=True)
    values = np.arange(-8, 8, dtype=np.float16).reshape(1, 4, 4)
    write_dump(dump_dir / dump_file_name("Cast", "to_half", 5, 0, 1718260502000001), op_name="to_half",
               inputs=[TensorSpec(values.astype(np.float32))], outputs=[TensorSpec(values)])
    golden = root / "tf" / "dump"
    golden.mkdir(parents=True)
    np.save(golden / golden_file_name("to_half", 0, 1718260502000002), values)
    result = cli("ni", "to_half", data=root)
    assert result.status == 0, result.err
    out = result.out
    lines = out.splitlines()
    for expected in ("  Type         Cast", "  OriginalOps  to_half", "    0  DT_FLOAT  NHWC  [1,8,8,4]  ← conv1/Relu:0",
                     "    0  DT_FLOAT16  NHWC  [1,8,8,4]  → to_float:0", "    input 0  FLOAT ND",
                     "    output 0  FLOAT16 ND  · golden to_half.0"):
        assert expected in lines, expected
    assert any(line.startswith("  KernelName   te_cast_") for line in lines)
    # NPU and golden statistics of output 0 in one table, numbers in shared columns
    header = lines.index("      run      shape    max  min  mean  nan  inf  zero")
    assert lines[header + 1:header + 6] == [
        "    input 0  FLOAT ND",
        "      debug_0  [1,4,4]    7   -8  -0.5    0    0     1",
        "    output 0  FLOAT16 ND  · golden to_half.0",
        "      debug_0  [1,4,4]    7   -8  -0.5    0    0     1",
        "      golden   [1,4,4]    7   -8  -0.5    0    0     1"]
    dump = root / "npu" / "debug_0" / "dump" / "20240613143502" / "0" / "ge_default_1" / "1" / "0" / \
        "Cast.to_half.5.0.1718260502000001"
    assert f"    debug_0: {dump}" in lines
    assert any(line.startswith(f"    golden to_half.0: {golden}/to_half.0.") for line in lines)
    attrs = cli("ni", "-n", "conv1/Conv2D", "-a", data=root)
    assert "pass_name" in attrs.out and "'TbeConvBiasaddFusionPass'" in attrs.out and "strides" in attrs.out
    assert "→ conv1/Relu:0  (origin conv1/BiasAdd:0)" in attrs.out
    assert "no NPU dump or golden tensor of this op in the workspace" in attrs.out
    candidates = cli("ni", "Relu", data=root)
    assert candidates.status == 1 and "ni: no op is named 'Relu'; close matches: conv1/Relu" in candidates.out
    missing = cli("ni", "no_such_thing", data=root)
    assert missing.status == 1 and "no op is named 'no_such_thing' and none contains it" in missing.err + missing.out


def test_ni_saves_svg_naming_the_op(cli, make_workspace, tf_ge_model: Model) -> None:
    root = make_workspace({0: tf_ge_model})
    result = cli("ni", "conv1/Relu", "-s", "2", data=root)
    assert result.status == 0, result.err
    svg = root / "temp" / "op_graph" / "debug_0" / "conv1_Relu_2.svg"
    assert svg.is_file() and str(svg) in result.out.replace("\n", "")
    picture = svg.read_text()
    assert "conv1/Relu" in picture and "conv1/Conv2D" in picture and "to_half" in picture
    assert "FLOAT [1,8,8,4]" in picture


def test_ni_without_dot_still_writes_gv(cli, make_workspace, tf_ge_model: Model, tmp_path: Path) -> None:
    import os
    import sys

    root = make_workspace({0: tf_ge_model})
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "python3").symlink_to(sys.executable)
    result = cli("ni", "pool", "-s", "1", data=root, env={"PATH": str(bin_dir)})
    assert result.status == 0, result.err
    assert (root / "temp" / "op_graph" / "debug_0" / "pool_1.gv").is_file()
    assert "install graphviz" in result.out
    assert not (root / "temp" / "op_graph" / "debug_0" / "pool_1.svg").exists()
    assert os.environ.get("PATH")


def test_no_build_graph_says_what_was_found(cli, make_workspace, tf_ge_model: Model) -> None:
    root = make_workspace({}, extra_graphs={0: tf_ge_model})
    result = cli("ls", data=root)
    assert result.status == 1 and "ge_proto_00000001_PreRunBegin.txt" in result.err + result.out
    picked = cli("ls", "-g", "PreRun", "-t", "Softmax", data=root)
    assert picked.status == 0 and ls_ops(picked.out) == [("Softmax", "-", "softmax")]


def test_bad_graph_file_is_one_line(cli, make_workspace, tf_ge_model: Model) -> None:
    root = make_workspace({0: tf_ge_model})
    bad = root / "npu" / "debug_0" / "graph" / "ge_proto_00000095_graph_2_Build.txt"
    bad.write_text('graph {\n  op {\n    id: 12x\n  }\n}\n')
    result = cli("ls", "-t", "Softmax", data=root)
    assert "ge_proto_00000095_graph_2_Build.txt: line 3, column 5" in result.out + result.err
    assert ("Softmax", "-", "softmax") in ls_ops(result.out)


def test_completion_is_fast_on_100000_names(make_workspace, tf_ge_model: Model) -> None:
    from precision_tool.analysis.graphs.graph_index import GraphIndex
    from precision_tool.analysis.graphs.graph_summary import GraphFile, OpEntry
    from precision_tool.shell.command import CompletionRequest
    from precision_tool.shell.commands.op_names import complete_op_names
    from precision_tool.workspace import Workspace

    root = make_workspace({0: tf_ge_model})
    workspace = Workspace(root)
    assert complete_op_names(CompletionRequest(["ni"], "conv1/", None, workspace)) in ([], ["conv1/Conv2D", "conv1/Relu", "conv1/bias", "conv1/kernel"])
    index = GraphIndex(workspace)
    index.load()
    path = root / "big_Build.txt"
    entries = tuple(OpEntry(0, path, "g", f"net/block{i % 100}/op{i}", "Add", i, 0, None, None, None, None, (), -1, 0)
                    for i in range(100_000))
    index._files[path] = GraphFile(0, path, True, ("g",), entries, (), False)
    index._names = index._by_name = None
    started = time.perf_counter()
    found = index.complete("net/block42/op1")
    first = time.perf_counter() - started
    started = time.perf_counter()
    for _ in range(100):
        index.complete("net/block42/op1")
    repeated = (time.perf_counter() - started) / 100
    expected = sorted(e.name for e in entries if e.name.startswith("net/block42/op1"))
    assert found == expected[:200] and found[0] == "net/block42/op10042"
    print(f"first completion (index build) {first:.3f}s, then {repeated * 1e3:.3f} ms")


def test_cache_is_used_and_invalidated(make_workspace, tf_ge_model: Model) -> None:
    import os

    from precision_tool.analysis.graphs.graph_index import GraphIndex
    from precision_tool.workspace import Workspace

    root = make_workspace({0: tf_ge_model})
    first = GraphIndex(Workspace(root)).load()
    assert [f.from_cache for f in first] == [False]
    second = GraphIndex(Workspace(root)).load()
    assert [f.from_cache for f in second] == [True] and second[0].ops == first[0].ops
    graph_file = first[0].path
    os.utime(graph_file, ns=(1, 1))
    third = GraphIndex(Workspace(root)).load()
    assert [f.from_cache for f in third] == [False]
    # ops parsed from their own text block match the full parse
    index = GraphIndex(Workspace(root))
    index.load()
    entry = index.find("conv1/Conv2D")[0]
    assert entry.has_block and index.op(entry) == tf_ge_model.graphs[0].op("conv1/Conv2D")


def test_ac_cast_and_similarity(cli, make_workspace, tf_ge_model: Model, tf_ge_model_variant: Model) -> None:
    root = make_workspace({0: tf_ge_model, 1: tf_ge_model_variant})
    result = cli("ac", data=root)
    out = result.out
    lines = out.splitlines()
    assert "Cast ops that can lose information" in lines
    to_int = lines.index("  DT_FLOAT → DT_INT32  1 op(s): the fraction is dropped and large values overflow")
    assert lines[to_int + 1] == "    to_int"
    to_half = next(i for i, line in enumerate(lines) if line.startswith("  DT_FLOAT → DT_FLOAT16  1 op(s): fewer"))
    assert lines[to_half + 1] == "    to_half"
    from precision_tool.analysis.checks.graph_checks import IGNORED_TYPES

    compared = len([op for op in tf_ge_model.graphs[0].ops if op.type not in IGNORED_TYPES])
    # one line naming the files whole (the same name in both runs is said once), then each op and how
    assert (f"debug_0 vs debug_1 · ge_proto_00000094_graph_1_Build.txt · graph structure: 4 of {compared} ops "
            f"differ:") in lines
    pool = lines.index("  pool (MaxPool)")
    assert "    output 0: DT_FLOAT NHWC [1, 4, 4, 4] vs DT_FLOAT NHWC [1, 3, 3, 4]" in lines[pool + 1:pool + 4]
    assert "DT_FLOAT → DT_BF16" in out and "to_int, to_int" not in out
