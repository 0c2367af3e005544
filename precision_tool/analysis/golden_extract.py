"""tfdbg dumps → golden .npy files (the engine behind `tf_dump`).

Finds the dumps (v1 run folders or a v2 folder), picks the run(s)/step(s), and writes every full tensor
as `<node>.<slot>.<µs>.npy` (formats/tf/golden.py) with atomic writes: a file is either complete or absent,
also when the disk fills up. Files already present are not rewritten unless `force`.

A data-parallel capture keeps one dump per rank, `tf_debug/rank_<r>/` (`demo --ranks N` writes them):
`rank_dump_dirs` finds them and `extract_ranks` extracts each into `<out>/rank_<r>/`.
"""

from __future__ import annotations

import errno
import os
import shlex
import signal
import subprocess
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterator, Mapping

from precision_tool.atomic import atomic_path
from precision_tool.config import DUMP_FLAG_ENV, OVERFLOW_FLAG_ENV
from precision_tool.errors import CommandInterrupted, FormatError, UsageError, WorkspaceError
from precision_tool.formats.tf import tfdbg_v1, tfdbg_v2
from precision_tool.formats.tf.golden import golden_file_name
from precision_tool.workspace import GOLDEN_RANK_FOLDER, GOLDEN_RANK_PREFIX, Workspace

HOW_TO_DUMP = ("produce one with `import precision_tool.tf_config as npu_tf_config` and "
               "`sess = npu_tf_config.sess_dump(sess)` (or `hooks=[npu_tf_config.estimator_dump()]`) in the "
               "training script, or let tf_dump run it: tf_dump \"python3 train.py ...\"")
_SEARCH_DEPTH = 3
_DISK_FULL = {errno.ENOSPC, errno.EDQUOT, errno.EFBIG}

ProgressCallback = Callable[[int, int], None]


@dataclass(frozen=True)
class TfDumpLocation:
    """Where the tfdbg dumps are: v1 run folders, or one v2 folder."""

    kind: str  # "v1" | "v2"
    root: Path  # v1: the folder holding run_*; v2: the folder holding tfdbg_events.*
    runs: tuple[tfdbg_v1.V1Run, ...] = ()  # v1 only, oldest first
    named_run: bool = False  # the user pointed at one run folder


@dataclass(frozen=True)
class ExtractSummary:
    """What one extraction did. Counts are tensors; `skipped` maps a reason to a count."""

    kind: str
    source: Path
    selected: tuple[str, ...]  # run folder names (v1) or 'step N' (v2)
    out_dir: Path
    tensors: int
    written: int
    already_present: int
    skipped: tuple[tuple[str, int], ...]
    bytes_written: int
    seconds: float
    bad_files: tuple[tuple[str, str], ...] = ()  # (file, problem): skipped and named
    stopped: str | None = None  # why extraction stopped early (disk full)
    notes: tuple[str, ...] = field(default_factory=tuple)

    @property
    def failed(self) -> bool:
        return bool(self.bad_files) or self.stopped is not None


# --- finding the dumps ----------------------------------------------------------------------------------
def _scan(folder: Path, depth: int, v1_roots: list[Path], v2_roots: list[Path]) -> None:
    if tfdbg_v2.is_v2_dir(folder):
        v2_roots.append(folder)
    try:
        children = sorted(p for p in folder.iterdir() if p.is_dir())
    except OSError:
        return
    if any(tfdbg_v1.RUN_DIR.match(c.name) for c in children):
        v1_roots.append(folder)
    if depth > 0:
        for child in children:
            if not tfdbg_v1.RUN_DIR.match(child.name):
                _scan(child, depth - 1, v1_roots, v2_roots)


