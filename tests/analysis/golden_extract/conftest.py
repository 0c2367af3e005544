"""Fixtures for the TensorFlow side: real tfdbg dumps made once per session by real TensorFlow runs."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
SCRIPTS = Path(__file__).resolve().parent / "scripts"


def tf_env(workspace: Path) -> dict[str, str]:
    env = dict(os.environ)
    env.update({"PYTHONPATH": str(ROOT), "PRECISION_DATA": str(workspace), "TF_CPP_MIN_LOG_LEVEL": "2"})
    env.pop("PRECISION_TOOL_CONFIG", None)
    return env


def run_python(workspace: Path, *args: str, timeout: float = 300) -> subprocess.CompletedProcess:
    """Run python in a fresh process (import order matters for tf_config), failing loudly."""
    proc = subprocess.run([sys.executable, *args], env=tf_env(workspace), capture_output=True, text=True,
                          timeout=timeout, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return proc


@pytest.fixture(scope="session")
def v1_sess_workspace(tmp_path_factory) -> Path:
    """A workspace whose tf/tf_debug holds 2 runs dumped through sess_dump (tf_config imported first)."""
    ws = tmp_path_factory.mktemp("v1_sess")
    run_python(ws, str(SCRIPTS / "train_tf1.py"), "sess", "2")
    return ws


@pytest.fixture(scope="session")
def v1_hook_workspace(tmp_path_factory) -> Path:
    """Dumped through tf.compat.v1.train.MonitoredSession(hooks=[estimator_dump()])."""
    ws = tmp_path_factory.mktemp("v1_hook")
    run_python(ws, str(SCRIPTS / "train_tf1.py"), "hook", "2")
    return ws


@pytest.fixture(scope="session")
def v2_workspace(tmp_path_factory) -> Path:
    """tf/tf_debug holding a tfdbg v2 FULL_TENSOR dump of a small Keras model (2 training steps)."""
    ws = tmp_path_factory.mktemp("v2")
    run_python(ws, str(SCRIPTS / "train_keras_v2.py"), str(ws / "tf" / "tf_debug"))
    return ws


@pytest.fixture
def copy_workspace(tmp_path):
    """Copy a session workspace's tf_debug into a fresh workspace (tests that damage or extend it)."""

    def make(source: Path, name: str = "ws") -> Path:
        ws = tmp_path / name
        shutil.copytree(source / "tf" / "tf_debug", ws / "tf" / "tf_debug")
        return ws

    return make


@pytest.fixture(scope="session")
def no_tf_pythonpath(tmp_path_factory) -> str:
    """A PYTHONPATH whose sitecustomize makes `import tensorflow` fail, plus the checkout."""
    shim = tmp_path_factory.mktemp("no_tf")
    (shim / "sitecustomize.py").write_text("import sys\nsys.modules['tensorflow'] = None\n")
    return os.pathsep.join([str(shim), str(ROOT)])


@pytest.fixture
def python_in(tmp_path):
    """run_python(workspace, *args): a fresh python process with the checkout and PRECISION_DATA set."""
    return run_python
