"""Run hostile files through the commands that read them, and say how each run ended.

Each file is put where its kind lives in a workspace and run through `pt`, `dc`, `cp`, `ls dump`, `ac`,
`tf_dump` or `vc`. Runs go to a worker process (the real CLI entry, `precision_tool.shell.main.main`,
called once per run with its output captured) started with a memory limit (RLIMIT_AS) and watched with a
timeout: a worker that stops answering is killed (HANG), one that dies or reports MemoryError is a
MEMORY blow-up, and is started again for the next run. Outcomes:

  RESULT     exit 0 with output, or exit 1 with an error naming the file: what every run must end in
  TRACEBACK  an unexpected exception (the CLI's "unexpected error" line, or a raw traceback)
  HANG       no answer within the timeout
  MEMORY     MemoryError or the worker killed while over its memory limit
  SILENT     exit 0 although the file could not be read (kind-specific oracles below)
  UNNAMED    exit 1 without the file's name in what was printed
"""

from __future__ import annotations

import json
import os
import resource
import select
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter, defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterable

from tests.hostile import corpus

ROOT = corpus.ROOT
OUTCOMES = ("RESULT", "TRACEBACK", "HANG", "MEMORY", "SILENT", "UNNAMED")
BAD = OUTCOMES[1:]
MEMORY_LIMIT = 3 << 30
DUMP_DIR = Path("npu/debug_0/dump/20260101000000/0/g_1/1/0")
OVERFLOW_DIR = Path("overflow/dump/20260101000000/0/g_1/1/0")

_WORKER_CODE = r"""
import contextlib, io, json, sys, os
os.environ["NO_COLOR"] = "1"
os.environ["COLUMNS"] = "200"
from precision_tool.shell.main import main
out = sys.__stdout__
for line in sys.stdin:
    job = json.loads(line)
    stdout, stderr = io.StringIO(), io.StringIO()
    try:
        with contextlib.redirect_stdout(stdout), contextlib.redirect_stderr(stderr):
            rc = main(job["argv"])
    except SystemExit as exc:
        rc = exc.code if isinstance(exc.code, int) else 1
    except MemoryError:
        rc, stderr = 99, io.StringIO("MemoryError (raw)")
    except BaseException as exc:
        import traceback
        rc = 98
        stderr.write("Traceback (raw)\n" + traceback.format_exc())
    out.write(json.dumps({"rc": rc, "out": stdout.getvalue()[-20000:], "err": stderr.getvalue()[-20000:]}) + "\n")
    out.flush()
"""


def _limit_memory(limit: int) -> Callable[[], None]:
    def apply() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    return apply


class Worker:
    """One long-lived CLI process under a memory limit; restarted after a hang or a crash."""

    def __init__(self, memory_limit: int = MEMORY_LIMIT, timeout: float = 30.0) -> None:
        self.memory_limit = memory_limit
        self.timeout = timeout
        self.proc: subprocess.Popen | None = None

    def _start(self) -> subprocess.Popen:
        env = dict(os.environ, PYTHONPATH=str(ROOT), NO_COLOR="1", COLUMNS="200")
        env.pop("PRECISION_TOOL_CONFIG", None)
        env.pop("PRECISION_DATA", None)
        return subprocess.Popen([sys.executable, "-c", _WORKER_CODE], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                stderr=subprocess.DEVNULL, text=True, cwd=tempfile.gettempdir(), env=env,
                                preexec_fn=_limit_memory(self.memory_limit))

    def run(self, argv: list[str]) -> tuple[str | None, int, str, str]:
        """(HANG | MEMORY | None, exit status, stdout, stderr)."""
        if self.proc is None or self.proc.poll() is not None:
            self.proc = self._start()
        proc = self.proc
        assert proc.stdin is not None and proc.stdout is not None
        try:
            proc.stdin.write(json.dumps({"argv": argv}) + "\n")
            proc.stdin.flush()
        except BrokenPipeError:
            self.proc = None
            return "MEMORY", -1, "", "worker died"
        ready, _, _ = select.select([proc.stdout], [], [], self.timeout)
        if not ready:
            self.close()
            return "HANG", -1, "", ""
        line = proc.stdout.readline()
        if not line:  # died: under RLIMIT_AS that is an allocation that failed outside Python's reach
            self.close()
            return "MEMORY", -1, "", "worker died"
        answer = json.loads(line)
        return None, answer["rc"], answer["out"], answer["err"]

    def close(self) -> None:
        if self.proc is not None:
            self.proc.kill()
            self.proc.wait()
            self.proc = None