def locate_tf_dumps(path: Path, kind: str = "auto") -> TfDumpLocation:
    """Find the dumps at or below `path`; clear errors for missing, empty, ambiguous or mixed folders."""
    if kind not in ("auto", "v1", "v2"):
        raise UsageError(f"--format must be auto, v1 or v2, not {kind}")
    if not path.exists():
        raise WorkspaceError(f"{path} does not exist: check the path, or {HOW_TO_DUMP}")
    if not path.is_dir():
        raise WorkspaceError(f"{path}: is a file; give the tfdbg dump folder (tf/tf_debug or a run_* folder)")
    if path.name.startswith(tfdbg_v1.DEVICE_PREFIX) and tfdbg_v1.RUN_DIR.match(path.parent.name):
        path = path.parent  # a device folder: its run
    if tfdbg_v1.RUN_DIR.match(path.name) and kind != "v2":
        return TfDumpLocation("v1", path.parent, (tfdbg_v1.run_from_dir(path),), named_run=True)
    v1_roots: list[Path] = []
    v2_roots: list[Path] = []
    _scan(path, _SEARCH_DEPTH, v1_roots, v2_roots)
    if kind == "v1":
        v2_roots = []
    elif kind == "v2":
        v1_roots = []
    if not v1_roots and not v2_roots:
        wanted = {"auto": "tfdbg dumps (run_* folders or tfdbg_events.* files)",
                  "v1": "tfdbg v1 run_* folders", "v2": "tfdbg v2 tfdbg_events.* files"}[kind]
        raise WorkspaceError(f"{path}: no {wanted} found; {HOW_TO_DUMP}")
    if v1_roots and v2_roots:
        raise UsageError(f"{path} holds both tfdbg v1 run folders (in {v1_roots[0]}) and a tfdbg v2 dump "
                         f"(in {v2_roots[0]}); choose one with --format v1 or --format v2")
    roots = v1_roots or v2_roots
    if len(roots) > 1:
        listed = ", ".join(str(r) for r in roots[:4])
        raise UsageError(f"{path} holds several tfdbg dumps ({listed}); pick one with --dir FOLDER")
    if v1_roots:
        return TfDumpLocation("v1", roots[0], tuple(tfdbg_v1.find_runs(roots[0])))
    return TfDumpLocation("v2", roots[0])


RANK_DIR = GOLDEN_RANK_FOLDER  # tf/tf_debug/rank_<r>/ → tf/dump/rank_<r>/: one spelling on both sides


def rank_dump_dirs(path: Path) -> list[tuple[int, Path]]:
    """The per-rank dump folders `rank_<r>` directly in `path`, by rank; empty when it has none (a
    single-rank dump). A folder holding rank folders and run_* folders side by side is refused."""
    if not path.is_dir() or tfdbg_v1.RUN_DIR.match(path.name):
        return []
    try:
        children = [child for child in path.iterdir() if child.is_dir()]
    except OSError:
        return []
    found = sorted((int(match.group(1)), child) for child in children if (match := RANK_DIR.match(child.name)))
    if found and any(tfdbg_v1.RUN_DIR.match(child.name) for child in children):
        raise UsageError(f"{path} holds both per-rank folders ({found[0][1].name}, ...) and run_* folders; "
                         "pick one with --dir FOLDER")
    return found


def rank_golden_dir(out_dir: Path, rank: int) -> Path:
    """Where rank `rank`'s golden tensors go: `<out>/rank_<r>`."""
    return out_dir / f"{GOLDEN_RANK_PREFIX}{rank}"


def extract_ranks(rank_dirs: list[tuple[int, Path]], out_dir: Path, *, kind: str = "auto",
                  run: str | int = "last", force: bool = False,
                  progress: Callable[[int, int, int], None] | None = None,
                  sources_file: Path | None = None) -> list[tuple[int, ExtractSummary]]:
    """Extract each rank's dump (`rank_dump_dirs`) into `<out>/rank_<r>`; stops at the first rank whose
    extraction failed (its summary is the last one returned). `progress(rank, done, total)`."""
    results = []
    for rank, folder in rank_dirs:
        location = locate_tf_dumps(folder, kind)
        tick = None if progress is None else (lambda done, total, r=rank: progress(r, done, total))
        # every rank runs the same graph: the first rank's record of where its ops were made serves all
        summary = extract_golden(location, rank_golden_dir(out_dir, rank), run=run, force=force, progress=tick,
                                 sources_file=sources_file if not results else None)
        results.append((rank, summary))
        if summary.failed:
            break
    return results


def parse_run_selector(text: str | None) -> str | int:
    """'last' (default), 'all', or an index (negative counts from the end)."""
    if text is None or text == "last":
        return "last"
    if text == "all":
        return "all"
    try:
        return int(text)
    except ValueError:
        raise UsageError(f"--run takes a number, 'last' or 'all', not {text!r}") from None


def _pick(count: int, selector: str | int, what: str) -> list[int]:
    if count == 0:
        return []
    if selector == "all":
        return list(range(count))
    if selector == "last":
        return [count - 1]
    assert isinstance(selector, int)
    if not -count <= selector < count:
        held = f"1 {what} (0; -1 is the last)" if count == 1 else f"{count} {what}s (0 to {count - 1}; -1 is the last)"
        raise UsageError(f"tf_dump --run {selector}: the dump holds {held}")
    return [selector % count]


