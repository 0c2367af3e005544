"""Where the files a tensor spelling names are: dump files by file name (the newest dump folder of each
run first), an op's dump files by op name (graph or dump spelling, an op fused away), golden tensors by
key; the candidates said or refused in one line. tensor_ref.py reads the spellings and asks here.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Iterable

from precision_tool.errors import UsageError
from precision_tool.formats.npu.npu_dump import parse_dump_name, sanitize_op_name

if TYPE_CHECKING:
    from precision_tool.workspace import Workspace

_SHOW_CANDIDATES = 8  # candidates named in one line before "... N more"


@dataclass(frozen=True)
class TensorRef:
    """What a spelling names: a file, and for a dump file optionally one of its tensors."""

    path: Path
    kind: str | None = None  # "input" / "output" for one tensor of a dump file
    index: int | None = None
    golden: bool = False  # a golden .npy found from a TF tensor name or a bare golden file name
    debug_id: int | None = None  # the run (npu/debug_N) a dump file was found in
    notes: tuple[str, ...] = field(default=())  # how the spelling was read, when a choice was made

    @property
    def is_npy(self) -> bool:
        return self.path.suffix == ".npy"

    @property
    def label(self) -> str | None:
        return f"{self.kind}:{self.index}" if self.kind is not None else None

    @property
    def spec(self) -> str:
        """`PATH` or `PATH:output:N`, the spelling the compare functions read."""
        return str(self.path) + (f":{self.kind}:{self.index}" if self.kind is not None else "")


# --- files by name -----------------------------------------------------------------------------------
def find_named_file(text: str, workspace: "Workspace", prefix: str, *, required: bool) -> TensorRef | None:
    """A path, or a bare dump / .npy file name looked up in the workspace; None when nothing has that name
    and it is not `required` (several equal candidates are refused either way)."""
    path = Path(text).expanduser()
    if path.is_file():
        return TensorRef(path)
    if "/" in text or not text or text.startswith("~"):
        if required:
            raise UsageError(f"{prefix}{text}: no such file")
        return None
    if text.endswith(".npy"):
        return _npy_by_name(text, workspace, prefix, required)
    hits = _files_named(workspace, text)
    if not hits:
        if required:
            raise UsageError(f"{prefix}{text}: no such file (nor a dump file of that name in "
                             f"{dump_places(workspace)})")
        return None
    best = [h for h in hits if h[0] == hits[0][0]]
    if len({p for _, p in best}) > 1:
        raise UsageError(f"{prefix}{text} is in {len(best)} folders; give one path: "
                         + one_line(str(p) for _, p in best))
    rank, chosen = hits[0]
    notes = []
    others = [p for _, p in hits[1:] if p != chosen]
    if others:
        notes.append(f"{text}: using the one in {_run_label(rank[0])} ({chosen.parent}); also in "
                     + one_line(str(p.parent) for p in others))
    return TensorRef(chosen, debug_id=rank[0] if rank[0] < _OVERFLOW else None, notes=tuple(notes))


_OVERFLOW = 1 << 30  # sorts after every debug_N


def _run_label(debug_id: int) -> str:
    return "overflow/dump" if debug_id >= _OVERFLOW else f"debug_{debug_id}"


def dump_search_folders(workspace: "Workspace") -> list[tuple[int, Path]]:
    """Where a bare dump file name is looked for: (N, newest dump folder of npu/debug_N) for each run,
    debug_0 first, then (a number above every N, the newest overflow/dump folder)."""
    from precision_tool.analysis.dumps.dump_files import workspace_dump_runs

    folders = workspace_dump_runs(workspace)
    overflow = workspace.newest_overflow_dir()
    if overflow is not None:
        folders.append((_OVERFLOW, overflow))
    return folders


def _files_named(workspace: "Workspace", base: str) -> list[tuple[tuple[int, int], Path]]:
    """Files named `base` (or numbered files mapping.csv gives that name), best first: ((run, pass), path)
    where run is N of debug_N (overflow/dump last) and pass 0 is the run's newest dump folder, 1 older ones."""
    newest = dump_search_folders(workspace)
    hits = [((run, 0), path) for run, folder in newest for path in _named_in(folder, base)]
    if hits:
        return sorted(hits)
    # Not in the newest folders: an older dump folder of some run (the user may have listed it by path).
    seen = {folder.resolve() for _, folder in newest}
    roots = [(d, workspace.dump_root(d)) for d in workspace.debug_ids()] + [(_OVERFLOW, workspace.overflow_root)]
    for run, root in roots:
        if not root.is_dir():
            continue
        for child in sorted(root.iterdir()):
            if child.is_dir() and child.resolve() not in seen:
                hits.extend(((run, 1), path) for path in _named_in(child, base))
    return sorted(hits)


