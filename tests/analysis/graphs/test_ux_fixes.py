"""UX fixes found by a reviewer on the demo workspace, each driven through the one-shot CLI."""

from __future__ import annotations

import re
from pathlib import Path

from precision_tool.formats.ge.ge_graph import Model


def _row_after(lines: list[str], header: str) -> list[str]:
    """The words of the statistics row right below a tensor's header line in `ni`."""
    return lines[lines.index(header) + 1].split()


def test_json_without_graph_is_not_a_graph(cli, make_workspace, tf_ge_model: Model, tmp_path: Path) -> None:
    from precision_tool.formats.ge.ge_graph import write_graph_json

    root = make_workspace({0: tf_ge_model})
    graph_dir = root / "npu" / "debug_0" / "graph"
    (graph_dir / "ge_proto_00000002_Empty.json").write_text("{}\n")
    (graph_dir / "ge_proto_00000003_Empty.txt").write_text("\n")
    result = cli("ls", "-g", "Empty", data=root)
    text = result.out + result.err
    assert "ge_proto_00000002_Empty.json: not a GE graph: no graph or op found" in text
    assert "ge_proto_00000003_Empty.txt: not a GE graph: no graph or op found" in text
    # a real JSON graph is still read
    write_graph_json(tf_ge_model, graph_dir / "ge_proto_00000004_Real.json")
    real = cli("ls", "-g", "Real", "-t", "Softmax", data=root)
    assert real.status == 0 and re.search(r"^  +\d+  Softmax +softmax$", real.out, re.M)


def test_ni_stats_cut_device_padding(cli, make_workspace, tf_ge_model: Model) -> None:
    import numpy as np

    from precision_tool.formats.tf.golden import golden_file_name
    from precision_tool.formats.npu.layouts import to_device
    from precision_tool.formats.npu.dump_types import Format
    from precision_tool.formats.npu.npu_dump import dump_file_name
    from precision_tool.formats.npu.npu_dump_write import TensorSpec, write_dump

    root = make_workspace({0: tf_ge_model})
    dump_dir = root / "npu" / "debug_0" / "dump" / "20240613143502" / "0" / "ge_default_1" / "1" / "0"
    dump_dir.mkdir(parents=True)
    rng = np.random.default_rng(1)
    host = (rng.standard_normal((1, 8, 8, 4)) + 3).astype(np.float16)  # no zeros; 4 of 16 channels
    device = to_device(host, "NHWC", "NC1HWC0")
    # input 0 converts (origin NHWC from the graph); output 0's original shape fits no reading → fallback
    write_dump(dump_dir / dump_file_name("Relu", "conv1/Relu", 7, 0, 1718260502000001), op_name="conv1/Relu",
               inputs=[TensorSpec(device, format=Format.NC1HWC0, original_shape=(1, 8, 8, 4))],
               outputs=[TensorSpec(device, format=Format.NC1HWC0, original_shape=(5, 7))])
    golden = root / "tf" / "dump"
    golden.mkdir(parents=True)
    np.save(golden / golden_file_name("conv1/Relu", 0, 1718260502000002), host.astype(np.float32))
    np.save(golden / golden_file_name("conv1/Relu", 1, 1718260502000003), np.float32(2.5))
    result = cli("ni", "conv1/Relu", data=root)
    assert result.status == 0, result.err
    lines = result.out.splitlines()
    mean = f"{float(host.astype(np.float32).mean()):.6g}"
    numbers = [f"{float(host.max()):.6g}", f"{float(host.min()):.6g}", mean, "0", "0", "0"]
    assert _row_after(lines, "    input 0  FLOAT16 NHWC  (from NC1HWC0 [1,1,8,8,16], padding cut)") == \
        ["debug_0", "[1,8,8,4]", *numbers]
    output = next(line for line in lines if line.startswith("    output 0  FLOAT16 NC1HWC0  (device layout, "
                                                             "padding included"))
    padded = 1 * 8 * 8 * 12
    npu, golden_row = lines[lines.index(output) + 1].split(), lines[lines.index(output) + 2].split()
    assert npu[:2] == ["debug_0", "[1,1,8,8,16]"] and npu[-1] == str(padded)
    # golden rows: dtype in the header line, shape in the row, a 0-d tensor's shape says scalar
    assert output.endswith("· golden conv1_Relu.0") and golden_row == ["golden", "[1,8,8,4]", *numbers]
    assert _row_after(lines, "    conv1_Relu.1  golden only, float32") == \
        ["golden", "scalar", "2.5", "2.5", "2.5", "0", "0", "0"]


def test_graph_filter_matching_nothing_says_so(cli, make_workspace, tf_ge_model: Model) -> None:
    root = make_workspace({0: tf_ge_model})
    result = cli("ni", "-n", "conv1/Relu", "-g", "nope", data=root)
    assert result.status == 1
    text = result.out + result.err
    assert "no graph matches 'nope'; graphs: ge_default_1, ge_proto_00000094_graph_1_Build.txt" in text
    assert "did you mean" not in text
    assert cli("ni", "-n", "conv1/Relu", "-g", "default_1", data=root).status == 0
    listed = cli("ls", "-g", "nope", data=root)
    assert listed.status == 0 and "0 op(s)" in listed.out
    assert "no graph matches 'nope'; graphs: ge_default_1" in listed.out
    passes = cli("ls", "-f", "nope", data=root)
    assert "no op has a fusion pass containing 'nope'" in passes.out
    both = cli("ls", "-t", "Softmax", "-n", "conv1", data=root)
    assert "0 op(s)" in both.out and "no op matches all the filters together" in both.out


