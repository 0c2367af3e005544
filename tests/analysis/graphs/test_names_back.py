"""Every op name the tool prints can be given back to `ni`, and what `ni` says when a name is ambiguous
or unknown; all through the real CLI (one-shot, or stdin mode for many names in one process)."""

from __future__ import annotations

import copy
import re
from pathlib import Path

from precision_tool.formats.ge.ge_graph import Model, load_graph
from precision_tool.formats.npu.npu_dump import parse_dump_name, sanitize_op_name
from precision_tool.workspace import Workspace

HEADING = re.compile(r"^(\S+)  debug_\d+(?:, debug_\d+)* · graph ", re.M)


def _graph_ops(root: Path) -> tuple[set[str], set[str]]:
    (path,) = Workspace(root).build_graph_files(0)
    ops = load_graph(path).graphs[0].ops
    return {op.name for op in ops}, {op.type for op in ops}


def _printed_names(text: str, op_types: set[str]) -> set[str]:
    """Op names in `ac -c` output: compare panel titles and first-divergent lines ('[16] NAME'), the
    overflow line ('#1 TYPE NAME'), and the 'golden NAME' / 'other NPU run NAME' references. A replay's
    evidence lines ('    out0 T: golden cos 0.70 ...') name tensors and references, not ops: left out."""
    text = "\n".join(line for line in text.splitlines() if not re.match(r"\s+(out|in)\d", line))
    names = set(re.findall(r"\[\d+\] ([^\s()│─]+)", text))
    for op_type, name in re.findall(r"^#\d+ (\S+) (\S+)", text, re.M):
        names.add(name if op_type in op_types else op_type)
    names.update(re.findall(r"(?:golden|other NPU run) ([^\s()│─;,]+)", text))
    return {name.rstrip(";,.:") for name in names}


def test_every_name_printed_by_ac_ls_dump_and_overflow_is_accepted_by_ni(cli, demo_root: Path) -> None:
    op_names, op_types = _graph_ops(demo_root)
    checked = cli("ac", "-c", data=demo_root)
    printed = _printed_names(checked.out, op_types)
    # the planted op, its neighbours and the overflow op are there (in whichever spelling each panel uses)
    spelled = {sanitize_op_name(name) for name in printed}
    assert {"bn2_FusedBatchNormV3", "bn2_Relu", "pool2_MaxPool"} <= spelled, printed
    overflow = {n for n in printed if sanitize_op_name(n) == "gradients_fc2_MatMul_grad_MatMul_1"}
    assert overflow, checked.out
    listing = cli("ls", "dump", data=demo_root)
    dump_files = {word for word in listing.out.split() if parse_dump_name(word) is not None}
    assert len(dump_files) >= 2 * 60, listing.out[:2000]
    dump_ops = {parse_dump_name(word).op_name for word in dump_files}  # type: ignore[union-attr]
    names = sorted(printed | dump_files | dump_ops)
    # one process for all of them: stdin mode runs one command a line and exits 1 if any failed
    result = cli(data=demo_root, stdin="".join(f"ni {name}\n" for name in names))
    assert "ni: " not in result.out + result.err, re.findall(r"ni: .*", result.out + result.err)[:5]
    assert result.status == 0
    shown = HEADING.findall(result.out)
    assert len(shown) == len(names) and set(shown) <= op_names
    # each spelling led to the op it spells (dump-file spelling = the sanitised graph name)
    for name, op in zip(names, shown):
        base = parse_dump_name(name).op_name if parse_dump_name(name) else name  # type: ignore[union-attr]
        assert op == base or sanitize_op_name(op) == base, (name, op)