def _named_in(folder: Path, base: str) -> list[Path]:
    from precision_tool.analysis.dumps.dump_files import scan_dump_folder

    return [e.path for e in scan_dump_folder(folder, base.lower()) if base in (e.file_name, e.real)]


def _npy_by_name(name: str, workspace: "Workspace", prefix: str, required: bool) -> TensorRef | None:
    golden = workspace.golden_dir / name
    if golden.is_file():
        return TensorRef(golden, golden=True)
    decode_root = workspace.temp_dir / "decode"
    found = sorted(decode_root.glob(f"*/{name}")) if decode_root.is_dir() and "*" not in name else []
    if len(found) == 1:
        return TensorRef(found[0])
    if len(found) > 1:
        raise UsageError(f"{prefix}{name} is in {len(found)} folders; give one path: "
                         + one_line(str(p) for p in found))
    if required:
        raise UsageError(f"{prefix}{name}: no such file (looked in {workspace.golden_dir} and {decode_root}/*)")
    return None


# --- op names -----------------------------------------------------------------------------------------
def resolve_op_dump(op_name: str, workspace: "Workspace", *, prefix: str = "", tensor: str = "output:0") -> TensorRef:
    """The dump of op `op_name` (graph spelling `a/b` or dump spelling `a_b`): debug_0's newest dump folder
    first; the newest iteration when several files hold the op. `tensor` only words the messages."""
    from precision_tool.analysis.dumps.dump_files import dumps_of_op, scan_runs, workspace_dump_runs

    runs = workspace_dump_runs(workspace)
    if not runs:
        raise UsageError(f"{prefix}{op_name}:{tensor}: no NPU dumps in {workspace.dump_root(0)} to find the op in "
                         "(give a dump file or a .npy path instead)")
    scanned = scan_runs(runs, sanitize_op_name(op_name).lower())  # names holding it: all the messages need
    per_run = dumps_of_op(scanned, op_name)
    if not per_run:
        raise UsageError(_no_op(op_name, tensor, scanned, runs, prefix, workspace))
    debug_id, matches = per_run[0]
    kinds = sorted({e.name.op_type for e in matches})
    if len(kinds) > 1:  # two different ops share the dump spelling (a/b_c and a_b/c)
        raise UsageError(f"{prefix}{op_name} names {len(kinds)} ops in debug_{debug_id}; give one file: "
                         + one_line(f"{e.real_name}:{tensor}" for e in matches))
    chosen = matches[-1]
    note = f"{op_name}:{tensor} is {tensor} of {chosen.real_name} in debug_{debug_id}"
    extra = []
    if len(matches) > 1:
        extra.append(f"the newest of {len(matches)} dumps of it (iterations)")
    if len(per_run) > 1:
        extra.append("also dumped in " + ", ".join(f"debug_{d}" for d, _ in per_run[1:]))
    elif debug_id != runs[0][0]:
        extra.append(f"debug_{runs[0][0]} has no dump of it")
    if extra:
        note += " (" + "; ".join(extra) + ")"
    return TensorRef(chosen.path, debug_id=debug_id, notes=(note,))


