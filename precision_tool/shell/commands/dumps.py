"""NPU dump commands: `dc` (decode to .npy), `pt` (print a tensor), `ls dump`, and the overflow check of `ac`."""

from __future__ import annotations

import argparse
import bisect
import itertools
import os
import re
from pathlib import Path
from typing import Any

from precision_tool.errors import CommandFailed, FormatError, UsageError
from precision_tool.shell.command import AcSection, Command, CommandParser, CompletionRequest, Context
from precision_tool.workspace import Workspace

TARGET_FORMATS = ("NCHW", "NHWC", "HWCN", "CHWN", "ND", "NCDHW", "NDHWC", "DHWCN")


# --- finding what the user named -------------------------------------------------------------------
def resolve_dump_file(text: str, workspace: "Workspace") -> Path:
    """A dump (or .npy) file given as a path, or as a file name found in the workspace (see
    analysis/ops/tensor_ref.py for every spelling; `resolve_tensor` there also reads op names and TF names)."""
    from precision_tool.analysis.ops.tensor_ref import resolve_file

    return resolve_file(text, workspace).path


def _dc_inputs(target: str, workspace: "Workspace", max_files: int) -> tuple[list[Path], list[Path], list[str]]:
    """(dump files to decode, files ignored as non-dumps, notes) for a FILE, a DIR (of at most `max_files`
    dumps), an op NAME, or a tensor spelling (DUMPFILE:output:N, OP:output:N), whose whole file is decoded."""
    from precision_tool.analysis.dumps.dump_files import folder_dumps, workspace_dump_folders
    from precision_tool.analysis.ops.tensor_files import resolve_op_dumps
    from precision_tool.analysis.ops.tensor_ref import find_file, resolve_tensor, split_dump_tensor

    path = Path(target).expanduser()
    if path.is_dir():
        return (*folder_dumps(path, max_files, f"dc {_quoted(target)}"), [])
    if path.is_file():
        return [path], [], []
    if split_dump_tensor(target) is not None:
        ref = resolve_tensor(target, workspace, command="dc")
        notes = list(ref.notes) + [f"dc decodes whole dump files: {target} is in {ref.path.name}"]
        return [ref.path], [], notes
    if target.endswith(".npy") and "/" not in target:
        raise UsageError(f"dc: {target} is a .npy name; dc decodes NPU dumps (`pt {target}` prints a .npy)")
    if "/" not in target:
        ref = find_file(target, workspace, command="dc")  # a dump file's name (numbered ones by mapping.csv)
        if ref is not None:
            return [ref.path], [], list(ref.notes)
    found, notes = resolve_op_dumps(target, workspace, prefix="dc: ")
    if not found:
        _refuse_golden(target, workspace)
        folders = ", ".join(str(f) for f in workspace_dump_folders(workspace)) or f"{workspace.root} (it has no dumps)"
        raise UsageError(f"dc: {target} is not a file, a folder, or an op with dumps (`ls dump` lists the dump "
                         f"files and their ops); looked in {folders}")
    return found, [], list(notes)


def _refuse_golden(target: str, workspace: "Workspace") -> None:
    """dc on a golden tensor's spelling (OP:N, a key as `ni` prints it): dc decodes NPU dumps, pt prints it."""
    from precision_tool.analysis.ops.tensor_ref import resolve_tensor

    try:
        ref = resolve_tensor(target, workspace)
    except UsageError:
        return
    if ref.is_npy:
        raise UsageError(f"dc: {target} is the golden tensor {ref.path.name}, already a .npy; dc decodes NPU "
                         f"dumps (`pt {target}` prints it)")


# DUMPFILE.{input|output}.N.npy: the original tool's name for a decoded dump tensor
_DECODED_NAME = re.compile(r"^(?P<dump>[^/]+)\.(?P<kind>input|output)\.(?P<index>\d+)\.npy$")