@dataclass
class Run:
    command: str  # label: 'pt', 'dc', 'ac', ...
    argv: list[str]
    silent: Callable[[int, str, str], bool] | None = None  # exit 0 that should not have been


@dataclass(frozen=True)
class Verdict:
    case: str
    kind: str
    command: str
    outcome: str
    detail: str


def classify(run: Run, names: Iterable[str], crash: str | None, rc: int, out: str, err: str) -> tuple[str, str]:
    text = out + err
    if crash is not None:
        return crash, err[-300:]
    if "MemoryError" in text:
        return "MEMORY", _last_line(text)
    if "unexpected error" in text or "Traceback" in text or rc not in (0, 1):
        return "TRACEBACK", _last_line(text) or f"exit {rc}"
    if rc == 0:
        if not out.strip() or (run.silent is not None and run.silent(rc, out, err)):
            return "SILENT", _last_line(out)
        return "RESULT", ""
    if not any(name in text for name in names):
        return "UNNAMED", _last_line(text)
    return "RESULT", ""


def _skip_lines(text: str) -> list[str]:
    return sorted(" ".join(line.split()) for line in text.splitlines() if line.strip().startswith("skipped"))


def _last_line(text: str) -> str:
    lines = [line for line in text.strip().splitlines() if line.strip()]
    return lines[-1][:300] if lines else ""


# --- where each kind goes, and which commands read it ------------------------------------------------
def _opdebug_unreadable(path: Path) -> bool:
    from precision_tool.analysis.checks.overflow import read_overflow_records
    from precision_tool.errors import FormatError

    try:
        read_overflow_records(path)
    except FormatError:
        return True
    except Exception:
        return True
    return False


def _v2_damaged(data: bytes) -> bool:
    """Independent truth: a framing or checksum error anywhere in the traces file."""
    import struct

    pos = 0
    while pos < len(data):
        if len(data) - pos < 12:
            return True
        (length,) = struct.unpack_from("<Q", data, pos)
        (length_crc,) = struct.unpack_from("<I", data, pos + 8)
        if corpus._masked(data[pos:pos + 8]) != length_crc:
            return True
        end = pos + 12 + length + 4
        if end > len(data):
            return True
        (data_crc,) = struct.unpack_from("<I", data, end - 4)
        if corpus._masked(data[pos + 12:end - 4]) != data_crc:
            return True
        pos = end
    return False