def test_fused_names_tensor_suffixes_and_files(cli, demo_root: Path) -> None:
    fused = cli("ni", "conv1/BiasAdd", data=demo_root)
    assert fused.status == 0, fused.out + fused.err
    lines = fused.out.splitlines()
    assert lines[0] == ("conv1/BiasAdd was fused into conv1/Conv2D (it is in that op's "
                        "_datadump_original_op_names)")
    assert HEADING.findall(fused.out) == ["conv1/Conv2D"]
    assert HEADING.findall(cli("ni", "conv1_BiasAdd", data=demo_root).out) == ["conv1/Conv2D"]
    # ls -n takes the dump-file spelling too
    listed = cli("ls", "-n", "bn2_FusedBatchNormV3", data=demo_root).out.splitlines()
    assert [line.split()[-1] for line in listed if re.match(r"^ +\d+  ", line)] == [
        "bn2/FusedBatchNormV3", "gradients/bn2/FusedBatchNormV3_grad/FusedBatchNormGradV3"]
    # NAME:output:N (and a TF tensor name NAME:N) show the op with that tensor marked
    for spelling in ("bn2/Relu:output:0", "bn2_Relu:output:0", "bn2/Relu:0"):
        marked = cli("ni", spelling, data=demo_root)
        assert marked.status == 0 and HEADING.findall(marked.out) == ["bn2/Relu"], spelling
        assert re.search(r"^ +output 0  ◀", marked.out, re.M), marked.out
        assert re.search(r"^    0  DT_FLOAT16 .*→ pool2/MaxPool:0.*◀$", marked.out, re.M), marked.out
    inputs = cli("ni", "bn2/Relu:input:0", data=demo_root)
    assert re.search(r"^ +input 0  ◀", inputs.out, re.M)
    # a dump file path, and a golden file path, name their op
    dump = next((demo_root / "npu" / "debug_0" / "dump").rglob("Conv2D.conv1_Conv2D.*"))
    by_path = cli("ni", str(dump), data=demo_root)
    assert by_path.out.splitlines()[0] == f"{dump.name} is a dump file of conv1/Conv2D"
    assert HEADING.findall(by_path.out) == ["conv1/Conv2D"]
    golden = next((demo_root / "tf" / "dump").glob("bn2_FusedBatchNormV3.5.*.npy"))
    by_golden = cli("ni", str(golden), data=demo_root)
    assert HEADING.findall(by_golden.out) == ["bn2/FusedBatchNormV3"]
    assert re.search(r"^ +bn2_FusedBatchNormV3\.5  ◀  golden only", by_golden.out, re.M), by_golden.out


def test_a_tensor_of_an_op_fused_away_marks_its_own_golden_row(cli, demo_root: Path) -> None:
    # conv1/BiasAdd and conv1/Relu went into conv1/Conv2D, whose output 0 is conv1/Relu:0 (golden conv1_Relu.0)
    for spelling in ("conv1/BiasAdd:0", "conv1/BiasAdd:output:0", "conv1_BiasAdd:0"):
        shown = cli("ni", spelling, data=demo_root)
        assert shown.status == 0 and HEADING.findall(shown.out) == ["conv1/Conv2D"], shown.out + shown.err
        marked = [line for line in shown.out.splitlines() if "◀" in line]
        assert len(marked) == 1 and re.match(r"^ +conv1_BiasAdd\.0  ◀  golden only", marked[0]), marked
    relu = cli("ni", "conv1/Relu:0", data=demo_root)
    marked = [line.split()[0] for line in relu.out.splitlines() if "◀" in line]
    assert marked == ["0", "output"], relu.out  # its Outputs line, and its row of the table (golden conv1_Relu.0)
    assert re.search(r"^ +output 0  ◀ .*· golden conv1_Relu\.0$", relu.out, re.M), relu.out
    inputs = cli("ni", "conv1/BiasAdd:input:1", data=demo_root)
    assert inputs.status == 0 and "◀" not in inputs.out, inputs.out
    assert inputs.out.splitlines()[0].endswith("; the inputs of an op fused away have no row of their own, so "
                                               "none is marked"), inputs.out


def test_unknown_and_ambiguous_names(cli, make_workspace, tf_ge_model: Model) -> None:
    model = copy.deepcopy(tf_ge_model)
    graph = model.graphs[0]
    to_int = graph.op("to_int")
    assert to_int is not None
    for i, name in enumerate(("x/y", "x.y")):  # both are spelled x_y in dump file names
        clone = copy.deepcopy(to_int)
        clone.name, clone.id, clone.dst_names, clone.dst_indexes = name, 200 + i, [], []
        graph.ops.append(clone)
    root = make_workspace({0: model})
    ambiguous = cli("ni", "x_y", data=root)
    assert ambiguous.out.splitlines() == ["x_y is the dump-file spelling of 2 ops; give one of these names:",
                                          "  x.y", "  x/y"]
    assert HEADING.findall(cli("ni", "x.y", data=root).out) == ["x.y"]
    near = cli("ni", "Relu", data=root)
    assert near.status == 1
    assert (near.out + near.err).strip() == "ni: no op is named 'Relu'; close matches: conv1/Relu"
    typo = cli("ni", "conv1/Reul", data=root)
    assert typo.status == 1 and "ni: no op is named 'conv1/Reul'; close matches: conv1/Relu" in typo.out + typo.err
    nothing = cli("ni", "zzzzzz", data=root)
    assert nothing.status == 1
    assert "ni: no op is named 'zzzzzz' and none contains it; `ls` lists the ops" in nothing.out + nothing.err
    assert len((nothing.out + nothing.err).strip().splitlines()) == 1