def resolve_any_tensor(text: str, workspace: "Workspace", command: str) -> Any:
    """What `pt` and `cp` read: every spelling of analysis/ops/tensor_ref.py, plus a decoded file's name as the
    original tool printed it (DUMPFILE.output.0.npy, the CANN guide's examples) when no such .npy exists
    yet: then that tensor of the dump file is read, with a note saying so."""
    from dataclasses import replace

    from precision_tool.analysis.ops.tensor_ref import resolve_tensor
    from precision_tool.formats.npu.npu_dump import parse_dump_name

    try:
        return resolve_tensor(text, workspace, command=command)
    except UsageError:
        match = _DECODED_NAME.match(text.strip())
        if match is None or parse_dump_name(match.group("dump")) is None:
            raise
    spelled = f"{match.group('dump')}:{match.group('kind')}:{match.group('index')}"
    ref = resolve_tensor(spelled, workspace, command=command)
    return replace(ref, notes=ref.notes + (f"{text} is not decoded yet: reading {spelled} from the dump file",))


# --- dc ---------------------------------------------------------------------------------------------
def _target_format(text: str) -> str:
    value = text.upper()
    if value not in TARGET_FORMATS:
        raise argparse.ArgumentTypeError(f"{text!r} is not one of {', '.join(TARGET_FORMATS)}")
    return value


def _dc_parser(parser: CommandParser) -> None:
    parser.add_argument("target", nargs="?",
                        help="a dump file, a folder of dumps, or an op name found in the workspace's dumps")
    parser.add_argument("-n", "--name", default=None, metavar="TARGET",
                        help="the same, as an option (the original tool's `dc -n NAME`)")
    parser.add_argument("-f", "--format", type=_target_format, default=None,
                        help=f"convert to this layout ({', '.join(TARGET_FORMATS)}); names get .d0xd1...npy")
    parser.add_argument("-o", "--output", default=None,
                        help="output folder (default: the workspace's temp/decode/dump_convert)")
    parser.add_argument("--max-files", type=int, default=200_000, metavar="N",  # a million dumps: many minutes
                        help="decode at most N dumps of a folder (default 200,000); more are refused")


def _dc(args: argparse.Namespace, ctx: Context) -> Any:
    from precision_tool.analysis.dumps.decode import decode_dumps, write_failure_list
    from precision_tool.analysis.dumps.origin_layout import dump_runs, graph_origin_formats
    from precision_tool.render.dumps import decode_report

    if bool(args.name) == bool(args.target):
        raise UsageError("dc: give one dump file, folder or op name: `dc NAME` or `dc -n NAME` (see `dc -h`)")
    args.target = args.name or args.target
    files, ignored, notes = _dc_inputs(args.target, ctx.workspace, args.max_files)
    out_dir = Path(args.output).expanduser() if args.output else ctx.workspace.decode_dir("dump_convert")
    if not files:
        raise UsageError(_no_dumps_in(args.target, ignored))
    what = "output folder (-o DIR)" if args.output else "output folder"
    Workspace.ensure_dir(out_dir, what, hint=f"choose another with `dc {_quoted(args.target)} -o DIR`")
    # With a target layout, the run's Build graph names each tensor's origin layout (HWCN weights ...).
    origins = graph_origin_formats(ctx.workspace, files) if args.format else {}
    with ctx.progress() as progress:
        task = progress.add_task("decoding", total=len(files))
        report = decode_dumps(files, out_dir, target_format=args.format, workers=ctx.settings.workers,
                              on_file_done=lambda n: progress.advance(task, n), ignored=ignored,
                              origin_formats=origins)
    runs = {path: f"debug_{n}" for path, n in dump_runs(ctx.workspace, files).items()}
    failure_list: tuple[Path | None, list[str]] | None = None
    if report.failed:
        # Every failure is kept: the whole list goes to a file (the screen names the first 50).
        import tempfile

        failure_list = write_failure_list(report.failed, [out_dir, ctx.workspace.temp_dir,
                                                          Path(tempfile.gettempdir())])
    shown = [note_text(n) for n in notes] + decode_report(report, graph_layout_files=len(origins), runs=runs,
                                                          failure_list=failure_list)
    if not report.ok:
        for item in shown:
            ctx.note(item)
        raise CommandFailed(f"dc: {len(report.failed)} file(s) or tensor(s) could not be decoded (listed above)")
    return shown


def _no_dumps_in(target: str, ignored: list[Path]) -> str:
    """dc on a folder without dumps: what it holds, and the command for it."""
    text = f"dc: {target} holds no dump files"
    if not ignored:
        return text + "; `ls dump` lists the workspace's dump files"
    text += f" (ignored {len(ignored)} file(s) with non-dump suffixes)"
    npy = [p for p in ignored if p.suffix == ".npy"]
    if npy:
        return text + f"; dc decodes NPU dumps, and a .npy is printed by pt: pt {_quoted(str(npy[0]))}"
    return text + "; `ls dump` lists the workspace's dump files"