# --- planning -----------------------------------------------------------------------------------------
@dataclass(frozen=True)
class _Job:
    """One tensor to write: its golden file name and how to get its array."""

    file_name: str
    source: str  # for messages
    load: Callable[[], Any]  # -> DecodedTensor; may raise FormatError
    file: str = ""  # the file it comes from, when `source` is not that file (v2: the traces file)


def _v1_jobs(location: TfDumpLocation, selector: str | int, skipped: Counter,
             strays: list[Path]) -> tuple[list[_Job], list[str]]:
    runs = list(location.runs)
    picked = [runs[i] for i in _pick(len(runs), selector, "run")]
    jobs: dict[str, tuple[tuple[int, int], _Job]] = {}
    for run in picked:
        files, stray = tfdbg_v1.list_tensor_files(run)
        strays.extend(stray)
        for item in files:
            if item.debug_op != tfdbg_v1.FULL_TENSOR_OP:
                skipped[f"{item.debug_op} summaries (not full tensors)"] += 1
                continue
            name = golden_file_name(item.node_name, item.output_slot, item.timestamp_us)
            order = (item.timestamp_us, item.repeat)
            previous = jobs.get(name)
            if previous is not None:
                skipped["dumped again in the same µs (the last one is kept)"] += 1
                if previous[0] > order:
                    continue
            path = item.path
            jobs[name] = (order, _Job(name, str(path), lambda p=path: tfdbg_v1.read_tensor_file(p)))
    return [job for _, job in jobs.values()], [run.name for run in picked]


def _v2_jobs(traces: tfdbg_v2.V2Traces, selector: str | int,
             skipped: Counter) -> tuple[list[_Job], list[str]]:
    from precision_tool.formats.tf.tf_protos import FULL_TENSOR

    steps = _pick(traces.steps, selector, "step")
    wanted = set(steps)
    jobs: dict[str, _Job] = {}
    for trace in traces.traces:
        if trace.step not in wanted:
            continue
        if trace.tensor_debug_mode != FULL_TENSOR:
            skipped[f"tensor_debug_mode {trace.tensor_debug_mode} (not FULL_TENSOR)"] += 1
            continue
        name = golden_file_name(trace.op_name, trace.output_slot, trace.timestamp_us)
        if name in jobs:
            # two graphs, or one op of tf.data's parallel map run for two steps in the same µs
            skipped["same name and µs twice (the last one is kept)"] += 1
        source = f"{trace.op_name}:{trace.output_slot} (step {trace.step})"
        jobs[name] = _Job(name, source, lambda t=trace, s=source: _decode_v2(t, s), str(trace.file or ""))
    return list(jobs.values()), [f"step {s}" for s in steps]


def _decode_v2(trace: tfdbg_v2.V2Trace, source: str) -> Any:
    """A v2 trace's tensor; a tensor that does not add up (shorter than its shape, a negative or huge
    dimension) is a FormatError naming the traces file and the op output."""
    from precision_tool.formats.tf.tf_protos import decode_tensor_proto

    try:
        return decode_tensor_proto(trace.tensor_proto)
    except ValueError as exc:
        raise FormatError(trace.file or Path("graph_execution_traces"), f"{source}: {exc}") from None


# --- writing ------------------------------------------------------------------------------------------
def npy_bytes_header(array: Any) -> bytes:
    """The .npy v1.0 header for a C-ordered array (what np.save writes), built without np.save's overhead."""
    import numpy as np

    descr = np.lib.format.dtype_to_descr(array.dtype)
    text = f"{{'descr': {descr!r}, 'fortran_order': False, 'shape': {tuple(array.shape)!r}, }}"
    raw = text.encode("latin1")
    total = 10 + len(raw) + 1
    pad = (64 - total % 64) % 64
    raw = raw + b" " * pad + b"\n"
    return b"\x93NUMPY\x01\x00" + len(raw).to_bytes(2, "little") + raw


def write_npy_atomic(path: Path, array: Any) -> int:
    """Write `array` to `path` as .npy via a temp name + os.replace; returns bytes written."""
    import numpy as np

    array = np.asarray(array)
    if not array.flags.c_contiguous:  # (np.ascontiguousarray would turn a scalar into shape (1,))
        array = array.copy(order="C")
    header = npy_bytes_header(array)
    with atomic_path(path) as temp, open(temp, "wb") as handle:
        handle.write(header)
        if array.size:
            handle.write(array.data if array.ndim else array.tobytes())
    return len(header) + array.nbytes


