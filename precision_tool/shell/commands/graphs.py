"""Graph commands: `ni` (node info), the op listing behind `ls`, and the fusion, cast and
graph-similarity checks of `ac` (op names are resolved and completed by op_names.py).

Only argparse/typing at top level: the graph index, rich and numpy are imported when a command runs.
"""

from __future__ import annotations

import argparse
from typing import Any

from precision_tool.errors import CommandFailed, UsageError, WorkspaceError
from precision_tool.shell.command import AcSection, Command, CommandParser, CompletionRequest, Context
from precision_tool.shell.commands.op_names import (
    ambiguous_text, complete_graph_names, complete_op_names, index_of, load_index, no_graph_message, not_found_message,
)


def list_ops(args: argparse.Namespace, ctx: Context) -> Any:
    """`ls [-n NAME] [-t TYPE] [-f PASS] [-k KERNEL] [-g GRAPH]`: substring filters, combined with AND."""
    from precision_tool.render.graphs import op_rows
    from precision_tool.render.messages import note_line

    index = load_index(ctx, args.graph)
    entries = index.entries(args.graph)
    from precision_tool.formats.npu.npu_dump import sanitize_op_name

    # -n matches the graph name and its dump-file spelling (bn2_FusedBatchNormV3), as ni accepts both
    filters = [(args.name, lambda e: f"{e.name}\n{sanitize_op_name(e.name)}"), (args.type, lambda e: e.type),
               # -f: each pass of the op ('GraphPass + UbPass') on its own
               (args.fusion_pass, lambda e: (e.fusion_pass or "").replace(" + ", "\n")),
               (args.kernel, lambda e: e.kernel_name or "")]
    for needle, field in filters:
        if needle:
            lower = needle.lower()
            entries = [e for e in entries if lower in field(e).lower()]
    # at a terminal the rows are laid out for its width; in a pipe each row is one line, however long
    width = ctx.console.width if ctx.console.is_terminal else None
    out: list[Any] = [op_rows(entries, width, kernels=bool(args.kernel))]
    if not entries:
        hint = _no_match_hint(index, args, filters)
        if hint:
            out.append(note_line(hint))
    return out


def _no_match_hint(index: Any, args: argparse.Namespace, filters: list[tuple[str | None, Any]]) -> str | None:
    """Why `ls` listed nothing: the -g that matches no graph (naming those there are), else the
    first filter that alone matches no op."""
    if args.graph and not index.graph_names(args.graph):
        return no_graph_message(index, args.graph)
    entries = index.entries(args.graph)
    labels = {"name": "name", "type": "type", "fusion_pass": "fusion pass", "kernel": "kernel name"}
    for (needle, field), key in zip(filters, labels):
        if needle and not any(needle.lower() in field(e).lower() for e in entries):
            return f"no op has a {labels[key]} containing {needle!r}"
    return "no op matches all the filters together" if entries else None


def _ni_complete(request: CompletionRequest) -> list[str]:
    if request.option in ("-g", "--graph"):
        return complete_graph_names(request)
    if request.option in (None, "-n", "--name"):
        return complete_op_names(request)
    return []


def _ni_parser(parser: CommandParser) -> None:
    parser.add_argument("op_name", nargs="?", metavar="NAME",
                        help="op name as the graph, a dump file or a golden file spells it, a TF name fused "
                             "into an op, NAME:output:N, a dump file name or path, a golden key KEY.N, "
                             "or an op id (16 or [16])")
    parser.add_argument("-n", "--name", dest="name", metavar="NAME", help="op name, same as the positional NAME")
    parser.add_argument("-g", "--graph", help="only graphs whose name (or file name) contains this")
    parser.add_argument("-a", "--attrs", "--attr", action="store_true", help="also show every attribute of the op")
    parser.add_argument("-c", "--check", action="store_true",
                        help="check the op alone: replay it on CPU with its NPU inputs and give a verdict "
                             "(kernel, precision, inherited), as `replay NAME` does")
    parser.add_argument("--python", metavar="PY", help="with -c: the Python that runs TensorFlow (default: this one)")
    parser.add_argument("-s", "--save", type=_depth, metavar="DEPTH",
                        help="save the subgraph of this depth around the op as .gv/.svg under temp/op_graph/")
    parser.add_argument("-o", "--output", metavar="DIR",
                        help="with -s: the folder for the picture (default: temp/op_graph/ of the workspace)")


