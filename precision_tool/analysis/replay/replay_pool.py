"""Run the replay child over many cases at once (`replay --all`, `ac -c --precheck`).

The cases are dealt round-robin to W chunks (neighbouring ops differ in cost: a convolution beside a Relu)
and each chunk runs in its own TensorFlow child: W processes on this machine, or with a Dask scheduler one
task per chunk, whose worker starts the child there (the workers see the workspace at the same path, as
`vc --scheduler` needs; tasks carry case folders, never arrays).

A child that dies (a TensorFlow crash, the OOM killer) is started again on the cases it had not reached; the
case it died on fails with the child's last error line, so one bad op costs one op, not its chunk. Ctrl-C
kills every child. Each chunk's output is kept in its log beside the results.
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Sequence

from precision_tool.analysis.replay.replay_plan import RESULT_FILE

ProgressCallback = Callable[[int], None]
"""Called with the number of cases just finished (from the threads that watch the children)."""
CASES_PER_CHILD = 150
"""A TensorFlow child costs its start (5-8 s, `import tensorflow`) before its first case, and then ~0.1 s a
case: a second child pays off only past this many cases (the demo's 49 run faster in one)."""
MAX_RESTARTS = 50
"""A chunk whose child dies this often is given up: its remaining cases fail with the last error."""


@dataclass(frozen=True)
class PoolRun:
    failures: dict[str, str]
    """Case folder → why it has no result (the child died on it, or gave up)."""
    logs: tuple[Path, ...]
    where: str  # "2 TensorFlow processes on this machine", "the Dask cluster at ... (4 workers)"


def deal(folders: Sequence[str], count: int) -> list[list[str]]:
    """`folders` dealt round-robin into at most `count` non-empty chunks."""
    count = max(1, min(count, len(folders)))
    return [list(folders[k::count]) for k in range(count) if folders[k::count]]


def ended(status: int) -> str:
    """How a child that did not succeed ended: `failed (exit 1)`, or `was killed by SIGSEGV`."""
    import signal

    if status < 0:
        try:
            return f"was killed by {signal.Signals(-status).name}"
        except ValueError:
            return f"was killed by signal {-status}"
    return f"failed (exit {status})"


def _last_error(log: Path) -> str:
    """The last non-empty line of a child's log (its stderr), for the reason of the case it died on."""
    try:
        with open(log, "rb") as handle:
            handle.seek(0, os.SEEK_END)
            handle.seek(max(0, handle.tell() - 8192))
            tail = handle.read().decode("utf-8", errors="replace")
    except OSError:
        return ""
    lines = [line.strip() for line in tail.splitlines() if line.strip() and not line.startswith("$ ")]
    return lines[-1][:200] if lines else ""


class _Children:
    """The live children of a run, so that Ctrl-C (or an error elsewhere) can kill them all."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._live: set[subprocess.Popen] = set()
        self.stopped = False

    def start(self, command: list[str], **kwargs: Any) -> subprocess.Popen | None:
        with self._lock:
            if self.stopped:
                return None
            proc = subprocess.Popen(command, **kwargs)
            self._live.add(proc)
            return proc

    def done(self, proc: subprocess.Popen) -> None:
        with self._lock:
            self._live.discard(proc)

    def kill_all(self) -> None:
        with self._lock:
            self.stopped = True
            for proc in self._live:
                proc.kill()


def run_chunk(folders: Sequence[str], log: str, cwd: str | None, env: dict[str, str] | None,
              python: str | None = None, on_case: ProgressCallback | None = None,
              children: _Children | None = None) -> dict[str, str]:
    """Replay `folders` in a child (started again after a crash); the failures (folder → why). Also what a
    Dask worker runs: everything it takes is a plain value."""
    python = python or sys.executable
    log_path = Path(log)
    remaining = list(folders)
    failures: dict[str, str] = {}
    for attempt in range(MAX_RESTARTS + 1):
        if not remaining:
            break
        list_file = log_path.with_name(f"{log_path.stem}.cases")
        list_file.write_text("\n".join(remaining) + "\n", encoding="utf-8")
        command = [python, "-m", "precision_tool.capture.op_replay", "--cases", str(list_file)]
        with open(log_path, "a", encoding="utf-8") as handle:
            handle.write(f"$ {' '.join(command)}  ({len(remaining)} cases, start {attempt + 1})\n")
            handle.flush()
            kwargs = dict(cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=handle, text=True)
            try:
                proc = children.start(command, **kwargs) if children is not None else subprocess.Popen(command, **kwargs)
            except OSError as error:
                why = f"cannot run {python} ({error.strerror or error}); name a Python that has TensorFlow"
                return {**failures, **{folder: why for folder in remaining}}
            if proc is None:  # stopped (Ctrl-C) before it started
                return failures
            try:
                for line in proc.stdout:  # one JSON line per case done
                    if on_case is not None and line.startswith("{"):
                        on_case(1)
                status = proc.wait()
            finally:
                if children is not None:
                    children.done(proc)
            handle.write(f"exit {status}\n")
        remaining = [f for f in remaining if not (Path(f) / RESULT_FILE).is_file()]
        if not remaining or (children is not None and children.stopped):
            break
        said = _last_error(log_path)
        if status == 0:  # it ended well without results for these: nothing to gain by starting it again
            why = f"the replay process wrote no result for it ({said or 'no error output'}); its output: {log_path}"
            failures.update({folder: why for folder in remaining})
            break
        crashed = remaining.pop(0)  # the cases run in order: the first without a result is the one it died on
        failures[crashed] = (f"the replay process {ended(status)} while replaying this op "
                             f"({said or 'no error output'}); its output: {log_path}")
        if on_case is not None:
            on_case(1)
    else:
        why = f"the replay process died {MAX_RESTARTS + 1} times; its output: {log_path}"
        failures.update({folder: why for folder in remaining})
    return failures


def run_local(folders: Sequence[str], workers: int, log_dir: Path, cwd: str | None, env: dict[str, str] | None,
              python: str | None = None, progress: ProgressCallback | None = None) -> PoolRun:
    """The chunks in `workers` children on this machine, at once."""
    from concurrent.futures import ThreadPoolExecutor

    chunks = deal(folders, min(workers, -(-len(folders) // CASES_PER_CHILD)))
    logs = [log_dir / f"replay_child_{k}.log" for k in range(len(chunks))]
    for log in logs:
        log.unlink(missing_ok=True)
    children = _Children()
    failures: dict[str, str] = {}
    pool = ThreadPoolExecutor(max_workers=max(1, len(chunks)))
    try:
        futures = [pool.submit(run_chunk, chunk, str(log), cwd, env, python, progress, children)
                   for chunk, log in zip(chunks, logs)]
        for future in futures:
            failures.update(future.result())
    except BaseException:  # Ctrl-C (or a bug): no child outlives the command
        children.kill_all()
        raise
    finally:
        pool.shutdown(wait=True)
    count = len(chunks)
    return PoolRun(failures, tuple(logs), f"{count} TensorFlow process{'es' if count != 1 else ''} on this machine")


def run_dask(folders: Sequence[str], address: str, log_dir: Path, cwd: str | None,
             progress: ProgressCallback | None = None) -> PoolRun:
    """One Dask task per chunk (a few per worker thread); each worker runs the child itself, with its own
    Python (the same precision-tool and TensorFlow must be installed there)."""
    from precision_tool.analysis.compare.engine.dask_executor import connect

    with connect(address) as executor:
        client = executor.client
        threads = max(1, sum(executor.threads().values()))
        chunks = deal(folders, threads * 2)
        logs = [log_dir / f"replay_child_{k}.log" for k in range(len(chunks))]
        futures = {client.submit(run_chunk, chunk, str(log), cwd, None, None, pure=False): (chunk, log)
                   for chunk, log in zip(chunks, logs)}
        failures: dict[str, str] = {}
        distributed = sys.modules["distributed"]
        try:
            for future in distributed.as_completed(list(futures), loop=client.loop):
                chunk, log = futures[future]
                try:
                    failures.update(future.result())
                except Exception as exc:  # the task itself failed (a lost worker beyond retries)
                    why = f"its Dask task failed ({type(exc).__name__}: {exc})"[:300]
                    failures.update({folder: why for folder in chunk
                                     if not (Path(folder) / RESULT_FILE).is_file()})
                if progress is not None:
                    progress(len(chunk))
        except BaseException:
            client.cancel(list(futures))
            raise
        where = f"the Dask cluster at {address} ({executor.describe()})"
    return PoolRun(failures, tuple(logs), where)

