"""Running one bisect round: the step with the round's file, in a child process.

Without a command the round is `train -d sim` (the simulated NPU's child, `simulate.sim_step`); with one,
the user's training command as `npu_dump` runs it (no shell; PRECISION_DATA and PRECISION_TOOL_DUMP=True
set), both with $PRECISION_TOOL_MODIFY_MIXLIST or $PRECISION_TOOL_FUSION_SWITCH naming the round's file,
which tf_config's NPU configs and the simulation use. The round's run is the dump folder the child
created (npu/debug_N/dump/<time>), found by comparing the folders before and after.
"""

from __future__ import annotations

import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

from precision_tool.atomic import write_text_atomic
from precision_tool.child_env import tf_child_env

ROUND_TIMEOUT_S = 6 * 3600


@dataclass(frozen=True)
class RoundRun:
    exit_status: int
    error_line: str  # the last stderr line of a failed command ('' when it succeeded)
    debug_id: int | None
    dump_dir: Path | None
    seconds: float
    log: Path


def _dump_folders(workspace: Any) -> dict[Path, int]:
    found = {}
    for debug_id in workspace.debug_ids():
        root = workspace.dump_root(debug_id)
        if root.is_dir():
            found.update({child: debug_id for child in root.iterdir() if child.is_dir()})
    return found


def run_round(workspace: Any, command: Sequence[str] | None, env_extra: dict[str, str], log: Path,
              python: str | None = None) -> RoundRun:
    """One run of the step (see the module's docstring); the child's output goes to `log`."""
    from precision_tool.config import DUMP_FLAG_ENV

    root = workspace.root.absolute()
    before = _dump_folders(workspace)
    env = {**tf_child_env(root), **env_extra}
    if command is None:
        argv = [python or sys.executable, "-m", "precision_tool.simulate.sim_step", "--action", "dump", str(root)]
    else:
        argv = list(command)
        env[DUMP_FLAG_ENV] = "True"
    started = time.perf_counter()
    try:
        proc = subprocess.run(argv, cwd=root if command is None else None, env=env, capture_output=True,
                              text=True, timeout=ROUND_TIMEOUT_S)
        status, stdout, stderr = proc.returncode, proc.stdout, proc.stderr
    except subprocess.TimeoutExpired:
        status, stdout, stderr = -1, "", f"the round did not finish in {ROUND_TIMEOUT_S} s"
    except OSError as error:
        status, stdout, stderr = 127, "", f"cannot run {argv[0]}: {error.strerror or error}"
    seconds = time.perf_counter() - started
    write_text_atomic(log, f"$ {' '.join(argv)}\nexit status {status}\n--- stderr ---\n{stderr}\n--- stdout ---\n"
                           f"{stdout}")
    lines = [line.strip() for line in stderr.splitlines() if line.strip()]
    if status != 0:
        return RoundRun(status, lines[-1] if lines else "no error output", None, None, seconds, log)
    new = {folder: debug_id for folder, debug_id in _dump_folders(workspace).items() if folder not in before}
    if not new:
        return RoundRun(0, "", None, None, seconds, log)
    newest = max(new, key=lambda p: (p.stat().st_mtime, p.name))
    return RoundRun(0, "", new[newest], newest, seconds, log)
