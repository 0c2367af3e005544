"""One reading of the ways a user names a tensor or a dump file, shared by `pt`, `cp`, `dc` and `ni`.

Spelling                        Example                                       Names
------------------------------  --------------------------------------------  ------------------------------------
path                            /data/x.npy, ./Conv2D.conv1_Conv2D.5.0.17..   that file
path or dump name + :output:N   Conv2D.conv1_Conv2D.5.0.17..:output:0         that tensor of the dump (:input:N too)
bare dump file name             Conv2D.conv1_Conv2D.5.0.1796097245768428      the file in the newest dump folder of
                                                                              each run (debug_0 first), else in any
                                                                              dump folder or overflow/dump; numbered
                                                                              files by their mapping.csv name
bare .npy name                  conv1_Relu.0.1796097245749836.npy             tf/dump (golden), else temp/decode/*
op name + :output:N             bn2/FusedBatchNormV3:output:0 (graph name)    that op's dump in debug_0's newest dump
                                bn2_FusedBatchNormV3:output:0 (dump name)     folder (the newest iteration if several;
                                                                              another run only if debug_0 lacks it)
TF tensor name OP:N             bn2/FusedBatchNormV3:0, conv1_Relu:0          the golden tensor tf/dump/OP.N.*.npy
golden key KEY (as `ni` prints)  bn2_FusedBatchNormV3.0                        the golden tensor tf/dump/KEY.*.npy

Every choice the resolver makes among several files is said in `TensorRef.notes` (several timestamps
of one golden tensor: the newest, as the comparison reads it); two files it cannot choose between are
refused with the candidates on one line; a spelling that finds nothing, or a tensor a dump does not
have, says where it looked or what there is. A bare dump file stands for its output:0 in `pt` and `cp`
(`one_tensor_of`, with a note). Nothing here prints.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Iterable

from precision_tool.errors import UsageError
from precision_tool.formats.npu.npu_dump import parse_dump_name, sanitize_op_name

if TYPE_CHECKING:
    from precision_tool.workspace import Workspace

_DUMP_TENSOR = re.compile(r"^(?P<head>.+):(?P<kind>input|output):(?P<index>\d+)$")
_TF_TENSOR = re.compile(r"^(?P<head>[^:]+):(?P<index>\d+)$")
_GOLDEN_KEY = re.compile(r"^(?P<head>[A-Za-z0-9_-]+)\.(?P<index>\d+)$")  # bn2_FusedBatchNormV3.0, as `ni` prints
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


def split_dump_tensor(text: str) -> tuple[str, str, int] | None:
    """'X:output:0' → ('X', 'output', 0); None when `text` does not end in :input:N / :output:N."""
    match = _DUMP_TENSOR.match(text)
    return (match.group("head"), match.group("kind"), int(match.group("index"))) if match else None


def resolve_tensor(text: str, workspace: "Workspace", *, command: str = "") -> TensorRef:
    """Read any spelling of the table above; UsageError (one line) when it names nothing or is ambiguous.
    A bare file or dump file name comes back with kind None: the caller decides whether it needs a tensor."""
    prefix = f"{command}: " if command else ""
    text = text.strip()
    path = Path(text).expanduser()
    if path.is_file():
        return TensorRef(path)
    if path.is_dir():
        raise UsageError(f"{prefix}{text} is a folder; name one file or tensor (a .npy, or DUMPFILE:output:0)")
    dump_tensor = split_dump_tensor(text)
    if dump_tensor is not None:
        head, kind, index = dump_tensor
        found = _resolve_file(head, workspace, prefix, required=False)
        if found is None and _looks_like_path(head):
            raise UsageError(f"{prefix}{head}: no such file")
        if found is None:
            found = resolve_op_dump(head, workspace, prefix=prefix, tensor=f"{kind}:{index}")
        if found.is_npy:
            raise UsageError(f"{prefix}{head} is a .npy file; it holds one tensor: give it without :{kind}:{index}")
        _refuse_missing_tensor(text, head, found.path, kind, index, prefix)
        return TensorRef(found.path, kind, index, found.golden, found.debug_id, found.notes)
    tf_tensor = _TF_TENSOR.match(text)
    if tf_tensor is not None and parse_dump_name(tf_tensor.group("head")) is not None:
        head, index = tf_tensor.group("head"), tf_tensor.group("index")
        raise UsageError(f"{prefix}{text}: a dump file's tensor is {head}:output:{index} or {head}:input:{index}")
    if tf_tensor is not None and not _looks_like_path(text):
        return resolve_golden_tensor(tf_tensor.group("head"), int(tf_tensor.group("index")), workspace, prefix)
    found = _resolve_file(text, workspace, prefix, required=False)
    if found is not None:
        return found
    if _looks_like_path(text):
        raise UsageError(f"{prefix}{text}: no such file")
    if _GOLDEN_KEY.match(text) is not None and _golden_files(workspace, text):
        return _golden_ref(text, text, workspace)
    raise UsageError(_nothing_named(text, workspace, prefix))


def one_tensor_of(ref: TensorRef, text: str, *, verb: str, command: str = "") -> TensorRef:
    """A bare dump file (`ref.kind` None, not a .npy) as the one tensor `pt` shows and `cp` compares: its
    output:0 (input:0 when it has no outputs), with a note saying so in the words `verb` fills
    ('showing', 'comparing'). Other refs come back as they are."""
    from dataclasses import replace

    from precision_tool.errors import FormatError
    from precision_tool.formats.npu.npu_dump import count_dump_tensors

    if ref.is_npy and ref.kind is None:
        _check_npy(ref, command)
        return ref
    if ref.kind is not None:
        return ref
    prefix = f"{command}: " if command else ""
    if Path(ref.path).name.lower().endswith(".csv"):
        raise UsageError(f"{prefix}{ref.path} is a statistics CSV (dump_data=\"stats\"): max/min/mean per tensor, "
                         "no tensor data; `ni OP` shows its numbers next to the golden tensor, `vc` compares them")
    try:
        inputs, outputs = count_dump_tensors(ref.path)
    except FormatError as exc:
        if _starts_with(ref.path, b"PK\x03\x04"):
            raise UsageError(f"{prefix}{ref.path} is an .npz archive (several arrays), not one tensor; unpack one "
                             "array with numpy (np.load(f)[name]) and save it with np.save") from None
        raise UsageError(f"{prefix}{ref.path} is neither a .npy file nor a readable NPU dump ({exc.problem})") from None
    if outputs:
        kind, note = "output", f"{text} is a dump file: {verb} its output:0"
    elif inputs:
        kind, note = "input", f"{text} is a dump file with no outputs: {verb} its input:0"
    else:
        raise UsageError(f"{prefix}{text} is a dump file that holds no tensors (0 inputs, 0 outputs)")
    note += f" (name another as {text}:output:N or :input:N)"
    return replace(ref, kind=kind, index=0, notes=ref.notes + (note,))


def _check_npy(ref: TensorRef, command: str) -> None:
    """A .npy's header read and checked against the file before any command loads it (a header declaring
    4 TiB, an .npz, object or text dtypes): FormatError naming this file, the golden one when it is."""
    from precision_tool.analysis.dumps.tensor_stats import non_numeric_reason
    from precision_tool.errors import FormatError
    from precision_tool.formats.tf.golden import read_npy_header

    dtype = read_npy_header(ref.path)[0]
    reason = non_numeric_reason(dtype)
    if reason is not None:
        verb = "compares" if command == "cp" else "shows"
        golden = " (it is the golden tensor: save it as a numeric array)" if ref.golden else ""
        raise FormatError(ref.path, f"{reason}; {command or 'pt'} {verb} numeric tensors{golden}")


def _refuse_missing_tensor(text: str, head: str, path: Path, kind: str, index: int, prefix: str) -> None:
    """One line when the dump has no such tensor, saying what it has. An unreadable header is left to the
    command that reads the tensor (it names the file and the damage)."""
    from precision_tool.errors import FormatError
    from precision_tool.formats.npu.npu_dump import count_dump_tensors

    try:
        inputs, outputs = count_dump_tensors(path)
    except FormatError:
        return
    count = inputs if kind == "input" else outputs
    if index < count:
        return
    has = f"{_counted(inputs, 'input')} and {_counted(outputs, 'output')}"
    if count == 1:
        has += f"; its only {kind} is {head}:{kind}:0"
    elif count:
        has += f"; its {kind}s are {head}:{kind}:0 to {head}:{kind}:{count - 1}"
    raise UsageError(f"{prefix}{text}: {path.name} has no {kind} {index}; it has {has}")


def _counted(count: int, what: str) -> str:
    return f"{count} {what}" + ("" if count == 1 else "s")


def _looks_like_path(text: str) -> bool:
    """Absolute, ~ or ./ ../ spellings are paths; `bn2/FusedBatchNormV3` (no leading mark) may be an op."""
    return text.startswith(("/", "~", "./", "../")) or os.sep + os.sep in text


def resolve_file(text: str, workspace: "Workspace", *, command: str = "") -> TensorRef:
    """A path, or a bare dump / .npy file name found in the workspace (no tensor suffix)."""
    prefix = f"{command}: " if command else ""
    path = Path(text).expanduser()
    if path.is_file():
        return TensorRef(path)
    found = _resolve_file(text, workspace, prefix, required=True)
    assert found is not None
    return found


def find_file(text: str, workspace: "Workspace", *, command: str = "") -> TensorRef | None:
    """As resolve_file, but None when nothing has that name (several equal candidates are still refused)."""
    return _resolve_file(text, workspace, f"{command}: " if command else "", required=False)


# --- files by name -----------------------------------------------------------------------------------
def _resolve_file(text: str, workspace: "Workspace", prefix: str, *, required: bool) -> TensorRef | None:
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
                             f"{_dump_places(workspace)})")
        return None
    best = [h for h in hits if h[0] == hits[0][0]]
    if len({p for _, p in best}) > 1:
        raise UsageError(f"{prefix}{text} is in {len(best)} folders; give one path: "
                         + _one_line(str(p) for _, p in best))
    rank, chosen = hits[0]
    notes = []
    others = [p for _, p in hits[1:] if p != chosen]
    if others:
        notes.append(f"{text}: using the one in {_run_label(rank[0])} ({chosen.parent}); also in "
                     + _one_line(str(p.parent) for p in others))
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

    return [e.path for e in scan_dump_folder(folder) if base in (e.file_name, e.real)]


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
                         + _one_line(str(p) for p in found))
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
    scanned = scan_runs(runs)
    per_run = dumps_of_op(scanned, op_name)
    if not per_run:
        raise UsageError(_no_op(op_name, tensor, scanned, runs, prefix, workspace))
    debug_id, matches = per_run[0]
    kinds = sorted({e.name.op_type for e in matches})
    if len(kinds) > 1:  # two different ops share the dump spelling (a/b_c and a_b/c)
        raise UsageError(f"{prefix}{op_name} names {len(kinds)} ops in debug_{debug_id}; give one file: "
                         + _one_line(f"{e.real_name}:{tensor}" for e in matches))
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
    scanned = scan_runs(runs)
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
            f"name contains it: {_one_line(ops)}")
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
        text += (f"; the Build graph fused it into {_one_line(fused_into)}, whose {tensor} is the fused "
                 f"result (`ni {op_name}` shows the fused op)")
    elif fused_into:
        text += (f"; the Build graph fused it into {_one_line(fused_into)}, whose dumps hold the fused result "
                 f"(`dc {fused_into[0]}` decodes them; `ni {op_name}` shows the fused op)")
    elif similar:
        text += "; ops whose name contains it: " + _one_line(similar)
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
    from precision_tool.formats.tf.golden import golden_key, scan_golden_dir

    key = golden_key(op_name, slot)
    if _golden_files(workspace, key):
        return _golden_ref(f"{op_name}:{slot}", key, workspace)
    golden = scan_golden_dir(workspace.golden_dir)
    stem = key.rsplit(".", 1)[0]
    slots = sorted(k for k in golden if k.rsplit(".", 1)[0] == stem)
    text = f"{prefix}{op_name}:{slot}: no golden tensor {key}.*.npy in {workspace.golden_dir}"
    if slots:
        text += "; it has " + _one_line(slots)
    elif not golden:
        text += f" (it holds no golden .npy; {workspace.golden_hint()})"
    text += f" (for the NPU dump of the op write {op_name}:output:{slot})"
    raise UsageError(text)


def _golden_files(workspace: "Workspace", key: str) -> list[Path]:
    """The golden .npy files of one key ('bn2_Relu.0'), oldest first in the comparison's order (a timestamp
    that is not 16 digits counts as 0, as msaccucmp reads it): the last is the one compared."""
    from precision_tool.formats.tf.golden import GOLDEN_NAME, TIMESTAMP_DIGITS

    folder = workspace.golden_dir
    if not folder.is_dir():
        return []
    found = []
    for path in folder.glob(f"{key}.*.npy"):
        match = GOLDEN_NAME.match(path.name)
        if match is None or f"{match.group(1)}.{match.group(2)}" != key or not path.is_file():
            continue
        stamp = match.group(3)
        found.append((int(stamp) if len(stamp) == TIMESTAMP_DIGITS else 0, path.name, path))
    return [path for *_, path in sorted(found)]


def _golden_ref(text: str, key: str, workspace: "Workspace") -> TensorRef:
    files = _golden_files(workspace, key)
    chosen = files[-1]
    note = f"{text} is the golden {chosen.name}"
    if len(files) > 1:
        note += (f" (the newest of {len(files)} timestamps, as the comparison reads it; also "
                 + _one_line(p.name for p in reversed(files[:-1])) + ")")
    return TensorRef(chosen, golden=True, notes=(note,))


# --- messages -----------------------------------------------------------------------------------------
def _one_line(items: Iterable[str]) -> str:
    items = list(items)
    shown = ", ".join(items[:_SHOW_CANDIDATES])
    if len(items) > _SHOW_CANDIDATES:
        shown += f" ... and {len(items) - _SHOW_CANDIDATES} more"
    return shown


def _dump_places(workspace: "Workspace") -> str:
    places = [str(workspace.dump_root(d)) for d in workspace.debug_ids() if workspace.dump_root(d).is_dir()]
    if workspace.overflow_root.is_dir():
        places.append(str(workspace.overflow_root))
    return ", ".join(places) if places else f"{workspace.root} (it has no NPU dumps)"


def _starts_with(path: "str | os.PathLike[str]", magic: bytes) -> bool:
    try:
        with open(path, "rb") as handle:
            return handle.read(len(magic)) == magic
    except OSError:
        return False


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


def _nothing_named(text: str, workspace: "Workspace", prefix: str) -> str:
    """A bare word that is no file: maybe an op name without a tensor."""
    from precision_tool.analysis.dumps.dump_files import scan_dump_folder, workspace_dump_folders

    if text.lower().endswith(".csv"):
        return (f"{prefix}{text}: a statistics CSV (dump_data=\"stats\") holds max/min/mean, not a tensor; "
                "`ni OP` shows its numbers next to the golden tensor, `vc` compares them")
    wanted = sanitize_op_name(text)
    key = _GOLDEN_KEY.match(text)
    if key is not None:  # a golden key with no file: the keys of that op that there are
        from precision_tool.formats.tf.golden import scan_golden_dir

        slots = [k for k in scan_golden_dir(workspace.golden_dir) if k.rsplit(".", 1)[0] == key.group("head")]
        if slots:
            return (f"{prefix}{text}: no golden tensor {text}.*.npy in {workspace.golden_dir}; it has "
                    + _one_line(slots))
    if parse_dump_name(text) is None:
        for folder in workspace_dump_folders(workspace):
            if any(e.name.op_name == wanted for e in scan_dump_folder(folder)):
                return (f"{prefix}{text} is an op; name one of its tensors: {text}:output:0 (NPU dump) "
                        f"or {text}:0 (golden)")
    return f"{prefix}{text}: no such file (nor a dump file or .npy of that name in {_dump_places(workspace)}, " \
           f"{workspace.golden_dir})"
