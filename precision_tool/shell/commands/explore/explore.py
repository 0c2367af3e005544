"""`explore`: the newest comparison's NPU Build graph in Model Explorer, coloured by the comparison, with the
golden TF graph beside it and navigation synchronised through the original TF op names.

Model Explorer (`ai-edge-model-explorer`) is an optional extra; without it `explore --no-serve` still
writes the files. The data is collected by analysis/explore/, served by explore_server.py.
"""

from __future__ import annotations

import argparse
from typing import Any

from precision_tool.shell.arg_types import port_number
from precision_tool.shell.command import Command, CommandParser, CompletionRequest, Context

_DESCRIPTION = """\
Open the newest comparison's graphs in Model Explorer, served from this machine (nothing is fetched from
the internet): on the left every op of the NPU Build graph, in collapsible layers named after the TF name
scopes of its original ops (`_datadump_original_op_names`), coloured by its outputs' lowest cosine with
the `vcs` threshold (red: at or below COSINE_THRESHOLD; purple: NaN/Inf in the data), with the max absolute
error and the replay verdicts of `ac -c` (kernel / precision / inherited) as other node data; the first
divergent op is selected. On the right the golden TensorFlow graph (the golden run's GraphDef when the
workspace holds one, else the TF ops the Build graph names); selecting an op on one side shows the ops it
maps to on the other (Sync). Clicking an op shows what `ni` shows: type, graph id, fusion pass, TF ops,
source line, cosine, verdict, and each output's ten metrics and both sides' mean and standard deviation.

The files are written to temp/explore/<time>/ (npu_graph.json, tf_graph.json, the node data and
mapping.json), so a colleague can open them in their own Model Explorer. Ctrl-C stops the server.

Needs `pip install ai-edge-model-explorer` (or precision-tool[explore]); --no-serve does not.

examples:
  explore
  explore --no-open --port 8090
  explore -f temp/vector_compare/20261202050610 --no-serve
"""


def _parser(parser: CommandParser) -> None:
    parser.add_argument("-f", "--file", metavar="CSV|DIR", default=None,
                        help="a result CSV or result folder (default: the newest under temp/vector_compare/)")
    parser.add_argument("--port", type=port_number, default=0, metavar="N",
                        help="serve on port N (default: a free port)")
    parser.add_argument("--host", default="127.0.0.1", metavar="HOST",
                        help="serve on this address (default 127.0.0.1, this machine only; reach it from another "
                             "machine with `ssh -L`)")
    parser.add_argument("--no-open", action="store_true",
                        help="do not open a browser: serve and print the address (for a remote machine)")
    parser.add_argument("--no-serve", action="store_true",
                        help="write the files and stop (open them in your own Model Explorer)")


def _explore(args: argparse.Namespace, ctx: Context) -> Any:
    import time

    from precision_tool.analysis.explore.explore_data import collect_explore, write_explore
    from precision_tool.errors import WorkspaceError
    from precision_tool.render.messages import note_line, warning_line
    from precision_tool.shell.commands.compare.result_summaries import chosen_results
    from precision_tool.shell.commands.explore.explore_server import missing_package
    from precision_tool.workspace import new_result_dir

    missing = None if args.no_serve else missing_package()
    if missing:
        raise WorkspaceError(missing)  # before any work: one line saying how to install it
    files = chosen_results(ctx, args.file)
    started = time.perf_counter()
    data = collect_explore(ctx.workspace, ctx.settings, files)
    folder = new_result_dir(ctx.workspace.temp_dir / "explore", what="explore folder")
    write_explore(data, folder)
    shown: list[Any] = [warning_line(f"explore: {note}") for note in data.notes]
    first = f"; first divergent op {data.first_divergent}" if data.first_divergent else ""
    shown.append(note_line(f"explore: {data.op_count} NPU ops, {len(data.tf_graph['nodes'])} TF ops{first} "
                           f"(built in {time.perf_counter() - started:.1f} s)"))
    shown.append(note_line(f"  files: {folder}"))
    shown.append(note_line(f"  TF graph: {data.tf_source}"))
    if args.no_serve:
        return shown
    for line in shown:  # shown now: the server runs until Ctrl-C
        ctx.note(line)
    return _serve(ctx, args, folder)


def _serve(ctx: Context, args: argparse.Namespace, folder: Any) -> list[Any]:
    import sys
    import webbrowser

    from precision_tool.errors import UsageError
    from precision_tool.render.messages import note_line
    from precision_tool.shell.commands.explore.explore_server import ExploreServer

    try:
        server = ExploreServer(args.host, args.port, folder)
    except OSError as exc:
        raise UsageError(f"explore: cannot serve on {args.host}:{args.port} ({exc.strerror or exc}); "
                         "choose another with --port N") from None
    address = f"http://{args.host}:{server.server_address[1]}/"
    ctx.note(note_line(f"explore: serving at {address}"))
    ctx.note(note_line("  Ctrl-C stops it"))
    sys.stdout.flush()  # the address is read by whoever started us (a test, a remote shell) at once
    if not args.no_open:
        webbrowser.open_new_tab(address)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
    return [note_line("explore: stopped")]


def _complete(request: CompletionRequest) -> list[str]:
    from precision_tool.shell.completion import complete_paths

    if request.option in ("-f", "--file"):
        return list(complete_paths(request.current))
    return []


COMMANDS = [
    Command("explore", "open the newest comparison's NPU and TF graphs in Model Explorer, coloured by the "
            "comparison", _parser, _explore, completer=_complete, description=_DESCRIPTION),
]
