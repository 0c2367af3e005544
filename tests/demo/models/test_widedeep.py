"""Wide&Deep's training step (`python -m precision_tool.demo.models.widedeep`) in child processes: the op
types of the sparse embedding path and the MLP are there, the first loss is about ln 2, builds repeat."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from precision_tool.demo.models import widedeep

pytestmark = [pytest.mark.tf, pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[3]


def _report(*args: str) -> dict[str, Any]:
    """The JSON line the module prints for `args` (a fresh interpreter: a build of its own)."""
    env = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2"}
    done = subprocess.run([sys.executable, "-m", "precision_tool.demo.models.widedeep", *args], cwd=ROOT,
                          env=env, capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.fixture(scope="module")
def reduced() -> dict[str, Any]:
    return _report("--size", "reduced")


def _check_structure(report: dict[str, Any], layers: int) -> None:
    types = report["op_types"]
    assert types["GatherV2"] == 2  # the wide and the deep table, gathered from a read of the variable
    # each sparse update de-duplicates the batch's ids before applying
    assert types["Unique"] == 2 and types["UnsortedSegmentSum"] == 2
    assert types["ResourceSparseApplyFtrl"] == 1 and types["ResourceSparseApplyAdagrad"] == 1
    assert types["ResourceApplyFtrl"] == 2  # the wide dense kernel and bias
    assert types["ResourceApplyAdagrad"] == 2 * (layers + 1)  # kernel and bias of each layer and the output
    assert types["Relu"] == layers and types["ReluGrad"] == layers
    assert types["BiasAdd"] == layers + 2 and types["BiasAddGrad"] == layers + 2  # + wide bias, output unit
    assert types["MatMul"] == 3 * (layers + 2)  # forward, and both input gradients of each MatMul
    for part in ("GreaterEqual", "Select", "Exp", "Log1p", "Mean"):  # sigmoid cross-entropy, mean
        assert types[part] >= 1, part


def test_reduced_step_has_the_sparse_path_and_starts_near_ln2(reduced: dict[str, Any]) -> None:
    assert reduced["model"] == "widedeep" and reduced["fields"] == 4
    _check_structure(reduced, layers=2)
    assert reduced["repeated_ids"] > 0  # so the de-duplication has something to sum
    assert math.isfinite(reduced["loss"])
    assert abs(reduced["loss"] - math.log(2)) < 0.15  # logits start near 0 (Glorot init, bias 0)


def test_builds_repeat_and_full_size_structure(reduced: dict[str, Any]) -> None:
    again = _report("--size", "reduced", "--no-run")
    assert again["graph_sha256"] == reduced["graph_sha256"]
    assert again["ops"] == reduced["ops"] and again["loss"] is None
    full = _report("--size", "full", "--no-run")
    assert full["fields"] == 26 and full["hidden"] == [1024, 512, 256]
    _check_structure(full, layers=3)
    assert full["ops"] > reduced["ops"] and full["graph_sha256"] != reduced["graph_sha256"]


def test_batch_feeds_every_placeholder_with_repeated_ids() -> None:
    for size, shape in widedeep.SHAPES.items():
        feeds = widedeep.input_batch(size)
        assert set(feeds) == {"dense_features:0", "sparse_ids:0", "labels:0"}
        ids = feeds["sparse_ids:0"]
        assert ids.shape == (shape.batch, shape.fields) and ids.dtype == np.int32
        assert ids.min() >= 0 and ids.max() < shape.buckets
        assert len(np.unique(ids[:, 0])) < shape.batch  # a popular id comes back within a field
        assert feeds["dense_features:0"].shape == (shape.batch, widedeep.DENSE_FEATURES)
        assert set(np.unique(feeds["labels:0"])) == {0.0, 1.0}
        np.testing.assert_array_equal(ids, widedeep.input_batch(size)["sparse_ids:0"])  # fixed seed


def test_unknown_size_is_refused() -> None:
    with pytest.raises(ValueError, match="size must be one of"):
        widedeep.build("tiny")