def test_damaged_graph_ls_header_and_cast_check(cli, make_workspace, tf_ge_model: Model) -> None:
    root = make_workspace({0: tf_ge_model, 1: tf_ge_model})
    damaged = root / "npu" / "debug_0" / "graph" / "ge_proto_00000094_graph_1_Build.txt"
    lines = damaged.read_text().splitlines(keepends=True)
    damaged.write_text("".join(lines[:4] + ["garbage line here\n"] + lines[4:]))
    listed = cli("ls", "-t", "Cast", data=root)
    assert listed.status == 0
    assert "ge_proto_00000094_graph_1_Build.txt: line 5" in listed.out + listed.err
    rows = listed.out.strip().splitlines()
    header = rows.index("debug_1 · ge_proto_00000094_graph_1_Build.txt · ge_default_1")
    assert rows[header + 1].split() == ["id", "type", "name"]
    assert rows[header + 2].split()[1:] == ["Cast", "to_half"] and rows[-1] == "3 op(s)"
    checked = cli("ac", data=root)
    assert "cast: not checked (cannot read the graph):" in checked.out
    assert "debug_0/graph/ge_proto_00000094_graph_1_Build.txt: line 5" in checked.out.replace("\n", "")
    assert "Cast ops that can lose information" in checked.out


def test_ls_header_with_one_graph(cli, make_workspace, tf_ge_model: Model) -> None:
    root = make_workspace({0: tf_ge_model})
    rows = cli("ls", "-t", "Softmax", data=root).out.strip().splitlines()
    assert rows == ["debug_0 · ge_proto_00000094_graph_1_Build.txt · ge_default_1",
                    "  id  type     name", "  12  Softmax  softmax", "1 op(s)"]


def test_cast_table_shows_every_name_and_ni_paths_copy_whole(cli, make_workspace, tf_ge_model: Model) -> None:
    import copy

    import numpy as np

    from precision_tool.formats.npu.npu_dump import dump_file_name
    from precision_tool.formats.npu.npu_dump_write import TensorSpec, write_dump

    model = copy.deepcopy(tf_ge_model)
    graph = model.graphs[0]
    to_half = graph.op("to_half")
    assert to_half is not None
    for i in range(35):
        clone = copy.deepcopy(to_half)
        clone.name, clone.id, clone.dst_names, clone.dst_indexes = f"trans_Cast_{i}", 100 + i, [], []
        graph.ops.append(clone)
    root = make_workspace({0: model})
    def cast_names(out: str) -> str:  # the line of names under the DT_FLOAT → DT_FLOAT16 line (a pipe: one line)
        lines = out.splitlines()
        at = next(i for i, line in enumerate(lines) if line.startswith("  DT_FLOAT → DT_FLOAT16  "))
        return lines[at + 1]
    wide = cli("ac", data=root, env={"COLUMNS": "120"})
    assert "  DT_FLOAT → DT_FLOAT16  36 op(s): fewer mantissa bits and smaller range (overflow to inf)" in wide.out
    names = ["to_half"] + [f"trans_Cast_{i}" for i in range(29)]
    assert cast_names(wide.out) == "    " + ", ".join(names) + " and 6 more (-l 6 shows more)"
    assert cast_names(cli("ac", "-l", "4", data=root).out).endswith("trans_Cast_33, trans_Cast_34")
    # ni: file paths whole, last on their line, and statistics lines fit 60 columns in a pipe
    long_name = "conv1/Relu"
    dump_dir = root / "npu" / "debug_0" / "dump" / "20240613143502" / "0" / ("ge_default_1" * 6) / "1" / "0"
    dump_dir.mkdir(parents=True)
    file = dump_dir / dump_file_name("Relu", long_name, 7, 0, 1718260502000001)
    write_dump(file, op_name=long_name, inputs=[TensorSpec(np.ones((2, 3), np.float32))], outputs=[])
    shown = cli("ni", long_name, data=root, env={"COLUMNS": "60"})
    assert shown.status == 0, shown.err
    lines = shown.out.splitlines()
    assert f"    debug_0: {file}" in lines
    # no golden tensors in this workspace: the header says what to run instead of "then the golden tensor"
    head = next(i for i, line in enumerate(lines) if line.startswith("  Tensors  NPU dumps in the origin layout "
                                                                      "(device padding cut), no golden tensors yet: "))
    table = lines[head + 1:lines.index("  Files")]
    assert table and all(len(line) <= 60 for line in table)
    assert _row_after(lines, "    input 0  FLOAT ND") == ["debug_0", "[2,3]", "1", "1", "1", "0", "0", "0"]


def test_ni_graph_option_completes_graphs_and_files(cli, make_workspace, tf_ge_model: Model) -> None:
    from precision_tool.shell.completion import ShellCompleter
    from precision_tool.shell.table import build_table
    from precision_tool.workspace import Workspace

    root = make_workspace({0: tf_ge_model}, extra_graphs={0: tf_ge_model})
    completer = ShellCompleter(build_table(), Workspace(root))
    files = ["ge_proto_00000001_PreRunBegin.txt", "ge_proto_00000094_graph_1_Build.txt"]
    # before the index exists only file names are offered (no parse while typing)
    assert set(files) <= set(completer.suggestions("ni conv1/Relu -g "))
    assert cli("ls", "-t", "Softmax", data=root).status == 0  # builds the cached summaries
    fresh = ShellCompleter(build_table(), Workspace(root))
    assert fresh.suggestions("ni -g ") == ["ge_default_1", *files]
    assert fresh.suggestions("ni -g ge_d") == ["ge_default_1"]
    assert fresh.suggestions("ni --graph ge_proto_0000009") == ["ge_proto_00000094_graph_1_Build.txt"]
    assert "conv1/Relu" in fresh.suggestions("ni conv1/R")