def _quoted(text: str) -> str:
    import shlex

    return shlex.quote(text)


def note_text(text: str) -> Any:
    from precision_tool.render.messages import note_line

    return note_line(text)


# --- pt ---------------------------------------------------------------------------------------------
def _pt_parser(parser: CommandParser) -> None:
    parser.add_argument("file", nargs="?",
                        help="a .npy file, a dump tensor (DUMPFILE:output:0, DUMPFILE:input:1), an op's tensor "
                             "(conv1/Conv2D:output:0), or a golden tensor by its TF name (conv1/Relu:0)")
    parser.add_argument("-n", "--name", default=None, help="the same, as an option (as in the original tool)")
    parser.add_argument("-c", "--save-text", dest="save_text", action="store_true",
                        help="also write the values to a .txt file (beside a .npy; for a dump tensor in the "
                             "workspace's temp/decode/dump_decode)")
    parser.add_argument("-o", "--output", default=None, metavar="DIR",
                        help="with -c: write the .txt into DIR instead")


def _pt(args: argparse.Namespace, ctx: Context) -> Any:
    from precision_tool.analysis.ops.tensor_ref import one_tensor_of
    from precision_tool.analysis.dumps.tensor_memory import require_text_room
    from precision_tool.analysis.dumps.tensor_stats import non_numeric_reason, tensor_stats
    from precision_tool.render.dumps import tensor_print

    text = args.name or args.file
    if not text or (args.name and args.file):
        raise UsageError("pt: give one .npy file or DUMPFILE:output:N (see `pt -h`)")
    if args.output and not args.save_text:
        raise UsageError("pt: -o DIR says where -c writes the values; add -c")
    if Path(text).expanduser().is_dir():
        raise UsageError(_pt_folder(text))
    ref = one_tensor_of(resolve_any_tensor(text, ctx.workspace, "pt"), text, verb="showing", command="pt")
    notes = list(ref.notes)
    story = None
    if ref.kind is not None:
        array, story, title, text_path, source, warnings = _dump_tensor(ref, ctx.workspace)
        notes.extend(warnings)
    else:
        path = ref.path
        array = load_npy(path)
        reason = non_numeric_reason(array.dtype)
        if reason is not None:
            raise FormatError(path, f"{reason}; pt shows numeric tensors")
        title = _real_npy_name(path)
        if title != path.name:
            notes.append(f"{path.name} stands for {title} (mapping.csv)")
        text_path = path.with_suffix(".txt")
        source = ("golden tensor" if ref.golden else "file", path, "")
    saved = None
    if args.save_text:
        folder = Path(args.output).expanduser() if args.output else text_path.parent
        what = "folder for the -c values (-o DIR)" if args.output else "folder for the -c values"
        Workspace.ensure_dir(folder, what, hint=f"write them elsewhere with `pt {_quoted(text)} -c -o DIR`")
        require_text_room(ref.path, int(array.size), f"`pt {_quoted(text)}` without -c shows its statistics")
        saved = _save_text(array, folder / text_path.name)
    return tensor_print(title, tensor_stats(array), array, notes=notes, saved_text=saved, source=source,
                        layout=story)


def _dump_tensor(ref: Any, workspace: "Workspace") -> tuple[Any, Any, str, Path, tuple[str, Path, str], list[str]]:
    """A dump tensor in the layout `ni` shows it in: (array, layout story, title, .txt path, source, notes)."""
    from precision_tool.analysis.dumps.origin_layout import graph_origin_formats, shown_tensor
    from precision_tool.formats.npu.npu_dump import read_dump_header

    dump = read_dump_header(ref.path)
    tensor = dump.tensor(ref.kind, ref.index)
    origins = graph_origin_formats(workspace, [ref.path]).get(ref.path, {})
    array, story = shown_tensor(dump, tensor, origins.get((tensor.kind, tensor.index)))
    real = dump.real_name
    source = (f"{tensor.label} of", ref.path, f"(mapping.csv: {real})" if real != ref.path.name else "")
    title = f"{dump.op_name or real} {tensor.label}"
    text_path = workspace.decode_dir("dump_decode") / f"{real}.{tensor.kind}.{tensor.index}.txt"
    return array, story, title, text_path, source, list(dump.warnings)


