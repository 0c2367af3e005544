"""Fixtures for `train`: real captures made once per session by real TensorFlow runs in fresh processes,
and the one-shot CLI (the shell never imports TensorFlow; `train` starts its own child)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
SCRIPTS = Path(__file__).resolve().parent / "scripts"
STANDIN = ROOT / "tests" / "tools" / "npu_standin"


def child_env(workspace: Path, extra_path: str = "") -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("PRECISION_TOOL_CONFIG", "PYTHONPATH")}
    env.update({"PYTHONPATH": os.pathsep.join(p for p in (extra_path, str(ROOT)) if p),
                "PRECISION_DATA": str(workspace), "TF_CPP_MIN_LOG_LEVEL": "2", "COLUMNS": "200", "NO_COLOR": "1"})
    return env


def run_script(workspace: Path, script: str, *args: str) -> dict:
    """Run a training script of scripts/ (tf_config first) in a fresh process; returns its record JSON."""
    record = workspace / f"record_{script}_{args[0] if args else ''}.json"
    proc = subprocess.run([sys.executable, str(SCRIPTS / script), *args, str(record)], env=child_env(workspace),
                          capture_output=True, text=True, timeout=300, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(record.read_text())


def cli(workspace: Path, *args: str, extra_path: str = "", env: dict[str, str] | None = None,
        wrap=None, cwd: Path = ROOT) -> subprocess.CompletedProcess:
    """`python precision_tool/cli.py --data WS ARGS...` as a user runs it, from `cwd` (`env`: more variables;
    `wrap`: turns the command line into another, e.g. tests.users.read_only_user_command)."""
    command = [sys.executable, str(ROOT / "precision_tool" / "cli.py"), "--data", str(workspace), *args]
    if wrap is not None:
        command = wrap(command, workspace)
    return subprocess.run(command, env={**child_env(workspace, extra_path), **(env or {})}, capture_output=True,
                          text=True, timeout=600, cwd=cwd)


def fake_tf1_capture(folder: Path) -> dict:
    """A TF1 manifest whose named files all exist (contents junk): enough for every check made before the
    child process starts, without TensorFlow. Returns the manifest as written."""
    from precision_tool.capture import step_manifest as sm

    for name in ("model.meta", "model.index", "session_config.pb", "inputs/000_x_0.npy", "fetches/000_loss_0.npy"):
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_bytes(b"x")
    fields = {"meta_graph": "model.meta", "checkpoint": "model", "session_config": "session_config.pb",
              "inputs": [{"tensor": "x:0", "file": "inputs/000_x_0.npy", "source": "feed"}],
              "fetches": [{"name": "loss:0", "file": "fetches/000_loss_0.npy"}, {"name": "train_op", "file": None}]}
    sm.write_manifest(folder, sm.KIND_TF1, fields)
    return json.loads((folder / sm.MANIFEST_NAME).read_text())


def captured(tmp_path_factory, script: str, mode: str) -> tuple[Path, dict]:
    workspace = tmp_path_factory.mktemp(f"{Path(script).stem}_{mode}")
    return workspace, run_script(workspace, script, mode)


@pytest.fixture(scope="session")
def tf1_feed(tmp_path_factory) -> tuple[Path, dict]:
    return captured(tmp_path_factory, "capture_tf1.py", "feed")


@pytest.fixture(scope="session")
def tf1_iterator(tmp_path_factory) -> tuple[Path, dict]:
    return captured(tmp_path_factory, "capture_tf1.py", "iterator")


@pytest.fixture(scope="session")
def keras_capture(tmp_path_factory) -> tuple[Path, dict]:
    return captured(tmp_path_factory, "capture_keras.py", "capture")


@pytest.fixture(scope="session")
def demo_root(tmp_path_factory) -> Path:
    """The demo workspace, built once through the one-shot CLI (no `ac -c`)."""
    root = tmp_path_factory.mktemp("train_demo") / "precision_data_demo"
    env = {k: v for k, v in os.environ.items() if k not in ("PRECISION_TOOL_CONFIG", "PRECISION_DATA")}
    proc = subprocess.run([sys.executable, str(ROOT / "precision_tool" / "cli.py"), "demo", str(root), "--no-check"],
                          env=env, capture_output=True, text=True, timeout=600, cwd=ROOT)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    return root


@pytest.fixture
def demo_copy(demo_root, tmp_path):
    """A private copy of the demo workspace (tests move and rewrite its parts)."""
    target = tmp_path / "demo"
    shutil.copytree(demo_root, target, symlinks=True)
    return target
