"""The replay tests work on copies of the session's demo workspace (replays write fix/ and temp/replay/)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest


def copy_workspace(source: Path, target: Path) -> Path:
    shutil.copytree(source, target, symlinks=True)
    shutil.rmtree(target / "fix", ignore_errors=True)
    return target


@pytest.fixture(scope="module")
def replay_ws(demo_workspace: Path, tmp_path_factory) -> Path:
    """One copy per test module: its tests may share what earlier ones wrote under fix/."""
    return copy_workspace(demo_workspace, tmp_path_factory.mktemp("replay") / "ws")


@pytest.fixture
def fresh_ws(demo_workspace: Path, tmp_path: Path) -> Path:
    """A copy of its own, for a test that breaks something."""
    return copy_workspace(demo_workspace, tmp_path / "ws")