def _pt_folder(text: str) -> str:
    """pt on a folder: what to do instead (dc for a folder of dumps, one file for a folder of .npy)."""
    from precision_tool.analysis.dumps.dump_files import is_candidate_dump
    from precision_tool.workspace import walk_files

    files = list(walk_files(Path(text).expanduser()))
    if any(is_candidate_dump(p) for p in files):
        return (f"pt: {text} is a folder; pt prints one tensor (a .npy file or DUMPFILE:output:N). "
                f"To decode the dumps in a folder: dc {_quoted(text)}")
    if any(p.suffix == ".npy" for p in files):
        return f"pt: {text} is a folder; pt prints one tensor: name one .npy file in it"
    return f"pt: {text} is a folder that holds no dump nor .npy file; pt prints one tensor (a .npy file or " \
           "DUMPFILE:output:N)"


def _real_npy_name(path: Path) -> str:
    """A decoded file's real name: hashed stand-ins for over-long names are listed in the folder's mapping.csv."""
    from precision_tool.formats.npu.npu_dump import folder_mapping

    return folder_mapping(str(path.parent.absolute())).get(path.name, path.name)


def load_npy(path: Path) -> Any:
    """A .npy without pickle, its header checked against the file before anything is allocated
    (formats/tf/golden.py); anything else is one FormatError line naming the file."""
    from precision_tool.formats.tf.golden import load_npy as checked_load

    return checked_load(path)


def _save_text(array: Any, path: Path) -> Path:
    import io

    import numpy as np

    from precision_tool.analysis.dumps.decode import record_mapping, saveable, short_file_name
    from precision_tool.atomic import write_atomic

    short = short_file_name(path.name, ".txt")
    if short is not None:  # too long for the file system: a hashed name, listed in mapping.csv
        record_mapping(path.parent, [(short, path.name)])
        path = path.with_name(short)

    values = saveable(np.asarray(array))
    if values.dtype == np.bool_:
        values = values.astype(np.uint8)
    table = values.reshape(-1, values.shape[-1]) if values.ndim >= 2 else values.reshape(-1, 1)
    buffer = io.StringIO()
    fmt = "%.8g" if values.dtype.kind in "f" else ("%d" if values.dtype.kind in "iub" else "%s")
    np.savetxt(buffer, table, fmt=fmt, header=f"shape {list(values.shape)} dtype {values.dtype}")
    try:
        write_atomic(path, [buffer.getvalue().encode()])
    except OSError as exc:  # a full disk, a file system that went read-only since ensure_dir
        from precision_tool.errors import WorkspaceError

        raise WorkspaceError(f"cannot write {path}: {exc.strerror or exc}; write the values elsewhere with "
                             "-c -o DIR") from None
    return path


# --- ls dump ----------------------------------------------------------------------------------------
def list_dumps(args: argparse.Namespace, ctx: Context) -> Any:
    """`ls dump [-n NAME] [-t TYPE]`: the workspace's NPU dump files, read header-only."""
    from precision_tool.analysis.dumps.dump_files import list_dump_files, workspace_dump_runs
    from precision_tool.render.dumps import dump_listing
    from precision_tool.render.messages import note_line

    runs = workspace_dump_runs(ctx.workspace)
    if not runs:
        return note_line(f"no NPU dumps in {ctx.workspace.dump_root(0)}; train on the NPU with "
                         "session_dump_config(config, action='dump') from tf_config")
    rank = getattr(args, "rank", None)
    rows = list_dump_files(runs, name=getattr(args, "name", None), op_type=getattr(args, "type", None), rank=rank)
    if rank is not None and not rows:
        from precision_tool.workspace import rank_dirs

        held = sorted({r.rank for _, folder in runs for r in rank_dirs(folder)})
        if not held:
            raise UsageError(f"ls dump -r {rank}: the dumps are of a single device (no <device_id> folders per rank)")
        if rank not in held:
            raise UsageError(f"ls dump -r {rank}: no rank {rank}; the dumps hold ranks "
                             f"{', '.join(map(str, held))}")
    # In a terminal, rows too wide for it put the name on a line of its own; in a pipe each row is one line.
    console = ctx.console
    listing = dump_listing(rows, runs, width=console.width if console.is_terminal else None)
    unreadable = sum(1 for r in rows if r.problem)
    if unreadable:
        from precision_tool.render.console import Paged

        ctx.note(Paged(listing))  # paged as the listing `ls dump` returns; the error line stays below it
        raise CommandFailed(f"ls dump: {unreadable} dump file(s) could not be read (listed above with the reason)")
    return listing


