"""TensorFlow 1.15 on Python 3.7: the TF1 that the CANN adapter (npu_bridge) runs on Ascend training machines.

The training side of the tool (tf_config, tf_session, the step capture) and `train`'s child are imported by
that Python; the rest of the tool needs 3.9+. These tests run them for real there: a Python 3.7 found on
this machine ($PRECISION_TOOL_PY37, python3.7 on PATH, or pyenv's), with a venv of tensorflow==1.15.5 built
on first use and kept in ~/.cache/precision_tool/ (as the msaccucmp anchor is).
"""

from __future__ import annotations

import glob
import os
import subprocess
from pathlib import Path

import pytest

from tests.capture.conftest import standin_env
from tests.conftest import TF_IMPORT_LEFTOVERS

ROOT = Path(__file__).resolve().parents[3]
VENV = Path.home() / ".cache" / "precision_tool" / "py37-tf115"
TF_VERSION = "1.15.5"
# protobuf 4 dropped the pure-Python code TF 1.15's generated modules need
PACKAGES = [f"tensorflow=={TF_VERSION}", "protobuf<3.21"]


def _is_python37(candidate: str) -> bool:
    try:
        proc = subprocess.run([candidate, "-c", "import sys; assert sys.version_info[:2] == (3, 7)"],
                              capture_output=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return proc.returncode == 0


def find_python37() -> str | None:
    candidates = [os.environ.get("PRECISION_TOOL_PY37"), "python3.7"]
    candidates += sorted(glob.glob(str(Path.home() / ".pyenv" / "versions" / "3.7*" / "bin" / "python3.7")))
    candidates += sorted(glob.glob("/usr/local/bin/python3.7")) + sorted(glob.glob("/usr/bin/python3.7"))
    return next((c for c in candidates if c and _is_python37(c)), None)


def _venv_ready(python: Path) -> bool:
    probe = f"import tensorflow as tf; assert tf.__version__ == {TF_VERSION!r}"
    return python.is_file() and subprocess.run([str(python), "-c", probe], capture_output=True,
                                               env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"}).returncode == 0


@pytest.fixture(scope="session")
def py37() -> str:
    """The venv's python (TensorFlow 1.15.5, Python 3.7), built on first use."""
    python = VENV / "bin" / "python"
    if _venv_ready(python):
        return str(python)
    base = find_python37()
    if base is None:
        pytest.skip("no Python 3.7 on this machine, so no TensorFlow 1.15 (the NPU adapter's TF1): set "
                    "PRECISION_TOOL_PY37=/path/to/python3.7 to run these tests")
    VENV.parent.mkdir(parents=True, exist_ok=True)
    steps = [[base, "-m", "venv", "--clear", str(VENV)],
             [str(python), "-m", "pip", "install", "-q", "--disable-pip-version-check", *PACKAGES]]
    for step in steps:
        proc = subprocess.run(step, capture_output=True, text=True, timeout=1800)
        assert proc.returncode == 0, f"building the TF 1.15 venv failed at {step}: {proc.stderr[-2000:]}"
    assert _venv_ready(python), f"{python}: tensorflow {TF_VERSION} does not import after installing it"
    return str(python)


def env_for(workspace: Path, *, standin: bool = False, **extra: str) -> dict[str, str]:
    """The capture tests' environment (checkout and stand-in on PYTHONPATH, the workspace in PRECISION_DATA,
    no flags of the caller's), without the stand-in unless asked, nor what a TF 2 import left behind."""
    env = standin_env(workspace, COLUMNS="200", NO_COLOR="1", **extra)
    if not standin:
        env["PYTHONPATH"] = str(ROOT)
    for name in (*TF_IMPORT_LEFTOVERS, "PYTHONHASHSEED", "PYTHONHOME"):
        env.pop(name, None)
    return env


def run37(py37: str, workspace: Path, *args: str, standin: bool = False, **extra: str) -> subprocess.CompletedProcess:
    """Run the TF 1.15 python on a script of the checkout, failing loudly."""
    proc = subprocess.run([py37, *args], env=env_for(workspace, standin=standin, **extra), capture_output=True,
                          text=True, timeout=600, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return proc
