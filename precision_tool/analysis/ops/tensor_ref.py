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
(`one_tensor_of`, with a note). Where the files are is tensor_files.py's. Nothing here prints.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import TYPE_CHECKING

from precision_tool.analysis.ops.tensor_files import (
    TensorRef, dump_places, find_named_file, golden_files, golden_ref, one_line, resolve_golden_tensor, resolve_op_dump,
)
from precision_tool.errors import UsageError
from precision_tool.formats.npu.npu_dump import parse_dump_name, sanitize_op_name

if TYPE_CHECKING:
    from precision_tool.workspace import Workspace

_DUMP_TENSOR = re.compile(r"^(?P<head>.+):(?P<kind>input|output):(?P<index>\d+)$")
_TF_TENSOR = re.compile(r"^(?P<head>[^:]+):(?P<index>\d+)$")
_GOLDEN_KEY = re.compile(r"^(?P<head>[A-Za-z0-9_-]+)\.(?P<index>\d+)$")  # bn2_FusedBatchNormV3.0, as `ni` prints


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
        found = find_named_file(head, workspace, prefix, required=False)
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
    found = find_named_file(text, workspace, prefix, required=False)
    if found is not None:
        return found
    if _looks_like_path(text):
        raise UsageError(f"{prefix}{text}: no such file")
    if _GOLDEN_KEY.match(text) is not None and golden_files(workspace, text):
        return golden_ref(text, text, workspace)
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
    found = find_named_file(text, workspace, prefix, required=True)
    assert found is not None
    return found


def find_file(text: str, workspace: "Workspace", *, command: str = "") -> TensorRef | None:
    """As resolve_file, but None when nothing has that name (several equal candidates are still refused)."""
    return find_named_file(text, workspace, f"{command}: " if command else "", required=False)


# --- messages -----------------------------------------------------------------------------------------
def _starts_with(path: "str | os.PathLike[str]", magic: bytes) -> bool:
    try:
        with open(path, "rb") as handle:
            return handle.read(len(magic)) == magic
    except OSError:
        return False


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

        head = key.group("head")
        slots = [k for k in scan_golden_dir(workspace.golden_dir, (f"{head}.",)) if k.rsplit(".", 1)[0] == head]
        if slots:
            return (f"{prefix}{text}: no golden tensor {text}.*.npy in {workspace.golden_dir}; it has "
                    + one_line(slots))
    if parse_dump_name(text) is None:
        for folder in workspace_dump_folders(workspace):
            if any(e.name.op_name == wanted for e in scan_dump_folder(folder)):
                return (f"{prefix}{text} is an op; name one of its tensors: {text}:output:0 (NPU dump) "
                        f"or {text}:0 (golden)")
    return f"{prefix}{text}: no such file (nor a dump file or .npy of that name in {dump_places(workspace)}, " \
           f"{workspace.golden_dir})"
