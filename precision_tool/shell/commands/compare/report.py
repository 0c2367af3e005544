"""`report`: one self-contained HTML page of the newest comparison and everything `ac` knows; and `ac`'s
report section (`ac -c --report`), which writes it after the checks.

jinja2 is imported only when a report is written (the page draws its charts with its own script).
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from precision_tool.shell.arg_types import non_negative_int
from precision_tool.shell.command import AcSection, Command, CommandParser, CompletionRequest, Context

_DESCRIPTION = """\
Write temp/report/<time>/report.html: the newest comparison (every run of its result folder: NPU vs
golden and NPU vs NPU) and what `ac` finds, in one self-contained page that opens offline, on a machine
without the tool, attached to an email. It shows the first divergent op with its replay verdict (when
`ac -c` replayed it), a chart of every compared output's cosine similarity (or max absolute error) along
execution order with the threshold, an op panel per point (type, fusion pass, original TF ops, inputs
and outputs, the ten metrics, both sides' statistics, an error histogram), the subgraph around the first
divergent op, and sortable tables of abnormal outputs, overflows, fusion passes, lossy casts and graph
differences, with links to the CSVs.

Statistics and histograms are read for REPORT_TENSOR_LIMIT outputs per run (default 2000: the abnormal
ones first); the chart and the tables hold every output.

examples:
  report
  report -f temp/vector_compare/20261202050610 -o /tmp/reports
  ac -c --report
"""


def _parser(parser: CommandParser) -> None:
    parser.add_argument("-f", "--file", metavar="CSV|DIR", default=None,
                        help="a result CSV or result folder (default: the newest under temp/vector_compare/)")
    parser.add_argument("-o", "--output", metavar="DIR", default=None,
                        help="write DIR/<time>/report.html (default: temp/report/<time>/ in the workspace)")
    parser.add_argument("-s", "--subgraph", type=non_negative_int, metavar="DEPTH", default=2,
                        help="draw the ops within DEPTH edges of the first divergent op (default 2; 0: no picture)")


def missing_packages() -> str | None:
    """Why a report cannot be written here (jinja2 missing), or None."""
    import importlib.util

    missing = [name for name in ("jinja2",) if importlib.util.find_spec(name) is None]
    if not missing:
        return None
    return (f"the report needs {' and '.join(missing)}, which are not installed; "
            f"`pip install {' '.join(missing)}` (or reinstall precision-tool) installs them")


def write_workspace_report(ctx: Context, path: str | None = None, output: str | None = None,
                           depth: int = 2, *, where: bool = True) -> tuple[list[Any], Path]:
    """Build and write the report; returns what to show (its size, with `where` its path and a file:// link:
    `ac` leaves those to its answer block) and the page's path."""
    import time

    from precision_tool.analysis.report.report_data import collect_report
    from precision_tool.errors import WorkspaceError
    from precision_tool.render.messages import note_line, warning_line
    from precision_tool.render.report.report_html import write_report
    from precision_tool.shell.commands.compare.result_summaries import chosen_results
    from precision_tool.workspace import Workspace, new_result_dir

    missing = missing_packages()
    if missing:
        raise WorkspaceError(missing)
    files = chosen_results(ctx, path)
    root = Path(output).expanduser() if output else ctx.workspace.report_dir
    hint = "add -o DIR to write the report to another folder"
    Workspace.ensure_dir(root, "report folder", hint=hint)  # refused before the work, not after it
    started = time.perf_counter()
    data = collect_report(ctx.workspace, ctx.settings, files, depth=depth)
    # the page's own folder only once there is a page to put in it: a failure leaves no empty folder
    folder = new_result_dir(root, hint=hint, what="report folder")
    try:
        written = write_report(data, folder)
    except BaseException as exc:
        _remove_if_empty(folder)
        if isinstance(exc, OSError):
            raise WorkspaceError(f"cannot write the report in {folder}: {exc.strerror or exc}; {hint}") from None
        raise
    shown: list[Any] = [warning_line(f"report: {note}") for note in data.notes]
    size = written.size / 1e6
    seconds = time.perf_counter() - started
    if not where:
        shown.append(note_line(f"report: written ({size:.1f} MB, built in {seconds:.1f} s; one file, opens offline)"))
        return shown, written.path
    shown.append(note_line(f"report: {written.path} ({size:.1f} MB, built in {seconds:.1f} s; one file, opens "
                           "offline)"))
    shown.append(note_line(f"  {written.path.resolve().as_uri()}"))
    return shown, written.path


def _remove_if_empty(folder: Path) -> None:
    try:
        folder.rmdir()
    except OSError:
        pass  # not empty (or already gone): nothing of ours to tidy


def _report(args: argparse.Namespace, ctx: Context) -> Any:
    return write_workspace_report(ctx, args.file, args.output, args.subgraph)[0]


def _ac_report(args: argparse.Namespace, ctx: Context) -> Any:
    """`ac --report`: after every check, the page of what they found."""
    if not getattr(args, "report", False):
        return None
    if ctx.workspace.newest_result_dir() is None:
        from precision_tool.render.messages import note_line

        return note_line("report: no comparison results yet; `ac -c --report` runs one first")
    shown, args.report_path = write_workspace_report(ctx, where=False)  # the answer block says where it is
    return shown


def _complete(request: CompletionRequest) -> list[str]:
    from precision_tool.shell.completion import complete_paths

    if request.option in ("-f", "--file", "-o", "--output"):
        return list(complete_paths(request.current))
    return []


COMMANDS = [
    Command("report", "write one self-contained HTML page of the newest comparison and the ac checks",
            _parser, _report, completer=_complete, description=_DESCRIPTION),
]

AC_SECTIONS = [AcSection("report", _ac_report, order=90)]