def _existing_names(folder: Path) -> set[str]:
    if not folder.is_dir():
        return set()
    with os.scandir(folder) as entries:
        return {e.name for e in entries}


def extract_golden(location: TfDumpLocation, out_dir: Path, *, run: str | int = "last", force: bool = False,
                   progress: ProgressCallback | None = None, sources_file: Path | None = None,
                   traces: tfdbg_v2.V2Traces | None = None) -> ExtractSummary:
    """Write the selected run(s)/step(s) as golden .npy files into `out_dir`; a v2 dump's record of where
    each op was made goes to `sources_file` (docs/source-lines.md; a v1 run's was written at capture).
    `traces`: the v2 dump read already (golden_steps extracts it step by step)."""
    started = time.perf_counter()
    skipped: Counter = Counter()
    bad: list[tuple[str, str]] = []
    notes: list[str] = []
    strays: list[Path] = []
    if location.kind == "v1":
        if not location.runs:
            raise WorkspaceError(f"{location.root}: no run_* folders; {HOW_TO_DUMP}")
        jobs, selected = _v1_jobs(location, run, skipped, strays)
    else:
        traces = traces if traces is not None else tfdbg_v2.read_traces(location.root)
        if not traces.traces and traces.problems:  # nothing readable: the damaged file is the story
            path, problem = traces.problems[0]
            more = f" (and {len(traces.problems) - 1} more damaged traces file(s))" if len(traces.problems) > 1 else ""
            raise FormatError(path, f"{problem}; no graph execution trace could be read before it, nothing "
                                    f"was extracted{more}")
        bad.extend((str(path), problem + " (the records before it were used)") for path, problem in traces.problems)
        if not traces.traces:
            raise WorkspaceError(f"{location.root}: the tfdbg v2 dump holds no graph execution traces; "
                                 "dump with tensor_debug_mode=\"FULL_TENSOR\" while a tf.function runs")
        jobs, selected = _v2_jobs(traces, run, skipped)
    for stray in strays[:5]:
        notes.append(f"{stray}: not a tfdbg tensor file name, ignored")
    if len(strays) > 5:
        notes.append(f"... and {len(strays) - 5} more files with other names, ignored")

    planned_skips = sum(skipped.values())
    present = set() if force else _existing_names(out_dir)
    todo = [job for job in jobs if job.file_name not in present]
    already = len(jobs) - len(todo)
    written = bytes_written = 0
    stopped: str | None = None
    if todo:
        Workspace.ensure_dir(out_dir, "golden folder (--out DIR)")
    total = len(todo)
    for done, job in enumerate(todo, 1):
        try:
            decoded = job.load()
        except FormatError as exc:
            bad.append((exc.path, exc.problem))
            _tick(progress, done, total)
            continue
        if decoded.array is None:
            reason = decoded.skip_reason or "not decodable"
            skipped[_skip_label(reason)] += 1
            _tick(progress, done, total)
            continue
        try:
            bytes_written += write_npy_atomic(out_dir / job.file_name, decoded.array)
        except OSError as exc:
            if exc.errno == errno.ENAMETOOLONG:  # a node name longer than the file system takes
                bad.append((job.file or job.source, f"{job.source + ': ' if job.file else ''}its golden file name is {len(job.file_name)} characters, longer than "
                                        f"{out_dir} accepts; not written"))
                _tick(progress, done, total)
                continue
            if exc.errno in _DISK_FULL:
                stopped = (f"{out_dir}: no room to write {job.file_name} ({exc.strerror}); stopped after "
                           f"{written} files, none left half-written; free space and run tf_dump again "
                           "(it writes only the missing files)")
                break
            raise WorkspaceError(f"{out_dir / job.file_name}: cannot write: {exc.strerror or exc}") from None
        written += 1
        _tick(progress, done, total)
    if skipped.get(_skip_label("string")):
        notes.append("string tensors have no numeric golden value and were skipped")
    if location.kind == "v2" and sources_file is not None and stopped is None:
        notes.extend(_v2_sources(location.root, sources_file))
    return ExtractSummary(
        kind=location.kind, source=location.root, selected=tuple(selected), out_dir=out_dir,
        tensors=len(jobs) + planned_skips, written=written, already_present=already,
        skipped=tuple(sorted(skipped.items())), bytes_written=bytes_written,
        seconds=time.perf_counter() - started, bad_files=tuple(bad), stopped=stopped, notes=tuple(notes),
    )