class Harness:
    """Builds each case's workspace in `work` and runs the commands of its kind."""

    def __init__(self, work: Path, seeds: Path | None, *, commands: set[str] | None = None,
                 timeout: float = 30.0, memory_limit: int = MEMORY_LIMIT, vc_workspace: Path | None = None) -> None:
        self.work = work
        self.seeds = seeds
        self.commands = commands
        self.worker = Worker(memory_limit, timeout)
        self.vc_workspace = vc_workspace
        self._v1_reference: tuple[list[str], set[str]] | None = None

    def close(self) -> None:
        self.worker.close()

    def _want(self, command: str) -> bool:
        return self.commands is None or command in self.commands

    def runs_for(self, case: corpus.Case, ws: Path) -> tuple[Path, list[Run]]:
        """Lay the case's file into workspace `ws`; (the file, the runs)."""
        data = str(ws)
        base = ["--data", data]
        runs: list[Run] = []
        if case.kind in ("npu_dump", "nano_dump"):
            path = ws / DUMP_DIR / case.file_name
            path.parent.mkdir(parents=True)
            path.write_bytes(case.data)
            spec = f"{path}:output:0"
            if self._want("ni") and self.vc_workspace is not None:  # ni needs a Build graph: the demo's
                runs.append(Run("ni", ["--data", str(self.vc_workspace), "ni", "bn2/Relu"]))
            for label, args in (("pt", ["pt", spec]), ("pt-file", ["pt", str(path)]),
                                ("dc", ["dc", str(path), "-o", str(ws / "out")]), ("ls", ["ls", "dump"]),
                                ("cp", ["cp", spec, spec])):
                if self._want(label.split("-")[0]):
                    runs.append(Run(label, base + args))
            return path, runs
        if case.kind == "opdebug":
            folder = ws / OVERFLOW_DIR
            folder.mkdir(parents=True)
            corpus.opdebug_neighbour(folder)
            path = folder / case.file_name
            path.write_bytes(case.data)
            if self._want("ac"):
                runs.append(Run("ac", base + ["ac"], silent=lambda rc, out, err, p=path: _opdebug_unreadable(p)))
            if self._want("pt"):
                runs.append(Run("pt", base + ["pt", f"{path}:output:0"]))
            return path, runs
        if case.kind == "golden_npy":
            golden = ws / "tf" / "dump"
            golden.mkdir(parents=True)
            path = golden / case.file_name
            path.write_bytes(case.data)
            good = golden / "good.0.1700000000000099.npy"
            good.write_bytes(corpus._npy(__import__("numpy").arange(4, dtype="float32")))
            if self._want("pt"):
                runs.append(Run("pt", base + ["pt", str(path)]))
            if self._want("cp"):
                runs.append(Run("cp", base + ["cp", str(path), str(good)]))
            if self._want("vc") and self.vc_workspace is not None:
                runs.append(Run("vc", ["--data", str(self.vc_workspace), "vc"]))
            if self._want("ni") and self.vc_workspace is not None:  # ni shows the op's golden tensor too
                runs.append(Run("ni", ["--data", str(self.vc_workspace), "ni", "bn2/Relu"]))
            return path, runs
        if case.kind == "tfdbg_v1":
            assert self.seeds is not None
            run_dir = ws / "tf" / "tf_debug" / corpus.v1_run_dir(self.seeds).name
            shutil.copytree(corpus.v1_run_dir(self.seeds), run_dir)
            path = run_dir / case.file_name
            path.write_bytes(case.data)
            out = ws / "golden"
            if self._want("tf_dump"):
                runs.append(Run("tf_dump", base + ["tf_dump", "--out", str(out)],
                                silent=lambda rc, o, e, out=out, r=case.file_name: self._v1_silent(out, r, o + e)))
            return path, runs
        if case.kind == "tfdbg_v2":
            assert self.seeds is not None
            folder = ws / "tf" / "tf_debug"
            folder.mkdir(parents=True)
            for meta in corpus.v2_dir(self.seeds).glob("*.metadata"):
                shutil.copy(meta, folder / meta.name)
            path = folder / case.file_name
            path.write_bytes(case.data)
            damaged = _v2_damaged(case.data)
            if self._want("tf_dump"):
                runs.append(Run("tf_dump", base + ["tf_dump", "--run", "all", "--out", str(ws / "golden")],
                                silent=lambda rc, o, e, d=damaged: d))
            return path, runs
        raise ValueError(case.kind)

    def _v1_silent(self, out: Path, rel: str, text: str) -> bool:
        """Exit 0 but a tensor the undamaged run writes is missing, with the damaged file not named and no
        skip reason added: the tensor vanished silently."""
        if Path(rel).name in text:
            return False
        skips, names = self._v1_reference_run()
        missing = names - {f.name for f in out.glob("*.npy")}
        return bool(missing) and _skip_lines(text) == skips

    def _v1_reference_run(self) -> tuple[list[str], set[str]]:
        """tf_dump on the undamaged seed run: its `skipped` lines and the golden files it writes."""
        if self._v1_reference is None:
            assert self.seeds is not None
            ws = Path(tempfile.mkdtemp(prefix="v1ref_", dir=self.work))
            try:
                run_dir = corpus.v1_run_dir(self.seeds)
                shutil.copytree(run_dir, ws / "tf" / "tf_debug" / run_dir.name)
                _, rc, out, err = self.worker.run(["--data", str(ws), "tf_dump", "--out", str(ws / "golden")])
                assert rc == 0, out + err
                self._v1_reference = (_skip_lines(out + err), {f.name for f in (ws / "golden").glob("*.npy")})
            finally:
                shutil.rmtree(ws, ignore_errors=True)
        return self._v1_reference

    def run_case(self, case: corpus.Case) -> list[Verdict]:
        ws = Path(tempfile.mkdtemp(prefix="case_", dir=self.work))
        try:
            path, runs = self.runs_for(case, ws)
            names = {path.name, str(path)}
            verdicts = []
            for run in runs:
                if run.command in ("vc", "ni"):
                    verdicts.append(self._run_vc(case, run, names))
                    continue
                crash, rc, out, err = self.worker.run(run.argv)
                outcome, detail = classify(run, names, crash, rc, out, err)
                verdicts.append(Verdict(case.name, case.kind, run.command, outcome, detail))
            return verdicts
        finally:
            shutil.rmtree(ws, ignore_errors=True)

    def _run_vc(self, case: corpus.Case, run: Run, names: set[str]) -> Verdict:
        """vc / ni on the demo workspace with one of its files (a golden .npy, bn2/Relu's dump) replaced by
        the case's bytes, so the damaged file sits among good ones under a real Build graph."""
        assert self.vc_workspace is not None
        if case.kind == "golden_npy":
            target = next((self.vc_workspace / "tf" / "dump").glob("bn2_Relu.0.*.npy"))
        else:
            target = next(self.vc_workspace.glob("npu/debug_0/dump/*/*/*/*/*/Relu.bn2_Relu.*"))
        original = target.read_bytes()
        try:
            target.write_bytes(case.data)
            crash, rc, out, err = self.worker.run(run.argv)
            outcome, detail = classify(run, names | {target.name, str(target)}, crash, rc, out, err)
        finally:
            target.write_bytes(original)
        return Verdict(case.name, case.kind, run.command, outcome, detail)