def _depth(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if value < 0 or value > 20:
        raise argparse.ArgumentTypeError("depth must be between 0 and 20")
    return value


def _ni(args: argparse.Namespace, ctx: Context) -> Any:
    from precision_tool.analysis.ops.op_lookup import resolve
    from precision_tool.analysis.ops.op_report import op_report
    from precision_tool.render.console import Paged
    from precision_tool.render.messages import note_line
    from rich.text import Text

    from precision_tool.render.ops.node_info import op_block

    name = args.name or args.op_name
    if args.python and not args.check:
        raise UsageError("ni: --python names the Python that replays the op; add -c")
    if args.check:
        from precision_tool.shell.commands.replay import replay_names

        if not name:
            raise UsageError("ni -c: give the op to replay: `ni -c NAME`")
        if args.save is not None or args.attrs:
            raise UsageError("ni -c replays the op; run `ni NAME -s DEPTH` / `ni NAME -a` on their own")
        return replay_names([name], argparse.Namespace(graph=args.graph, debug=None, python=args.python,
                                                       quiet=False), ctx, command="ni -c")
    if not name:
        raise UsageError("ni: give an op name: `ni NAME` or `ni -n NAME` (see `ni -h`)")
    if args.name and args.op_name and args.name != args.op_name:
        raise UsageError("ni: give the op name once, either as NAME or with -n")
    if args.output and args.save is None:
        raise UsageError("ni: -o DIR is the folder of the -s picture; add -s DEPTH")
    index = load_index(ctx, args.graph)
    if args.graph and not index.graph_names(args.graph):
        raise WorkspaceError(f"ni: {no_graph_message(index, args.graph)}")
    lookup = resolve(index, name, args.graph)
    if not lookup.names:
        raise WorkspaceError(f"ni: {not_found_message(lookup)}")
    if lookup.ambiguous:
        return ambiguous_text(lookup)
    entries = index.find(lookup.names[0], args.graph)
    if not entries:
        raise WorkspaceError(f"ni: {lookup.names[0]} is in no graph matching -g {args.graph!r}")
    out: list[Any] = [note_line(lookup.note)] if lookup.note else []
    width = ctx.console.width
    found = _ni_findings(ctx, lookup.names[0], entries)  # each result CSV read once, for every group below
    golden_hint = None if ctx.workspace.has_golden_tensors() else ctx.workspace.golden_hint()
    for group in _runs_of_one_op(entries):
        reports = [op_report(index, entry) for entry in group]
        if out and out[-1].plain:
            out.append(Text(""))
        out += op_block(reports, args.attrs, width, lookup.tensor,
                        extra=_ni_extra(found, group, width, golden_hint), first_ranks=found[0].first_ranks,
                        golden_hint=golden_hint)
    if args.save is None:
        return Paged(out)
    failure = None
    for entry in entries:
        line, failure = _save_picture(index, entry, args, ctx)
        out.append(line)
        if failure:
            break
    if failure:
        ctx.note(Paged(out[:-1]))
        raise CommandFailed(failure)
    return Paged(out)


def _ni_findings(ctx: Context, name: str, entries: list[Any]) -> tuple[Any, Any, tuple[str, ...]]:
    """(what the newest comparison says of the op, its newest replay verdict, unreadable replay files)."""
    from precision_tool.analysis.report.op_results import op_comparison, op_replay

    comparison = op_comparison(ctx.workspace, [name], ctx.settings.COSINE_THRESHOLD)
    verdict, problems = op_replay(ctx.workspace, name, sorted({e.debug_id for e in entries}), comparison.folder)
    return comparison, verdict, problems


def _ni_extra(found: tuple[Any, Any, tuple[str, ...]], group: list[Any], width: int,
              golden_hint: str | None) -> list[Any]:
    from precision_tool.render.ops.node_results import comparison_lines, replay_lines

    comparison, verdict, problems = found
    graph = group[0].graph if len({e.graph for e in group}) == 1 else None
    name = group[0].name
    if verdict is not None and verdict.debug_id is not None and verdict.debug_id not in {e.debug_id for e in group}:
        verdict = None  # another graph's run of the same name: its own group shows it
    return [*comparison_lines(comparison, name, width, graph, golden_hint), *replay_lines(verdict, problems, name)]


def _runs_of_one_op(entries: list[Any]) -> list[list[Any]]:
    """Entries shown together: the op in each run (debug_N) when every run has it once, else per graph."""
    runs: dict[int, list[Any]] = {}
    for entry in entries:
        runs.setdefault(entry.debug_id, []).append(entry)
    if all(len(found) == 1 for found in runs.values()):
        return [[found[0] for _, found in sorted(runs.items())]]
    groups: dict[tuple[str, str], list[Any]] = {}
    for entry in entries:
        groups.setdefault((entry.file.name, entry.graph), []).append(entry)
    return list(groups.values())


def _save_picture(index: Any, entry: Any, args: argparse.Namespace, ctx: Context) -> tuple[Any, str | None]:
    """Write the -s picture of one op; (line to show, None) or (line, the one-line failure)."""
    from pathlib import Path

    from rich.text import Text

    from precision_tool.analysis.ops.op_report import neighbourhood
    from precision_tool.render.messages import note_line, warning_line
    from precision_tool.render.ops.op_graph import save_subgraph
    from precision_tool.workspace import Workspace

    base = Path(args.output).expanduser() if args.output else ctx.workspace.op_graph_dir
    folder = base / f"debug_{entry.debug_id}"
    hint = "add -o DIR to save it in another folder"
    try:
        Workspace.ensure_dir(folder, "picture folder", hint=hint)
        ops = [index.op(e) for e in neighbourhood(index, entry, args.save)]
        saved = save_subgraph(ops[0], ops, folder, args.save)
    except WorkspaceError as exc:
        return Text(""), f"ni -s: {exc}"
    except OSError as exc:
        return Text(""), f"ni -s: cannot write the picture in {folder}: {exc.strerror or exc}; {hint}"
    if saved.svg_path is not None:
        return note_line(f"saved {saved.svg_path} (and {saved.gv_path.name})"), None
    return Text.assemble(note_line(f"saved {saved.gv_path}"), "\n", warning_line(saved.message or "no picture")), None


COMMANDS = [
    Command("ni", "node info: an op's type, pass, kernel, inputs/outputs, dumps and golden (-s saves a picture)",
            _ni_parser, _ni, completer=_ni_complete),
]


# --- checks for `ac` ------------------------------------------------------------------------------------
def _fusion_check(args: argparse.Namespace, ctx: Context) -> Any:
    from precision_tool.analysis.checks.fusion import fusion_summary
    from precision_tool.render.graphs import fusion_tables
    from precision_tool.render.messages import note_line

    summary = fusion_summary(ctx.workspace)
    if summary is None:
        import os

        work = os.environ.get("ASCEND_WORK_PATH")
        where = f"{ctx.workspace.fusion_file}, ./" + (f" and {work}/FE/*/" if work else "")
        return note_line(f"fusion: no fusion_result.json (looked in {where})")
    return fusion_tables(summary)


def _cast_check(args: argparse.Namespace, ctx: Context) -> Any:
    from precision_tool.analysis.checks.graph_checks import lossy_casts
    from precision_tool.render.graphs import cast_table
    from precision_tool.render.messages import note_line, warning_line

    index = index_of(ctx)
    loaded = index.load()
    # a graph that could not be read is not checked: say so, or "no lossy Cast" would be a false all-clear
    unread = [warning_line(f"cast: not checked (cannot read the graph): {failure}") for failure in index.failures]
    if not loaded:
        if index.failures:  # every Build graph is unreadable: the check failed, it did not find "nothing"
            raise CommandFailed("not checked: " + "; ".join(index.failures))
        return [*unread, note_line("cast: no Build graphs to check")]
    groups = lossy_casts(index)
    if not groups:
        return [*unread, note_line("cast: no Cast op can lose information" +
                                   (" in the graphs that could be read" if unread else ""))]
    return [*unread, cast_table(groups, args.limit)]


def _similarity_check(args: argparse.Namespace, ctx: Context) -> Any:
    from precision_tool.analysis.checks.graph_checks import graph_similarity
    from precision_tool.render.graphs import similarity_tables

    results = graph_similarity(ctx.workspace)
    if results is None:
        return None  # needs Build graphs in both debug_0 and debug_1
    return similarity_tables(results, args.limit)


AC_SECTIONS = [
    AcSection("fusion", _fusion_check, order=40),
    AcSection("cast", _cast_check, order=50),
    AcSection("graph similarity", _similarity_check, order=60),
]