def resolve_op_dumps(op_name: str, workspace: "Workspace", *, prefix: str = "") -> tuple[list[Path], tuple[str, ...]]:
    """Every dump of op `op_name` in the newest dump folder of each run, every iteration, debug_0 first
    (`dc NAME`), with notes. An op fused away is refused, naming the op it went into (as resolve_op_dump
    does); a name no op has takes the ops whose dump names contain it, and the note names them.
    ([], ()) when nothing matches."""
    from precision_tool.analysis.dumps.dump_files import dumps_of_op, scan_runs, workspace_dump_runs

    runs = workspace_dump_runs(workspace)
    scanned = scan_runs(runs, sanitize_op_name(op_name).lower())  # names holding it: all the messages need
    per_run = dumps_of_op(scanned, op_name)
    if per_run:
        return [e.path for _, entries in per_run for e in entries], ()
    fused_into = _fused_into(op_name, workspace) if runs else []
    if fused_into:
        raise UsageError(_no_op(op_name, None, scanned, runs, prefix, workspace, fused_into))
    lowered = sanitize_op_name(op_name).lower()
    similar = [e for _, entries in scanned for e in entries
               if lowered in e.name.op_name.lower() and not e.name.is_opdebug]
    if not similar:
        return [], ()
    ops = sorted({e.name.op_name for e in similar})
    note = (f"no op is named {op_name}; taking the {len(similar)} dump file(s) of the {len(ops)} op(s) whose "
            f"name contains it: {one_line(ops)}")
    return [e.path for e in similar], (note,)


def _no_op(op_name: str, tensor: str | None, scanned: list, runs: list, prefix: str, workspace: "Workspace",
          fused_into: list[str] | None = None) -> str:
    """No dump of the op: where we looked, and the op it was fused into, or ops whose names contain it.
    `tensor` is None for a whole op (`dc NAME`)."""
    wanted = sanitize_op_name(op_name)
    where = ", ".join(f"debug_{d} ({folder})" for d, folder in runs)
    lowered = wanted.lower()
    similar = sorted({e.name.op_name for _, entries in scanned for e in entries if lowered in e.name.op_name.lower()})
    named = f"{op_name}:{tensor}" if tensor else op_name
    stats = _stats_files_of(wanted, runs)
    if stats:
        return (f"{prefix}{named}: op {wanted} dumped statistics only (dump_data=\"stats\"), no tensors; `ni "
                f"{op_name}` shows them next to the golden tensor, `vc` compares them: {stats[0]}")
    text = f"{prefix}{named}: no dump of op {wanted} in {where}"
    if fused_into is None:
        fused_into = _fused_into(op_name, workspace)
    if fused_into and tensor:
        text += (f"; the Build graph fused it into {one_line(fused_into)}, whose {tensor} is the fused "
                 f"result (`ni {op_name}` shows the fused op)")
    elif fused_into:
        text += (f"; the Build graph fused it into {one_line(fused_into)}, whose dumps hold the fused result "
                 f"(`dc {fused_into[0]}` decodes them; `ni {op_name}` shows the fused op)")
    elif similar:
        text += "; ops whose name contains it: " + one_line(similar)
    else:
        text += "; `ls dump` lists the dumped ops (an op fused away has no dump of its own: `ni NAME` says which op took it)"
    return text


def _fused_into(op_name: str, workspace: "Workspace") -> list[str]:
    """The Build-graph ops an op fused away was merged into (its name is among their original names)."""
    from precision_tool.errors import PrecisionToolError

    if not any(workspace.build_graph_files(d) for d in workspace.debug_ids()):
        return []
    try:
        from precision_tool.analysis.graphs.graph_index import index_for

        index = index_for(workspace)
        index.entries()
        _, fused = index.aliases()
    except (PrecisionToolError, OSError, AttributeError):
        return []  # an unreadable graph: the message falls back to the op names that contain it
    return sorted(fused.get(op_name, set()) | fused.get(sanitize_op_name(op_name), set()))


