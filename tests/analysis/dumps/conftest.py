"""Fixtures for the NPU-dump tests: dumps written by our own writer from real arrays, and workspaces."""

from __future__ import annotations

from pathlib import Path
from typing import Callable

import pytest

from tests.formats.npu.conftest import (  # noqa: F401  (shared fixtures)
    DUMP_SUBDIR, write_conv_dump, bad_corpus, conv_dump, raw_dump,
)


@pytest.fixture
def dump_workspace(tmp_path: Path) -> Callable[..., Path]:
    """Build a workspace with conv dumps for the given op names; returns the workspace root."""

    def build(op_names: tuple[str, ...] = ("net/conv1", "net/conv2")) -> Path:
        root = tmp_path / "precision_data"
        folder = root / DUMP_SUBDIR
        folder.mkdir(parents=True)
        for n, name in enumerate(op_names):
            write_conv_dump(folder, name, task_id=n + 1, timestamp_us=1_718_260_502_000_000 + n, seed=n)
        return root

    return build


@pytest.fixture(scope="session")
def demo_data(tmp_path_factory) -> Path:
    """The demo workspace (two NPU runs, Build graphs, golden tensors, an overflow), built once by the CLI.
    Tests only read it; one that writes copies it first."""
    import subprocess
    import sys

    root = tmp_path_factory.mktemp("dumps_demo") / "precision_data"
    cli = Path(__file__).resolve().parents[3] / "precision_tool" / "cli.py"
    built = subprocess.run([sys.executable, str(cli), "demo", str(root), "--no-check"], capture_output=True,
                           text=True, timeout=600)
    assert built.returncode == 0, built.stdout + built.stderr
    return root
