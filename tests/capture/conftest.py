"""Fixtures for the capture side: tf_config run once against the adapter stand-in, in a fresh process."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
STANDIN = ROOT / "tests" / "tools" / "npu_standin"


def standin_env(workspace: Path, **extra: str) -> dict[str, str]:
    """The checkout and the stand-in on PYTHONPATH, the workspace in PRECISION_DATA, no flags of the caller's."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PRECISION_TOOL_", "DUMP_G", "NPU_DUMP"))}
    env.update({"PYTHONPATH": os.pathsep.join([str(STANDIN), str(ROOT)]), "PRECISION_DATA": str(workspace),
                "TF_CPP_MIN_LOG_LEVEL": "2", **extra})
    env.pop("PRECISION_TOOL_CONFIG", None)
    return env


@pytest.fixture(scope="session")
def standin_run(tmp_path_factory) -> tuple[Path, dict, str]:
    """(workspace, the probe's JSON, its stderr): scripts/standin_probe.py run once per session."""
    ws = tmp_path_factory.mktemp("standin") / "pd"
    proc = subprocess.run([sys.executable, str(Path(__file__).parent / "scripts" / "standin_probe.py")],
                          env=standin_env(ws), capture_output=True, text=True, timeout=300, cwd=ws.parent)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return ws, json.loads(proc.stdout.strip().splitlines()[-1]), proc.stderr