# --- golden tensors -----------------------------------------------------------------------------------
def resolve_golden_tensor(op_name: str, slot: int, workspace: "Workspace", prefix: str = "") -> TensorRef:
    """TF tensor `op:N` → the golden .npy of that output (newest timestamp, as the comparison reads it)."""
    from precision_tool.formats.tf.golden import golden_key, holds_golden, scan_golden_dir

    key = golden_key(op_name, slot)
    if golden_files(workspace, key):
        return golden_ref(f"{op_name}:{slot}", key, workspace)
    stem = key.rsplit(".", 1)[0]
    slots = sorted(k for k in scan_golden_dir(workspace.golden_dir, (f"{stem}.",)) if k.rsplit(".", 1)[0] == stem)
    text = f"{prefix}{op_name}:{slot}: no golden tensor {key}.*.npy in {workspace.golden_dir}"
    if slots:
        text += "; it has " + one_line(slots)
    elif not holds_golden(workspace.golden_dir):
        text += f" (it holds no golden .npy; {workspace.golden_hint()})"
    text += f" (for the NPU dump of the op write {op_name}:output:{slot})"
    raise UsageError(text)


def golden_files(workspace: "Workspace", key: str) -> list[Path]:
    """The golden .npy files of one key ('bn2_Relu.0'), oldest first in the comparison's order (a timestamp
    that is not 16 digits counts as 0, as msaccucmp reads it): the last is the one compared."""
    from precision_tool.formats.tf.golden import GOLDEN_NAME, TIMESTAMP_DIGITS

    folder = workspace.golden_dir
    found = []
    start = f"{key}."
    try:
        entries = os.scandir(folder)  # names only: the folder may hold a million tensors
    except OSError:
        return []
    with entries:
        for entry in entries:
            if not entry.name.startswith(start):
                continue
            match = GOLDEN_NAME.match(entry.name)
            if match is None or f"{match.group(1)}.{match.group(2)}" != key or not entry.is_file():
                continue
            stamp = match.group(3)
            found.append((int(stamp) if len(stamp) == TIMESTAMP_DIGITS else 0, entry.name))
    return [folder / name for _, name in sorted(found)]


def golden_ref(text: str, key: str, workspace: "Workspace") -> TensorRef:
    files = golden_files(workspace, key)
    chosen = files[-1]
    note = f"{text} is the golden {chosen.name}"
    if len(files) > 1:
        note += (f" (the newest of {len(files)} timestamps, as the comparison reads it; also "
                 + one_line(p.name for p in reversed(files[:-1])) + ")")
    return TensorRef(chosen, golden=True, notes=(note,))


# --- messages -----------------------------------------------------------------------------------------
def one_line(items: Iterable[str]) -> str:
    items = list(items)
    shown = ", ".join(items[:_SHOW_CANDIDATES])
    if len(items) > _SHOW_CANDIDATES:
        shown += f" ... and {len(items) - _SHOW_CANDIDATES} more"
    return shown


def dump_places(workspace: "Workspace") -> str:
    places = [str(workspace.dump_root(d)) for d in workspace.debug_ids() if workspace.dump_root(d).is_dir()]
    if workspace.overflow_root.is_dir():
        places.append(str(workspace.overflow_root))
    return ", ".join(places) if places else f"{workspace.root} (it has no NPU dumps)"


def _stats_files_of(op_name: str, runs: list) -> list[str]:
    """The statistics CSVs (dump_data="stats": the dump file's name plus .csv) of one op in the runs' folders."""
    found = []
    for _, folder in runs:
        for dirpath, _dirs, files in os.walk(folder):
            for base in sorted(files):
                if base.endswith(".csv"):
                    name = parse_dump_name(base[:-4])
                    if name is not None and name.op_name == op_name:
                        found.append(os.path.join(dirpath, base))
    return found
