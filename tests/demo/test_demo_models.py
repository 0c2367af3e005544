"""`demo --model NAME --size reduced`: each real architecture built, its step golden on CPU and on the
simulated NPU with its planted kernel fault, then `ac -c --report`: the answer names the planted op first,
with the replay's verdict KERNEL, and every run is marked simulated. (The full sizes are built by
benchmarks/bench_models.py.)"""

from __future__ import annotations

import json

import pytest

from precision_tool.demo.model_demo import planted_fault

pytestmark = [pytest.mark.tf, pytest.mark.slow]


@pytest.mark.parametrize("model", ["resnet50", "bert", "widedeep"])
def test_demo_model_names_its_planted_op_with_kernel(cli, tmp_path, model) -> None:
    root = tmp_path / model
    result = cli("demo", str(root), "--model", model, "--size", "reduced", timeout=900)
    assert result.status == 0, result.out[-3000:] + result.err[-3000:]
    planted = planted_fault(model, "reduced")
    out = result.out
    assert f"planted fault: {planted.text}." in " ".join(out.split())
    answer = out[out.index("answer ─"):]
    first = answer.splitlines()[1]
    assert first.startswith("first divergent op: [") and f"] {planted.op_name} (" in first, first
    # the line of the model's code that made it (docs/source-lines.md): ResNet-50's conv+bn helper, BERT's
    # attention, Wide&Deep's deep part
    made = {"resnet50": "in _conv_bn(): ", "bert": "in _attention(): ", "widedeep": "in _deep(): "}[model]
    lines = answer.splitlines()
    assert lines[2].startswith(f"  made at {model}.py:") and made in lines[2]
    verdict = next(line for line in lines[2:] if not line.startswith("  made at "))  # a fused op: a line per op
    assert "KERNEL:" in verdict
    assert "(SIMULATED NPU run) vs golden" in answer
    passes = {"resnet50": ["FusedBatchnormFusionPass", "FusedBatchNormGradFusionPass", "TbeConvBnreduceFusionPass",
                           "BNUpdateEltwiseFusionPass"],
              "bert": ["ScopeLayerNormPass", "ScopeLayerNormGradPass", "MatMulBiasAddFusionPass"],
              "widedeep": ["MatMulBiasAddFusionPass"]}[model]
    assert all(f"│ {name} " in out for name in passes), out  # ac's tables of the passes that fired
    marker = json.loads((root / "npu" / "debug_0" / "simulated.json").read_text())
    assert marker["planted_faults"] == [planted.text] and marker["simulated"] is True
    assert (root / "temp" / "report").is_dir() and (root / "tf" / "checkpoints" / "manifest.json").is_file()
    fused = {"resnet50": ["conv1/FusedBatchNormV3_Updateconv1/Relu", "stage1/block1/shortcut/FusedBatchNormV3_Update",
                          "gradients/conv1/FusedBatchNormV3_grad/FusedBatchNormGradV3_Update",
                          "gradients/conv1/FusedBatchNormV3_grad/FusedBatchNormGradV3_Reduce"],
             "bert": ["bert/encoder/layer_0/attention/output/LayerNorm",
                      "gradients/bert/encoder/layer_0/attention/output/LayerNorm"]}.get(model)
    if fused:  # the fused ops replay: their TF subgraphs rebuilt, outputs without a TF tensor left out
        replay = cli("--data", str(root), "replay", "-q", *fused, timeout=600)
        assert replay.status == 0 and "CANNOT" not in replay.out, replay.out
        assert replay.out.count("replay [") == len(fused), replay.out
    if model == "widedeep":  # the global step's increment: a scalar variable, dumped as [1], replays
        replay = cli("--data", str(root), "replay", "-q", "Ftrl", timeout=600)
        assert replay.status == 0 and "replay [" in replay.out and "(AssignAddVariableOp): OK" in replay.out, replay.out


def test_demo_size_needs_a_model(cli, tmp_path) -> None:
    result = cli("demo", str(tmp_path / "x"), "--size", "reduced")
    assert result.status != 0
    assert "demo --size: it sizes a real architecture; give it with --model NAME" in result.out + result.err
    assert not (tmp_path / "x").exists()


@pytest.mark.reference
def test_reference_msaccucmp_writes_our_rows_for_widedeep(cli, tmp_path, reference_tool) -> None:
    """The simulated run compared by msaccucmp (the Build graph as atc JSON) gives our CSV row for row,
    the groups of folded constants sharing one original name included (one NaN row naming each)."""
    import csv
    import subprocess

    from precision_tool.formats.ge.ge_graph import load_graph, write_graph_json
    from precision_tool.workspace import Workspace

    root = tmp_path / "wd"
    assert cli("demo", str(root), "--model", "widedeep", "--size", "reduced", "--no-check", timeout=900).status == 0
    assert cli("--data", str(root), "vc", timeout=600).status == 0
    ws = Workspace(root)
    graph_json = tmp_path / "graph.json"
    write_graph_json(load_graph(ws.build_graph_files(0)[0]), graph_json)
    dump = next(p for p in ws.newest_dump_dir(0).rglob("*") if p.is_file()).parent
    out = tmp_path / "ref"
    out.mkdir()
    proc = subprocess.run([str(reference_tool), "compare", "-m", str(dump), "-g", str(ws.golden_dir), "-f",
                           str(graph_json), "-out", str(out)], capture_output=True, text=True, timeout=600)
    assert proc.returncode in (0, 2), proc.stdout[-2000:] + proc.stderr[-2000:]
    theirs = list(csv.reader(open(next(out.glob("result_*.csv")), newline="")))
    ours = list(csv.reader(open(next((root / "temp" / "vector_compare").glob("*/result_*[0-9].csv")), newline="")))
    assert len(theirs) == len(ours) > 400
    assert [row for row in ours if row not in theirs] == []
    assert any("ConcatOffset_1" in row[-1] for row in ours)  # both constants of the group named
