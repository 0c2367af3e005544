"""Assemble the demo workspace: TensorFlow side in a subprocess, then `tf_dump`, then (optionally) `ac -c`.

TensorFlow runs in a child process (`python -m precision_tool.demo.network DIR`) so that
`precision_tool.tf_config` is imported before TensorFlow there, whatever the calling process has
imported already, and so the shell never loads TensorFlow itself.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from precision_tool.child_env import tf_child_env
from precision_tool.errors import CommandFailed, UsageError, WorkspaceError
from precision_tool.workspace import Workspace

DEFAULT_DIR = "./precision_data_demo"
# What a demo build writes; --force removes exactly these, never anything else in the folder.
DEMO_PARTS = ("npu", "tf", "overflow", "fusion", "temp", "fix")
NETWORK_TIMEOUT_S = 600


@dataclass(frozen=True)
class DemoBuild:
    """What the TensorFlow side reported, and how long it took."""

    root: Path
    log: str
    seconds: float


WRITE_HINT = "give a folder you can write: `demo DIR`"


def prepare_folder(root: Path, *, force: bool) -> None:
    """Refuse to mix a new demo into existing data unless --force (which clears only the demo's parts);
    then make sure the folder exists and takes writes (one line naming it when it does not)."""
    if root.exists() and not root.is_dir():
        raise UsageError(f"{root} is a file; give a folder for the demo workspace")
    existing = [part for part in DEMO_PARTS if (root / part).exists()]
    if existing and not force:
        raise WorkspaceError(f"{root} already holds a workspace ({', '.join(existing)}); "
                             "use `demo --force` to rebuild it or give another folder")
    for part in existing:
        target = root / part
        if target.is_dir() and not target.is_symlink():
            shutil.rmtree(target)
        else:
            target.unlink()
    Workspace.ensure_dir(root, "demo folder", hint=WRITE_HINT)


def run_network(root: Path, *, fixed_ops_info: Path | None = None, ranks: int | None = None,
                model: str | None = None, size: str = "full", npu_start: str = "same",
                steps: int | None = None) -> DemoBuild:
    """The golden CPU step (tfdbg dump via tf_config.sess_dump) and the simulated NPU side; with
    `fixed_ops_info`, only the NPU run with that file's block list in float32 (npu/debug_2); with `ranks`,
    the N-rank data-parallel demo (precision_tool.demo.rank_network, one process for all ranks); with
    `model`, that real architecture (precision_tool.demo.model_demo) at `size`; with `steps`, the N-step
    demo (precision_tool.demo.step_network); `npu_start` (the small demo only): what its NPU runs start from
    (npu_side.NPU_STARTS)."""
    started = time.perf_counter()
    env = tf_child_env(root)
    command = [sys.executable, "-m", "precision_tool.demo.network", str(root)]
    if fixed_ops_info is not None:
        command += ["--fixed", str(fixed_ops_info)]
    elif npu_start != "same":
        command += ["--npu-start", npu_start]
    if ranks is not None:
        command = [sys.executable, "-m", "precision_tool.demo.rank_network", str(root), "--ranks", str(ranks)]
    if model is not None:
        command = [sys.executable, "-m", "precision_tool.demo.model_demo", str(root), "--model", model, "--size", size]
    if steps is not None:
        command = [sys.executable, "-m", "precision_tool.demo.step_network", str(root), "--steps", str(steps)]
    try:
        proc = subprocess.run(command, cwd=root, env=env, capture_output=True, text=True,
                              timeout=NETWORK_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        raise CommandFailed(f"demo: the TensorFlow step did not finish in {NETWORK_TIMEOUT_S} s") from None
    if proc.returncode != 0:
        last = _last_lines(proc.stderr, 12)
        if "No module named 'tensorflow'" in proc.stderr:
            raise CommandFailed("demo: TensorFlow is not installed; `pip install tensorflow-cpu` "
                                "(or `pip install .[tf]`) and run the demo again")
        raise CommandFailed(f"demo: the TensorFlow step failed (exit {proc.returncode}):\n{last}")
    return DemoBuild(root, proc.stdout.strip(), time.perf_counter() - started)


def _last_lines(text: str, count: int) -> str:
    lines = [line for line in text.strip().splitlines() if line.strip()]
    return "\n".join(lines[-count:])


@dataclass(frozen=True)
class FusedOp:
    """An op of the Build graph that a fusion pass made out of several TF ops."""

    name: str
    op_type: str
    fusion_pass: str
    original_names: tuple[str, ...]


def fused_ops(root: Path) -> list[FusedOp]:
    """The fused ops of debug_0's Build graph, read back with the project's GE graph reader."""
    from precision_tool.formats.ge.ge_graph import load_graph
    from precision_tool.workspace import Workspace

    found = []
    for path in Workspace(root).build_graph_files(0):
        for _graph, op in load_graph(path).iter_ops():
            names = op.original_op_names or []
            if op.fusion_pass and len(names) > 1:
                found.append(FusedOp(op.name, op.type, " + ".join(op.fusion_passes), tuple(names)))
    return found
