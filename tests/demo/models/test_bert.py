"""`python -m precision_tool.demo.models.bert`: BERT's pre-training step builds with Google's structure
and names, runs one finite step, and builds the same graph every time. Each case runs in a child process
(TensorFlow stays out of the test process)."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys

import pytest

from tests.conftest import ROOT, TF_IMPORT_LEFTOVERS

pytestmark = [pytest.mark.tf, pytest.mark.slow]


def _child_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if k not in ("PRECISION_TOOL_CONFIG", "PRECISION_DATA") and k not in TF_IMPORT_LEFTOVERS}
    env["TF_CPP_MIN_LOG_LEVEL"] = "2"
    return env


def _run(*args: str) -> subprocess.CompletedProcess:
    proc = subprocess.run([sys.executable, *args], capture_output=True, text=True, cwd=ROOT, env=_child_env(),
                          timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return proc


def _report(*args: str) -> dict:
    """The module's JSON line for these arguments."""
    proc = _run("-m", "precision_tool.demo.models.bert", *args)
    return json.loads(proc.stdout.strip().splitlines()[-1])


def _expected_counts(layers: int) -> dict[str, int]:
    """Op types that follow from the architecture: per layer 2 forward and 4 gradient BatchMatMulV2, one
    Softmax, 2 LayerNorms, a GELU (tanh form) and 16 dense variables; besides the layers the embedding and
    MLM-transform LayerNorms, the MLM GELU, the pooler's tanh and 14 more dense variables."""
    return {"BatchMatMulV2": 6 * layers, "Softmax": layers, "Rsqrt": 2 * layers + 2,
            "SquaredDifference": 2 * layers + 2, "Tanh": layers + 2, "Erf": 0,
            "ResourceApplyAdam": 16 * layers + 14, "GatherV2": 2, "OneHot": 1,
            "SparseSoftmaxCrossEntropyWithLogits": 2}


def _check_structure(report: dict, layers: int) -> None:
    assert report["model"] == "bert" and report["layers"] == layers
    assert report["forward_softmax"] == layers  # one attention softmax per encoder layer
    types = report["op_types"]
    for name, count in _expected_counts(layers).items():
        assert types[name] == count, (name, types)
    # the word embeddings' sparse Adam path: Unique + UnsortedSegmentSum de-duplicate the gathered rows,
    # ResourceScatterAdd adds them into m and v (TF's v1 Adam builds no ResourceSparseApplyAdam)
    assert types["Unique"] >= 1 and types["UnsortedSegmentSum"] >= 1 and types["ResourceScatterAdd"] == 2
    assert types["Mean"] >= 2 * types["SquaredDifference"]  # moments' mean and variance
    assert len(report["graph_sha256"]) == 64


def test_reduced_step_runs_and_the_build_is_deterministic():
    first = _report("--size", "reduced")
    _check_structure(first, layers=2)
    assert first["size"] == "reduced"
    assert math.isfinite(first["loss"]) and 0 < first["loss"] < 20  # ~ln(1024) + ln(2) at the start
    assert first["step_seconds"] is not None and first["description"].startswith("BERT-base: 2 layers")
    second = _report("--size", "reduced")
    assert second["graph_sha256"] == first["graph_sha256"]
    assert second["loss"] == first["loss"]


def test_full_size_has_bert_base_twelve_layers():
    report = _report("--size", "full", "--no-run")
    _check_structure(report, layers=12)
    assert report["loss"] is None and report["step_seconds"] is None
    assert report["description"].startswith("BERT-base: 12 layers")


def test_op_and_variable_names_are_google_berts():
    script = """
from precision_tool.capture import tf_setup
from precision_tool.demo.models import bert
model = bert.build("reduced")
graph = model.graph
names = ["bert/embeddings/GatherV2", "bert/embeddings/word_embeddings", "bert/embeddings/LayerNorm/gamma",
         "bert/encoder/layer_0/attention/self/query/MatMul", "bert/encoder/layer_0/attention/self/key/BiasAdd",
         "bert/encoder/layer_1/attention/self/Softmax", "bert/encoder/layer_1/attention/output/dense/MatMul",
         "bert/encoder/layer_1/attention/output/LayerNorm/moments/SquaredDifference",
         "bert/encoder/layer_1/attention/output/LayerNorm/batchnorm/Rsqrt",
         "bert/encoder/layer_1/intermediate/dense/Tanh", "bert/encoder/layer_1/output/dense/BiasAdd",
         "bert/encoder/layer_1/output/LayerNorm/beta", "bert/pooler/dense/Tanh",
         "cls/predictions/transform/dense/MatMul", "cls/predictions/output_bias", "cls/seq_relationship/loss",
         "total_loss", "loss_scale/mul", "Adam/update_bert/embeddings/word_embeddings/ResourceScatterAdd"]
missing = [n for n in names if n not in {op.name for op in graph.get_operations()}]
assert not missing, missing
assert model.name == "bert" and model.size == "reduced" and model.loss_scale == bert.LOSS_SCALE
assert model.loss.name == "total_loss:0" and model.scaled_loss.name == "loss_scale/mul:0"
placeholders = {op.name + ":0" for op in graph.get_operations() if op.type == "Placeholder"}
assert placeholders == set(model.feeds), (placeholders, sorted(model.feeds))
assert "bert/encoder/layer_2/attention/self/Softmax" not in {op.name for op in graph.get_operations()}
print("ok")
"""
    assert _run("-c", script).stdout.strip().endswith("ok")
