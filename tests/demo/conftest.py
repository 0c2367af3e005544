"""The demo workspace, built once per test session through the one-shot CLI (`demo DIR`, with `ac -c`)."""

from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@dataclass
class DemoRun:
    root: Path
    status: int
    out: str
    err: str


def run_demo_cli(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in ("PRECISION_TOOL_CONFIG", "PRECISION_DATA")}
    env.update({"COLUMNS": "200", "NO_COLOR": "1"})
    command = [sys.executable, str(ROOT / "precision_tool" / "cli.py"), *args]
    return subprocess.run(command, capture_output=True, text=True, cwd=cwd or ROOT, env=env, timeout=900)


@pytest.fixture(scope="session")
def demo_run(tmp_path_factory) -> DemoRun:
    root = tmp_path_factory.mktemp("demo") / "precision_data_demo"
    proc = run_demo_cli("demo", str(root))
    return DemoRun(root, proc.returncode, proc.stdout, proc.stderr)


@pytest.fixture(scope="session")
def demo_workspace(demo_run: DemoRun) -> Path:
    assert demo_run.status == 0, demo_run.out[-3000:] + demo_run.err[-3000:]
    return demo_run.root
