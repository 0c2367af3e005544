"""`demo --fixed [DIR]`: the demo's NPU step again, with fix/ops_info.json's block list kept in float32 and
the vendor's fixed kernel, into npu/debug_2; then `vc` of it against the golden run already in tf/.

Everything that can be wrong before TensorFlow starts (no demo there, no or a bad ops_info.json) is one
line naming the file, what is wrong and what to do.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from precision_tool.shell.command import Context

WRITES_IT = "it writes fix/ops_info.json when a replay finds a float16 precision problem"
HOW_TO_GET_IT = f"run `ac -c` first: {WRITES_IT}"


def _demo_root(args: argparse.Namespace, ctx: Context) -> tuple[str, Path]:
    """DIR; else the shell's workspace when it holds a demo; else ./precision_data_demo."""
    from precision_tool.demo.build import DEFAULT_DIR

    if args.dir:
        return args.dir, Path(args.dir).expanduser().resolve()
    if _holds_demo(ctx.workspace.root):
        return str(ctx.workspace.root), ctx.workspace.root.resolve()
    return DEFAULT_DIR, Path(DEFAULT_DIR).resolve()


def _demo_missing(root: Path) -> list[str]:
    """What a demo workspace needs and `root` lacks: golden tensors, debug_0's Build graph."""
    from precision_tool.analysis.compare.network_compare import has_golden_files
    from precision_tool.workspace import Workspace

    ws = Workspace(root)
    missing = []
    if not has_golden_files(ws.golden_dir):
        missing.append(f"no golden tensors in {ws.golden_dir}")
    if not ws.build_graph_files(0):
        missing.append(f"no Build graph in {ws.graph_dir(0)}")
    return missing


def _holds_demo(root: Path) -> bool:
    return not _demo_missing(root)


def check_demo(root: Path, dir_text: str) -> None:
    """One line when `root` is not a demo workspace: the golden tensors and npu/debug_0 must be there."""
    from precision_tool.errors import WorkspaceError

    missing = _demo_missing(root)
    from precision_tool.analysis.golden_extract import rank_dump_dirs
    from precision_tool.workspace import Workspace

    if missing and rank_dump_dirs(Workspace(root).golden_dir):
        raise WorkspaceError(f"demo --fixed: {root} holds the rank demo (`demo --ranks N`, golden per rank in "
                             f"tf/dump/rank_<r>); --fixed re-runs the single demo's NPU step: build one with "
                             f"`demo DIR` in another folder")
    if missing:
        raise WorkspaceError(f"demo --fixed: {root} holds no demo workspace ({'; '.join(missing)}); "
                             f"build one with `demo {dir_text}` first")


def kept_types(path: Path) -> frozenset[str]:
    """The op types fix/ops_info.json keeps in float32; one WorkspaceError line when there are none."""
    from precision_tool.errors import FormatError, WorkspaceError
    from precision_tool.formats.npu.mixlist import read_mixlist

    if not path.is_file():
        what = "is a folder, not a file" if path.is_dir() else "does not exist"
        raise WorkspaceError(f"demo --fixed: {path} {what}; {HOW_TO_GET_IT}")
    try:
        keep = read_mixlist(path).kept_in_float32
    except FormatError as exc:
        raise WorkspaceError(f"demo --fixed: {exc}; fix it, or remove it and run `ac -c`: {WRITES_IT}") from None
    except (OSError, UnicodeDecodeError) as exc:
        reason = getattr(exc, "strerror", None) or str(exc)
        raise WorkspaceError(f"demo --fixed: cannot read {path}: {reason}; {HOW_TO_GET_IT}") from None
    if not keep:
        raise WorkspaceError(f'demo --fixed: {path} keeps no op type in float32 (its "black-list" "to-add" is '
                             f"empty); {HOW_TO_GET_IT}")
    return keep


def run_fixed(args: argparse.Namespace, ctx: Context) -> Any:
    import dataclasses
    import shlex
    import time

    from rich.rule import Rule
    from rich.text import Text

    from precision_tool.demo.build import WRITE_HINT, run_network
    from precision_tool.demo.npu_side import FIXED_DEBUG_ID, PLANTED_FAULT_OP
    from precision_tool.errors import CommandFailed, UsageError
    from precision_tool.render.compare.compare import op_ref
    from precision_tool.render.messages import note_line
    from precision_tool.shell.commands.compare.result_summaries import summaries
    from precision_tool.shell.dispatch import execute
    from precision_tool.workspace import Workspace

    if args.force:
        raise UsageError("demo --fixed replaces only npu/debug_2 and never rebuilds the demo; leave --force out")
    started = time.perf_counter()
    dir_text, root = _demo_root(args, ctx)
    check_demo(root, dir_text)
    ws = Workspace(root)
    ops_info = ws.ops_info_file
    keep = kept_types(ops_info)
    Workspace.ensure_dir(ws.npu_dir, "NPU run folder", hint=WRITE_HINT)
    kept = ", ".join(sorted(keep))
    ctx.note(note_line(f"re-running the demo's NPU step in {root} with {kept} kept in float32 ({ops_info}) "
                       f"and the fixed {PLANTED_FAULT_OP} kernel"))
    build = run_network(root, fixed_ops_info=ops_info)
    for line in build.log.splitlines():
        ctx.note(note_line(line))
    dump_dir = ws.newest_dump_dir(FIXED_DEBUG_ID)
    if dump_dir is None:
        raise CommandFailed(f"demo --fixed: the NPU step wrote no dump into {ws.dump_root(FIXED_DEBUG_ID)}")
    if args.no_check:
        return [Rule("[bold]demo --fixed[/bold]", align="left"),
                Text(f"npu/debug_{FIXED_DEBUG_ID} written in {time.perf_counter() - started:.0f} s: {dump_dir}")]
    demo_ctx = Context(settings=dataclasses.replace(ctx.settings, ROOT_DIR=str(root)), workspace=ws,
                       console=ctx.console, table=ctx.table)
    line = f"vc -lt {shlex.quote(str(dump_dir))} -rt {shlex.quote(str(ws.golden_dir))}"
    ctx.note(Rule("[bold]vc[/bold]", align="left"))
    ctx.note(note_line(line))  # the command whole (a rule's title is cut to the width)
    if not execute(line, demo_ctx, passthrough=False).ok:
        raise CommandFailed(f"demo --fixed: `{line}` failed on {root}")
    threshold = ctx.settings.COSINE_THRESHOLD
    found = summaries(demo_ctx, None, threshold)
    if not found:
        raise CommandFailed(f"demo --fixed: `{line}` wrote no result in {ws.vector_compare_dir}")
    shown = found[0]
    abnormal = len(shown.summary.abnormal_ops)
    text = Text()
    text.append(f"debug_{FIXED_DEBUG_ID} vs golden: {abnormal} op(s) abnormal", style="bold")
    text.append(f" with {kept} kept in float32 and the fixed {PLANTED_FAULT_OP} kernel")
    if abnormal:
        text.append(f"; the first is {op_ref(shown.summary.abnormal_ops[0])}: the block list did not fix "
                    "everything (`vcs` shows them)")
    else:
        text.append(": both problems are gone")
    text.append(f"\nDone in {time.perf_counter() - started:.0f} s.")
    return [Rule("[bold]demo --fixed[/bold]", align="left"), text]