def summarize(verdicts: list[Verdict]) -> dict[str, dict[str, int]]:
    """kind → outcome → number of files with that worst outcome (a file counts once per bad outcome)."""
    per_file: dict[tuple[str, str], set[str]] = defaultdict(set)
    for v in verdicts:
        per_file[(v.kind, v.case)].add(v.outcome)
    table: dict[str, Counter] = defaultdict(Counter)
    for (kind, _), outcomes in per_file.items():
        table[kind]["files"] += 1
        for outcome in outcomes:
            if outcome != "RESULT":
                table[kind][outcome] += 1
    return {k: dict(v) for k, v in table.items()}


def run_corpus(kinds: Iterable[str], work: Path, seeds: Path | None, count: int, *, every: int = 1,
               commands: set[str] | None = None, vc_workspace: Path | None = None, vc_every: int = 0,
               timeout: float = 30.0, progress: Callable[[str, int], None] | None = None) -> list[Verdict]:
    """Every `every`-th case of `count` per kind through its commands (vc on every `vc_every`-th only)."""
    verdicts: list[Verdict] = []
    harness = Harness(work, seeds, commands=commands, timeout=timeout)
    vc_harness = Harness(work, seeds, commands={"vc", "ni"}, timeout=timeout * 4, vc_workspace=vc_workspace) \
        if vc_workspace is not None and vc_every else None
    try:
        for kind in kinds:
            for n, case in enumerate(corpus.generate(kind, seeds, count)):
                if n % every:
                    continue
                verdicts.extend(harness.run_case(case))
                if vc_harness is not None and kind in ("golden_npy", "npu_dump", "nano_dump") and n % vc_every == 0:
                    verdicts.extend(vc_harness.run_case(case))
                if progress is not None:
                    progress(kind, n)
    finally:
        harness.close()
        if vc_harness is not None:
            vc_harness.close()
    return verdicts


def started() -> float:
    return time.monotonic()
