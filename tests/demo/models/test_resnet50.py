"""ResNet-50 v1.5 (`demo --model resnet50`): the op types of a real training step, the conv+BN counts of
both sizes, a first loss near ln(classes), and the same graph and loss from every build.

Each check runs the module in a child process (`python -m precision_tool.demo.models.resnet50`), as the
demo does: TensorFlow set up by tf_setup before it is imported, and no TensorFlow in the test process.
"""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys

import pytest

from tests.conftest import ROOT, TF_IMPORT_LEFTOVERS

pytestmark = [pytest.mark.tf, pytest.mark.slow]

MODULE = "precision_tool.demo.models.resnet50"
CLASSES = 10
# Every kernel of the step: forward, backward (gradients) and the Momentum update
STEP_TYPES = ("Conv2D", "FusedBatchNormV3", "Relu", "MaxPool", "Mean", "MatMul", "BiasAdd",
              "SoftmaxCrossEntropyWithLogits", "Conv2DBackpropFilter", "Conv2DBackpropInput",
              "FusedBatchNormGradV3", "ReluGrad", "MaxPoolGrad", "BiasAddGrad", "ResourceApplyMomentum")
CONV_BN_TYPES = ("Conv2D", "FusedBatchNormV3", "Conv2DBackpropFilter", "Conv2DBackpropInput",
                 "FusedBatchNormGradV3")


def run_module(*args: str) -> dict:
    """The module's JSON line (its last line of output)."""
    env = {k: v for k, v in os.environ.items() if k not in TF_IMPORT_LEFTOVERS}
    env["TF_CPP_MIN_LOG_LEVEL"] = "2"
    proc = subprocess.run([sys.executable, "-m", MODULE, *args], capture_output=True, text=True,
                          cwd=ROOT, env=env, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


@pytest.fixture(scope="module")
def reduced_runs() -> list[dict]:
    """Two separate builds and steps of the reduced size."""
    return [run_module("--size", "reduced") for _ in range(2)]


def test_reduced_step_has_every_op_type_of_a_training_step(reduced_runs):
    counts = reduced_runs[0]["op_types"]
    missing = [name for name in STEP_TYPES if not counts[name]]
    assert not missing, counts


def test_reduced_has_one_block_per_stage(reduced_runs):
    report = reduced_runs[0]
    convs = 1 + 4 * 3 + 4  # conv1, three per bottleneck block, a projection per stage
    assert {name: report["op_types"][name] for name in CONV_BN_TYPES} == dict.fromkeys(CONV_BN_TYPES, convs)
    # kernel, gamma and beta per conv, the dense kernel and bias: each updated by Momentum
    assert report["variables"] == report["op_types"]["ResourceApplyMomentum"] == 3 * convs + 2
    assert report["op_types"]["Relu"] == report["op_types"]["ReluGrad"] == 1 + 4 * 3
    assert "[1,1,1,1]" in report["description"]


def test_reduced_first_loss_is_near_chance(reduced_runs):
    report = reduced_runs[0]
    assert math.isfinite(report["loss"]) and math.isfinite(report["loss_after"])
    assert abs(report["loss"] - math.log(CLASSES)) < 0.5, report["loss"]


def test_every_build_is_the_same_graph_and_step(reduced_runs):
    first, second = reduced_runs
    assert first["sha256"] == second["sha256"]
    assert first["ops"] == second["ops"]
    assert (first["loss"], first["loss_after"]) == (second["loss"], second["loss_after"])


def test_full_size_has_the_53_conv_bn_of_resnet50():
    report = run_module("--size", "full", "--no-run")
    assert "loss" not in report  # built only
    assert {name: report["op_types"][name] for name in CONV_BN_TYPES} == dict.fromkeys(CONV_BN_TYPES, 53)
    assert report["op_types"]["ResourceApplyMomentum"] == report["variables"] == 3 * 53 + 2
    assert report["op_types"]["Relu"] == 1 + 16 * 3  # conv1, then two inside and one after each block
    assert report["op_types"]["MaxPool"] == report["op_types"]["MaxPoolGrad"] == 1
    assert "[3,4,6,3]" in report["description"] and "widths 64-2048" in report["description"]