def _v2_sources(folder: Path, sources_file: Path) -> list[str]:
    """Write the v2 dump's op sources (tfdbg_v2.read_op_sources_v2); the notes that say what happened."""
    record, problems = tfdbg_v2.read_op_sources_v2(folder)
    notes = [f"{path}: {problem}; the source lines before it were used" for path, problem in problems]
    if record is None:
        return notes + [f"{folder}: the dump names no op's stack frames, so no source lines were recorded"]
    try:
        record.write(sources_file)
    except OSError as exc:
        return notes + [f"{sources_file}: cannot write the ops' source lines ({exc.strerror or exc})"]
    return notes + [f"where each of {len(record.ops)} ops was made: {sources_file}"]


def _skip_label(reason: str) -> str:
    return {"resource": "resource handles", "variant": "variant tensors", "string": "string tensors",
            "uninitialized": "uninitialized tensors"}.get(reason, reason)


def _tick(progress: ProgressCallback | None, done: int, total: int) -> None:
    if progress is not None:
        progress(done, total)


# --- running the training script ----------------------------------------------------------------------
# The original's environment flags: configs built with action=None in tf_config obey them (config.py).
DUMP_FLAG = DUMP_FLAG_ENV
OVERFLOW_FLAG = OVERFLOW_FLAG_ENV
CAPTURE_FLAGS = (DUMP_FLAG, OVERFLOW_FLAG)


def run_training(command_line: str, workspace_root: Path, cwd: Path | None = None,
                 flags: Mapping[str, str] | None = None) -> int:
    """Run the user's training command (no shell), its output going straight to the terminal; returns its
    exit status as a shell gives it (128+N when signal N ended it).

    The child sees PRECISION_DATA (so tf_config writes into this workspace), `flags` set and the other
    capture flags unset (as the original's npu_dump/npu_overflow did), and can import precision_tool even
    when it is not installed (the checkout is put on PYTHONPATH), as next to the original's scripts.
    Ctrl-C reaches the child (it is in our process group); we wait for it to end, then raise
    CommandInterrupted carrying status 130.
    """
    try:
        words = shlex.split(command_line)
    except ValueError as exc:
        raise UsageError(f"cannot read the training command {command_line!r}: {exc}") from None
    if not words:
        raise UsageError("the training command is empty; give it quoted, e.g. \"python3 train.py\"")
    env = dict(os.environ)
    for name in CAPTURE_FLAGS:
        env.pop(name, None)
    env.update(flags or {})
    env["PRECISION_DATA"] = str(workspace_root)
    checkout = str(Path(__file__).resolve().parents[2])
    env["PYTHONPATH"] = os.pathsep.join(p for p in (checkout, env.get("PYTHONPATH", "")) if p)
    interrupted = []
    previous = _catch_interrupts(interrupted)
    try:
        try:
            child = subprocess.Popen(words, cwd=cwd, env=env)
        except FileNotFoundError:
            raise UsageError(f"cannot run {words[0]!r}: no such program") from None
        except PermissionError:
            raise UsageError(f"cannot run {words[0]!r}: not executable (permission denied)") from None
        status = child.wait()
    finally:
        _restore_interrupts(previous)
    if interrupted or status == -signal.SIGINT:
        raise CommandInterrupted(f"`{command_line}` was interrupted (Ctrl-C)", exit_status=130)
    return 128 - status if status < 0 else status


def _catch_interrupts(seen: list[int]) -> Any:
    """While the child runs, Ctrl-C is the child's to handle: we only note it (and keep waiting)."""
    try:
        return signal.signal(signal.SIGINT, lambda signum, frame: seen.append(signum))
    except ValueError:  # not the main thread: leave signals alone
        return None


def _restore_interrupts(previous: Any) -> None:
    if previous is not None:
        signal.signal(signal.SIGINT, previous)


def dump_is_empty(path: Path) -> bool:
    """True when `path` holds no files at all (missing counts as empty), so training must run first."""
    if not path.is_dir():
        return True
    for _ in _walk_any(path):
        return False
    return True


def _walk_any(path: Path) -> Iterator[str]:
    for _, _, files in os.walk(path):
        yield from files