def test_completion_offers_every_accepted_spelling(make_workspace, tf_ge_model: Model) -> None:
    from precision_tool.shell.completion import ShellCompleter
    from precision_tool.shell.table import build_table

    root = make_workspace({0: tf_ge_model})
    completer = ShellCompleter(build_table(), Workspace(root))
    index_ready = completer.suggestions("ls -n conv")  # warms the index up in the background
    assert isinstance(index_ready, list)
    from precision_tool.analysis.graphs.graph_index import index_for

    index_for(Workspace(root)).load()
    assert completer.suggestions("ni conv1_R") == ["conv1_Relu"]
    assert completer.suggestions("ni conv1/B") == ["conv1/BiasAdd"]  # fused into conv1/Conv2D
    assert "conv1/Relu" in completer.suggestions("ni conv1/")


def test_an_exact_name_is_found_without_making_the_other_spellings(make_workspace, tf_ge_model: Model) -> None:
    """The other spellings (dump-file names, TF names fused away) are made only when a name is not an op's
    own: most `ni` calls name an op exactly, and making them took 0.1 s of every `ni` at 20,000 ops."""
    from precision_tool.analysis.graphs.graph_index import GraphIndex
    from precision_tool.analysis.ops.op_lookup import resolve

    index = GraphIndex(Workspace(make_workspace({0: tf_ge_model})))
    index.load()
    assert resolve(index, "conv1/Relu").names == ("conv1/Relu",)
    assert index._spellings is None and index._aliases is None
    assert resolve(index, "conv1_Relu").names == ("conv1/Relu",)  # a dump-file spelling: now they are made
    assert index._aliases is not None and "conv1_Relu" in index.complete("conv1_R")


def _blocks(out: str) -> list[tuple[str, str]]:
    """(op, its text) for each op block `ni` printed (a block starts at its heading)."""
    starts = [(m.start(), m.group(1)) for m in HEADING.finditer(out)]
    return [(name, out[start:end]) for (start, name), (end, _) in zip(starts, starts[1:] + [(len(out), "")])]


def test_every_name_and_id_ls_prints_and_every_golden_key_ni_prints_is_accepted(cli, demo_root: Path) -> None:
    op_names, op_types = _graph_ops(demo_root)
    rows = re.findall(r"^ +(\d+)  (\S+) +(\S+)", cli("ls", data=demo_root).out, re.M)
    assert {name for _, _, name in rows} == op_names and len(rows) == len(op_names)
    # every name `ls` prints, and every id (bare and as the panels print it, [16]), is the op of its row
    asked = [f"ni {name}\n" for _, _, name in rows] + [f"ni {i}\n" for i, _, _ in rows] + \
        [f"ni [{i}]\n" for i, _, _ in rows]
    result = cli(data=demo_root, stdin="".join(asked))
    assert result.status == 0 and "ni: " not in result.out + result.err, re.findall(r"ni: .*", result.out)[:5]
    expected = [name for _, _, name in rows] * 3
    assert HEADING.findall(result.out) == expected
    notes = [line for line in result.out.splitlines() if " is the Id of " in line]
    assert notes[:2] == ["0 is the Id of input in debug_0, debug_1", "1 is the Id of trans_Cast_0 in debug_0, debug_1"]
    # the ids of the vcs/ac panels and first-divergent lines ('[16] bn2/FusedBatchNormV3')
    checked = cli("ac", "-c", data=demo_root).out
    labels = {(i, name.rstrip(";,")) for i, name in re.findall(r"\[(\d+)\] ([^\s()│─]+)", checked)
              if name not in op_types}
    assert ("16", "bn2/FusedBatchNormV3") in labels
    for i, name in labels:
        assert HEADING.findall(cli("ni", f"[{i}]", data=demo_root).out) == [name]
    # every golden key `ni` prints (`· golden KEY`, `KEY  golden only`, `golden KEY: path`) names its op back,
    # with that golden tensor marked
    shown = cli(data=demo_root, stdin="".join(f"ni {name}\n" for name in sorted(op_names))).out
    keys: dict[str, str] = {}
    for op, block in _blocks(shown):
        for key in re.findall(r"(?:· golden |^    golden |^    )([\w-]+\.\d+)(?::| +golden only|$)", block, re.M):
            keys.setdefault(key, op)
    assert {"bn2_FusedBatchNormV3.0", "bn2_FusedBatchNormV3.5", "conv1_Relu.0", "conv1_BiasAdd.0"} <= set(keys)
    back = cli(data=demo_root, stdin="".join(f"ni {key}\n" for key in keys)).out
    blocks = _blocks(back)
    assert [op for op, _ in blocks] == list(keys.values())
    for (key, _), (_, block) in zip(keys.items(), blocks):
        marked = [line for line in block.splitlines() if "◀" in line]
        assert any(re.match(rf"^ +{re.escape(key)}  ◀", line) or line.endswith(f"· golden {key}")
                   for line in marked), (key, marked)
