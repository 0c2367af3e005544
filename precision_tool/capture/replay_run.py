"""Running the replay child (`python -m precision_tool.capture.replay_step`) for `train`: the command, its
environment, its one-line failures, the staging of the CPU dump. No TensorFlow here: the child has it.

The child's interpreter is this one unless the user names another (`train --python`): TF 1.15, the NPU's
TF1, lives in a Python 3.7 that cannot run the shell.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from precision_tool.child_env import tf_child_env
from precision_tool.capture.replay_step import EXIT_NO_ADAPTER, EXIT_USAGE
from precision_tool.errors import CommandFailed, WorkspaceError
from precision_tool.workspace import Workspace

REPLAY_TIMEOUT_S = 3600
PARTIAL_DUMP_PREFIX = ".tf_debug.replay-"  # the CPU replay's dump folder inside tf/ until the child succeeds


def run_replay(root: Path, device: str, action: str, dump_dir: Path | None = None,
               python: str | None = None, fusion_switch: str | None = None) -> dict[str, Any]:
    """One child process replaying the step on `device` (cpu, npu, or sim: the simulated NPU; a CPU run
    dumps into `dump_dir`) with `python`
    (default: this interpreter; `fusion_switch`: the switch file a simulated compile honours); returns its report (replay_<device>.json). A failure is one CommandFailed
    line."""
    python = python or sys.executable
    root = root.absolute()  # the child runs in the workspace: a relative --data would point below it
    dump_dir = dump_dir.absolute() if dump_dir else None
    if device == "sim":  # the simulated NPU run (precision_tool/simulate): the same child contract
        command = [python, "-m", "precision_tool.simulate.sim_step", "--action", action, str(root)]
    else:
        command = [python, "-m", "precision_tool.capture.replay_step", "--device", device,
                   "--action", action, *(["--dump-dir", str(dump_dir)] if dump_dir else []), str(root)]
    try:
        env = tf_child_env(root)
        if fusion_switch:
            from precision_tool.config import FUSION_SWITCH_ENV

            env[FUSION_SWITCH_ENV] = fusion_switch
        proc = subprocess.run(command, cwd=root, env=env, capture_output=True, text=True,
                              timeout=REPLAY_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        raise CommandFailed(f"train -d {device}: the replay did not finish in {REPLAY_TIMEOUT_S} s") from None
    except OSError as error:  # --python names no program, or one that cannot run
        raise CommandFailed(f"train --python {python}: cannot run it ({error.strerror or error}); name a "
                            "Python interpreter that has TensorFlow, e.g. --python /usr/bin/python3.7") from None
    if proc.returncode != 0:
        raise CommandFailed(_failure_line(root, device, python, proc))
    out = [line for line in proc.stdout.strip().splitlines() if line.startswith("{")]
    return json.loads(out[-1]) if out else {}


def replay_cpu(workspace: Workspace, python: str | None = None) -> dict[str, Any]:
    """The CPU replay dumps into a fresh folder inside tf/; it becomes tf/tf_debug only when the child
    succeeded and wrote a dump, and is removed otherwise, so a failure leaves nothing that blocks the next
    `train -d cpu`."""
    target = workspace.tf_debug_dir
    partial = Path(tempfile.mkdtemp(prefix=PARTIAL_DUMP_PREFIX, dir=target.parent))
    try:
        report = run_replay(workspace.root, "cpu", "dump", dump_dir=partial, python=python)
        if not any(partial.iterdir()):
            raise CommandFailed(f"train -d cpu: the replay ran but wrote no tfdbg dump into {partial}; "
                                f"see {workspace.checkpoint_dir / 'replay_cpu.json'}")
        if target.is_dir() and not any(target.iterdir()):
            target.rmdir()  # an empty tf_debug (allowed by the refusal) gives way to the new dump
        partial.rename(target)
        return report
    finally:
        if partial.exists():
            shutil.rmtree(partial, ignore_errors=True)


def _failure_line(root: Path, device: str, python: str, proc: subprocess.CompletedProcess) -> str:
    """The child's own line for a failure it knows; otherwise the error's last line and where its full
    output went (never a traceback on screen)."""
    lines = [line for line in proc.stderr.strip().splitlines() if line.strip()]
    if proc.returncode in (EXIT_USAGE, EXIT_NO_ADAPTER) and lines and lines[-1].startswith("train"):
        return lines[-1]
    if "No module named 'tensorflow'" in proc.stderr:
        return (f"train: TensorFlow is not installed for {python}; `pip install tensorflow-cpu` (or name "
                "the Python that has it with --python) and run train again")
    last = lines[-1].strip() if lines else "no error output"
    if proc.returncode < 0:
        last = f"killed by signal {-proc.returncode}; {last}"
    saved = _save_child_output(root, device, proc)
    where = f"the full error output is in {saved}" if saved else "its error output could not be saved"
    return f"train -d {device}: the replay failed (exit {proc.returncode}): {last}; {where}"


def _save_child_output(root: Path, device: str, proc: subprocess.CompletedProcess) -> Path | None:
    """temp/train_replay_<device>.log of the workspace (the system's temp folder when it is read-only)."""
    text = (f"$ {' '.join(map(str, proc.args))}\nexit status {proc.returncode}\n--- stderr ---\n{proc.stderr}"
            f"\n--- stdout ---\n{proc.stdout}")
    name = f"train_replay_{device}.log"
    for folder in (Workspace(root).temp_dir, Path(tempfile.gettempdir())):
        try:
            Workspace.ensure_dir(folder, "log folder")
            (folder / name).write_text(text, encoding="utf-8")
            return folder / name
        except (OSError, WorkspaceError):
            continue
    return None
