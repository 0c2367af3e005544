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
    assert "KERNEL:" in answer.splitlines()[2]
    assert "(SIMULATED NPU run) vs golden" in answer
    marker = json.loads((root / "npu" / "debug_0" / "simulated.json").read_text())
    assert marker["planted_faults"] == [planted.text] and marker["simulated"] is True
    assert (root / "temp" / "report").is_dir() and (root / "tf" / "checkpoints" / "manifest.json").is_file()
    if model == "widedeep":  # the global step's increment: a scalar variable, dumped as [1], replays
        replay = cli("--data", str(root), "replay", "-q", "Ftrl", timeout=600)
        assert replay.status == 0 and "replay [" in replay.out and "(AssignAddVariableOp): OK" in replay.out, replay.out


def test_demo_size_needs_a_model(cli, tmp_path) -> None:
    result = cli("demo", str(tmp_path / "x"), "--size", "reduced")
    assert result.status != 0
    assert "demo --size: it sizes a real architecture; give it with --model NAME" in result.out + result.err
    assert not (tmp_path / "x").exists()
