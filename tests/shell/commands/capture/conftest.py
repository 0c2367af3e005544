"""Fixtures for the runner tests: the one-shot CLI as a subprocess, and the scripts they run."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[4]
SCRIPTS = Path(__file__).resolve().parent / "scripts"
CLI = [sys.executable, str(ROOT / "precision_tool" / "cli.py")]


def tool_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("PRECISION_TOOL_CONFIG", "PRECISION_DATA")}
    env.update({"COLUMNS": "200", "NO_COLOR": "1", "TF_CPP_MIN_LOG_LEVEL": "2"}, **extra)
    return env


def script(name: str, *args: str) -> str:
    """A training command line running one of tests/shell/commands/capture/scripts."""
    return " ".join([sys.executable, str(SCRIPTS / name), *args])


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    root = tmp_path / "precision_data"
    root.mkdir()
    return root
