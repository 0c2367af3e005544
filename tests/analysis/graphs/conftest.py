"""Fixtures for the graph command tests: workspaces holding GE models (made from a real TensorFlow
graph by tests/formats/ge/conftest.py, whose fixtures are shared here) and the demo workspace."""

from __future__ import annotations

from pathlib import Path

import pytest

from precision_tool.formats.ge.ge_graph import Model
from tests.formats.ge.conftest import tf_ge_model, tf_ge_model_variant  # noqa: F401  (shared fixtures)


@pytest.fixture
def make_workspace(tmp_path: Path):
    """make_workspace({debug_id: model}) → workspace root with npu/debug_N/graph/..._Build.txt written."""
    from precision_tool.formats.ge.ge_graph import write_graph_text

    def make(models: dict[int, Model], extra_graphs: dict[int, Model] | None = None) -> Path:
        root = tmp_path / "precision_data"
        for debug_id, model in models.items():
            write_graph_text(model, root / "npu" / f"debug_{debug_id}" / "graph" /
                             "ge_proto_00000094_graph_1_Build.txt")
        for debug_id, model in (extra_graphs or {}).items():
            write_graph_text(model, root / "npu" / f"debug_{debug_id}" / "graph" /
                             "ge_proto_00000001_PreRunBegin.txt")
        return root
    return make


# --- the demo workspace, for the checks that every name the tool prints is accepted back -----------------
@pytest.fixture(scope="session")
def demo_root(tmp_path_factory) -> Path:
    """`demo DIR` through the one-shot CLI (it also runs `ac -c`), once per session."""
    import os
    import subprocess
    import sys

    root = tmp_path_factory.mktemp("graphs_demo") / "precision_data"
    cli_py = Path(__file__).resolve().parents[3] / "precision_tool" / "cli.py"
    env = {k: v for k, v in os.environ.items() if k not in ("PRECISION_TOOL_CONFIG", "PRECISION_DATA")}
    env.update({"COLUMNS": "200", "NO_COLOR": "1"})
    proc = subprocess.run([sys.executable, str(cli_py), "demo", str(root)], capture_output=True, text=True,
                          env=env, timeout=900)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return root
