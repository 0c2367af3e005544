"""Workspaces whose NPU run dumped statistics CSVs (dump_data="stats") instead of tensors.

The CSVs are computed from real tensors: the demo network's NPU dumps (the demo runs TensorFlow), each
turned into the CSV the device would have written beside it (same name plus `.csv`, same data type, layout
and shape, statistics of the same data), and the tensor dump removed.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Callable

import pytest

from tests.analysis.compare.stats.stats_helpers import dump_files, to_stats


@pytest.fixture(scope="session")
def demo_workspace(tmp_path_factory) -> Path:
    """The demo workspace (tensor dumps of debug_0 and debug_1, golden tensors, Build graphs), built once."""
    from tests.conftest import run_cli

    root = tmp_path_factory.mktemp("stats_demo") / "ws"
    result = run_cli("demo", str(root))
    assert result.status == 0, result.err
    return root


@pytest.fixture
def stats_workspace(demo_workspace: Path, tmp_path: Path) -> Callable[..., Path]:
    """build(mixed=False, both_runs=False): a copy of the demo whose debug_0 dumped statistics only (debug_1
    removed); `mixed`: every other dump of debug_0 stays a tensor dump; `both_runs`: debug_1 is kept and
    dumped statistics too."""

    def build(mixed: bool = False, both_runs: bool = False) -> Path:
        root = tmp_path / "ws"
        shutil.copytree(demo_workspace, root, symlinks=True)
        if not both_runs:
            shutil.rmtree(root / "npu" / "debug_1")
        shutil.rmtree(root / "temp", ignore_errors=True)
        for number, dump in enumerate(dump_files(root / "npu" / "debug_0" / "dump")):
            if not (mixed and number % 2):
                to_stats(dump)
        if both_runs:
            for dump in dump_files(root / "npu" / "debug_1" / "dump"):
                to_stats(dump)
        return root

    return build


@pytest.fixture(scope="session")
def shared_stats_workspace(demo_workspace: Path, tmp_path_factory) -> Path:
    """One stats-only copy of the demo for the tests that only read it (saves converting it per test)."""
    root = tmp_path_factory.mktemp("stats_shared") / "ws"
    shutil.copytree(demo_workspace, root, symlinks=True)
    shutil.rmtree(root / "npu" / "debug_1")
    shutil.rmtree(root / "temp", ignore_errors=True)
    for dump in dump_files(root / "npu" / "debug_0" / "dump"):
        to_stats(dump)
    return root