# --- completion --------------------------------------------------------------------------------------
# Per workspace, rebuilt only when a folder's mtime changes: a keystroke costs a few stats and a bisect,
# never a walk of 20,000 dump files.
_NAME_CACHE: dict[tuple[str, ...], tuple[tuple[float, ...], tuple[list[str], list[tuple[str, str]]]]] = {}
_GOLDEN_CACHE: dict[str, tuple[float, list[str]]] = {}
_LIMIT = 200  # as many as the shell shows


def _dump_names(workspace: "Workspace") -> tuple[list[str], list[tuple[str, str]]]:
    """(the dump file names, sorted; (op part, name) pairs, sorted) of the workspace's dump folders."""
    from precision_tool.analysis.dumps.dump_files import scan_dump_folder
    from precision_tool.analysis.ops.tensor_files import dump_search_folders

    folders = [folder for _, folder in dump_search_folders(workspace)]
    key = tuple(str(f) for f in folders)
    stamp = tuple(f.stat().st_mtime for f in folders if f.exists())
    cached = _NAME_CACHE.get(key)
    if cached and cached[0] == stamp:
        return cached[1]
    entries = [e for f in folders for e in scan_dump_folder(f)]
    found = (sorted({e.real_name for e in entries}), sorted({(e.name.op_name, e.real_name) for e in entries}))
    _NAME_CACHE[key] = (stamp, found)
    return found


def _golden_names(workspace: "Workspace") -> list[str]:
    """The .npy file names in tf/dump, sorted (cached until the folder changes)."""
    folder = workspace.golden_dir
    try:  # an unreadable tf/dump offers no golden names, and the dump names still
        stamp = folder.stat().st_mtime
        cached = _GOLDEN_CACHE.get(str(folder))
        if not (cached and cached[0] == stamp):
            cached = (stamp, sorted(n for n in os.listdir(folder) if n.endswith(".npy") and not n.startswith(".")))
            _GOLDEN_CACHE[str(folder)] = cached
    except OSError:
        return []
    return cached[1]


def _starting(items: list[Any], prefix: str, pairs: bool = False) -> list[Any]:
    """The items of a sorted list (of pairs: by their first) starting with `prefix`: a bisect, a short scan."""
    at = bisect.bisect_left(items, (prefix,) if pairs else prefix)
    return list(itertools.takewhile(lambda item: (item[0] if pairs else item).startswith(prefix),
                                    items[at:at + _LIMIT]))


def _op_names(current: str, workspace: "Workspace", by_op: list[tuple[str, str]]) -> list[str]:
    """Op names starting with `current`: the graph's (both spellings, once the index is loaded; it is
    warmed up, never waited for) and the op parts of the dump file names."""
    from precision_tool.analysis.graphs.graph_index import index_for

    index = index_for(workspace)
    names: list[str] = []
    if index.ready_for_completion():
        index.load()
        names = index.complete(current)
    else:
        index.warm_up()
    return sorted({*names, *(op for op, _ in _starting(by_op, current, pairs=True))})


def complete_dump_files(request: CompletionRequest) -> list[str]:
    """Dump file names from the workspace, `FILE:output:N` after a colon, and paths; what is typed may
    also be the start of a dump name's op part (`bn2_Fu` offers `BatchNorm.bn2_FusedBatchNormV3.10.0.…`),
    of a golden .npy name (pt, cp) or of an op name (`bn2/Fu`)."""
    from precision_tool.shell.completion import Offer, complete_paths

    current = request.current
    if request.option in ("-o", "--output"):
        return complete_paths(current)
    if request.option in ("-f", "--format"):
        return [f for f in TARGET_FORMATS if f.startswith(current.upper())]
    golden = not request.words or request.words[0] != "dc"  # dc decodes dump files: golden is for pt and cp
    if ":" in current:
        return _complete_tensor_ref(current, request.workspace, golden=golden)
    if current.startswith((".", "~", "/")):
        return complete_paths(current)
    names, by_op = _dump_names(request.workspace)
    if not current:
        return names[:_LIMIT] + complete_paths(current)
    found = _starting(names, current)
    found += [Offer(name) for _, name in _starting(by_op, current, pairs=True)]  # replaces the typed word
    if golden:
        found += _starting(_golden_names(request.workspace), current)
    found += _op_names(current, request.workspace, by_op) + complete_paths(current)
    return list(dict.fromkeys(found))


