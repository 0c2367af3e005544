"""`ni` takes an op id (`16`, `[16]`, as `ls`, `ni` and the vcs/ac panels print it) and a golden key
(`bn2_FusedBatchNormV3.0`, as `ni` prints golden tensors): what each shows, marks and says when it fits
several ops or none."""

from __future__ import annotations

import copy
import re
import shutil
from pathlib import Path

from precision_tool.formats.ge.ge_graph import Graph, Model

HEADING = re.compile(r"^(\S+)  debug_\d+(?:, debug_\d+)* · graph ", re.M)


def _marked(out: str) -> list[str]:
    return [line.strip() for line in out.splitlines() if "◀" in line]


def test_golden_keys_mark_their_tensor(cli, demo_root: Path) -> None:
    output = cli("ni", "bn2_FusedBatchNormV3.0", data=demo_root)
    assert output.status == 0 and HEADING.findall(output.out) == ["bn2/FusedBatchNormV3"]
    assert output.out.splitlines()[0] == "bn2_FusedBatchNormV3.0 is a golden tensor of bn2/FusedBatchNormV3"
    marked = _marked(output.out)  # its Outputs line and its row of the table
    assert len(marked) == 2 and marked[0].startswith("0  DT_FLOAT16") and marked[1].startswith("output 0  ◀")
    assert marked[1].endswith("· golden bn2_FusedBatchNormV3.0")
    only = cli("ni", "bn2_FusedBatchNormV3.5", data=demo_root)
    assert _marked(only.out) == ["bn2_FusedBatchNormV3.5  ◀  golden only, float32"]
    # the golden tensor of a TF op fused away: the op it went into, its own golden row marked
    fused = cli("ni", "conv1_BiasAdd.0", data=demo_root)
    assert HEADING.findall(fused.out) == ["conv1/Conv2D"]
    assert fused.out.splitlines()[0] == ("conv1_BiasAdd.0 is a golden tensor of conv1/Conv2D (conv1_BiasAdd was "
                                         "fused into it)")
    assert _marked(fused.out) == ["conv1_BiasAdd.0  ◀  golden only, float32"]
    # a slot with no golden file: the op, and a note saying so; a key of no op: one line, exit status 1
    missing = cli("ni", "bn2_Relu.7", data=demo_root)
    assert missing.status == 0 and HEADING.findall(missing.out) == ["bn2/Relu"] and not _marked(missing.out)
    assert missing.out.splitlines()[0] == (f"bn2_Relu.7 names a golden tensor of bn2/Relu, but there is no "
                                           f"bn2_Relu.7.*.npy in {demo_root}/tf/dump")
    unknown = cli("ni", "nosuchop_here.0", data=demo_root)
    assert unknown.status == 1 and len((unknown.out + unknown.err).strip().splitlines()) == 1
    assert "ni: no op is named 'nosuchop_here.0'" in unknown.out + unknown.err


def test_op_ids(cli, demo_root: Path) -> None:
    for spelling in ("16", "[16]", " [16] "):
        shown = cli("ni", spelling, data=demo_root)
        assert shown.status == 0 and HEADING.findall(shown.out) == ["bn2/FusedBatchNormV3"], spelling
        assert shown.out.splitlines()[0] == f"{spelling.strip()} is the Id of bn2/FusedBatchNormV3 in debug_0, debug_1"
        assert "  Id           16" in shown.out.splitlines()
    assert HEADING.findall(cli("ni", "-n", "[8]", data=demo_root).out) == ["conv1/Conv2D"]
    unknown = cli("ni", "999", data=demo_root)
    assert unknown.status == 1
    assert (unknown.out + unknown.err).strip() == \
        "ni: no op is named '999' and no op has Id 999 (the ids run from 0 to 93)"
    assert cli("ni", "[16", data=demo_root).status == 1  # not an id: a name, and no op is named so


def _swapped(model: Model, first: str, second: str) -> Model:
    """A copy of `model` whose ops `first` and `second` have each other's ids."""
    changed = copy.deepcopy(model)
    a, b = changed.graphs[0].op(first), changed.graphs[0].op(second)
    assert a is not None and b is not None
    a.id, b.id = b.id, a.id
    return changed


def test_an_id_of_several_ops_lists_them_and_where(cli, make_workspace, tf_ge_model: Model) -> None:
    relu, pool = tf_ge_model.graphs[0].op("conv1/Relu"), tf_ge_model.graphs[0].op("pool")
    assert relu is not None and pool is not None
    # the runs' graphs disagree: debug_1 gave conv1/Relu's id to pool
    root = make_workspace({0: tf_ge_model, 1: _swapped(tf_ge_model, "conv1/Relu", "pool")})
    listed = cli("ni", str(relu.id), data=root)
    assert listed.status == 0
    assert listed.out.splitlines() == [
        f"Id {relu.id} is 2 different ops; give one of these names:",
        "  conv1/Relu  debug_0 · graph ge_default_1", "  pool  debug_1 · graph ge_default_1"]
    for line in listed.out.splitlines()[1:]:  # each candidate is accepted back
        assert HEADING.findall(cli("ni", line.split()[0], data=root).out) == [line.split()[0]]
    # two graphs of one run hold the id (a model with a second graph, as subgraphs are)
    model = copy.deepcopy(tf_ge_model)
    other = copy.deepcopy(model.graphs[0].ops[:2])
    for op in other:
        op.name, op.inputs, op.dst_names, op.dst_indexes = f"sub/{op.name}", [], [], []
    model.graphs.append(Graph(name="sub_graph", ops=other))
    shutil.rmtree(root)  # (make_workspace writes the same folder each time)
    root = make_workspace({0: model, 1: model})
    first = model.graphs[0].ops[0]
    both = cli("ni", f"[{first.id}]", data=root)
    assert both.out.splitlines() == [f"Id {first.id} is 2 different ops; give one of these names:",
                                     f"  {first.name}  debug_0, debug_1 · graph ge_default_1",
                                     f"  sub/{first.name}  debug_0, debug_1 · graph sub_graph"]
    # -g: the id in the graphs -g selects (here one that is not a Build graph)
    shutil.rmtree(root)
    root = make_workspace({0: tf_ge_model}, extra_graphs={0: _swapped(tf_ge_model, "conv1/Relu", "pool")})
    assert HEADING.findall(cli("ni", str(relu.id), data=root).out) == ["conv1/Relu"]
    assert HEADING.findall(cli("ni", str(relu.id), "-g", "PreRunBegin", data=root).out) == ["pool"]


def test_a_key_copied_with_its_label_colon_is_accepted(cli, demo_root: Path) -> None:
    """`ni` prints `golden bn2_FusedBatchNormV3.0: PATH`; a double-click may take the colon too."""
    shown = cli("ni", "bn2_FusedBatchNormV3.0:", data=demo_root)
    assert shown.status == 0, shown.out + shown.err
    assert shown.out.startswith("bn2_FusedBatchNormV3.0 is a golden tensor of bn2/FusedBatchNormV3")