def _complete_tensor_ref(current: str, workspace: "Workspace", *, golden: bool = True) -> list[str]:
    """After `FILE:` the tensors of that dump; after `OP:` the tensors of the op's dump and (`golden`) its
    golden tensors (`OP:N`, when tf/dump holds them)."""
    from precision_tool.formats.npu.npu_dump import parse_dump_name, read_dump_header

    from precision_tool.analysis.ops.tensor_files import resolve_op_dump

    file_part = current.split(":", 1)[0]
    try:
        dump = read_dump_header(resolve_dump_file(file_part, workspace))
        is_file = True
    except (UsageError, FormatError):
        is_file = False
        try:  # an op name: the tensors of its dump (the one `pt NAME:output:N` would read)
            dump = read_dump_header(resolve_op_dump(file_part, workspace).path)
        except (UsageError, FormatError):
            dump = None
    found = [f"{file_part}:{t.label}" for t in dump.tensors] if dump is not None else []
    if golden and not is_file and parse_dump_name(file_part) is None:
        found += _golden_tensors(file_part, workspace)
    return [name for name in found if name.startswith(current)]


def _golden_tensors(op_name: str, workspace: "Workspace") -> list[str]:
    """`OP:N` for each golden tensor of the op in tf/dump (the spelling `pt` and `cp` take)."""
    from precision_tool.formats.tf.golden import safe_node_name, scan_golden_dir

    stem = safe_node_name(op_name)
    slots = sorted(int(key.rsplit(".", 1)[1]) for key in scan_golden_dir(workspace.golden_dir, (f"{stem}.",))
                   if key.rsplit(".", 1)[0] == stem)
    return [f"{op_name}:{slot}" for slot in slots]


# --- ac ----------------------------------------------------------------------------------------------
def overflow_check(args: argparse.Namespace, ctx: Context) -> Any:
    """The overflow check of `ac` (and of `npu_overflow` after its training run)."""
    from precision_tool.analysis.checks.overflow import find_overflows
    from precision_tool.render.dumps import overflow_report

    folder = ctx.workspace.newest_overflow_dir()
    report = find_overflows(folder, limit=getattr(args, "limit", 3) or 3)
    shown = overflow_report(report)
    unreadable = report.unreadable
    if unreadable:  # the check could not tell whether these ops overflowed: it failed, it did not pass
        ctx.note(shown)
        raise CommandFailed(f"{len(unreadable)} of {len(report.findings)} overflow record file(s) could not be "
                            f"read (named above): {unreadable[0].debug_file}")
    return shown


COMMANDS = [
    Command("dc", "decode NPU dump files (a file, a folder or an op name) to .npy, optionally to a layout",
            _dc_parser, _dc, completer=complete_dump_files,
            description="Decode NPU dumps to {dumpfile}.{input|output}.{idx}.npy (with -f FORMAT: "
                        "...{idx}.{d0}x{d1}...npy), by default into temp/decode/dump_convert/. Files that "
                        "cannot be decoded are listed, all of them in decode_failures.tsv.\n"
                        "examples:\n  dc Conv2D.conv1_Conv2D.12.1.1700000000000000\n  dc conv1/Conv2D -f NCHW\n"
                        "  dc conv1/Conv2D:output:0\n  dc precision_data/npu/debug_0/dump -o /tmp/decoded"),
    Command("pt", "print a tensor's shape, dtype, max/min/mean, NaN/Inf counts and first values",
            _pt_parser, _pt, completer=complete_dump_files,
            description="Print a .npy file or one tensor of a dump file; a dump tensor of the workspace is "
                        "shown in its origin layout from the run's Build graph (as `ni` shows it).\n"
                        "examples:\n  pt x.npy\n  pt Conv2D.conv1_Conv2D.12.1.1700000000000000:output:0\n"
                        "  pt conv1/Conv2D:output:0      (an op's dump, newest in debug_0)\n"
                        "  pt conv1/Relu:0               (the golden tensor of a TF name)\n"
                        "  pt -n conv1/Conv2D:output:0 -c -o /tmp/values"),
]

AC_SECTIONS = [AcSection("overflow", overflow_check, order=30)]
