"""`infer DIR`: import an msquickcmp / `msit debug compare` output folder, so vcs, ni, ac and vc work on an
inference comparison (docs/infer.md). As a one-shot from a terminal the shell opens on it, as the original."""

from __future__ import annotations

import argparse
from typing import Any

from precision_tool.shell.command import Command, CommandParser, CompletionRequest, Context

_DESCRIPTION = """\
Import the folder msquickcmp (msit debug compare) wrote with -o: the om model's atc JSON (model/*.json)
becomes the Build graph of npu/debug_0, dump_data/npu/<time>/ its NPU dump, dump_data/onnx|tf|caffe/*.npy
the golden tensors (tf/dump) and result_<time>.csv a result folder (temp/vector_compare/<time>/), so `vcs`,
`ni OP`, `ac` and `vc` work on it. DIR may be the -o folder (its newest run is imported) or one run folder.
Dumps and golden tensors are symlinked (they are big) unless --copy. An import replaces npu/debug_N (every
run's graphs and dumps), tf/tf_debug, tf/checkpoints, tf/dump and temp/vector_compare as a whole, so nothing
old mixes with it: a workspace holding any of them is refused (naming them) unless --force, which moves them
all aside to <workspace>/before_infer_<time>/ with their paths (never deletes). Everything is written into a
staging folder in the workspace first and renamed into place only when all of it was written: a write error
leaves the workspace as it was.

examples:
  infer ./result/test                      import the newest run under msquickcmp's -o folder
  infer ./result/test/20240101120000 --copy --data /tmp/pd
"""


def _parser(parser: CommandParser) -> None:
    parser.add_argument("dir", metavar="DIR", help="msquickcmp's output folder (-o), or one run folder in it")
    parser.add_argument("--data", metavar="WS", default=None,
                        help="the workspace to import into (default: the current one, ./precision_data unless "
                             "--data / $PRECISION_DATA chose another)")
    how = parser.add_mutually_exclusive_group()
    how.add_argument("--link", dest="copy", action="store_false", default=False,
                     help="symlink the dumps, golden tensors and graph (the default)")
    how.add_argument("--copy", dest="copy", action="store_true", help="copy them instead of linking")
    parser.add_argument("--force", action="store_true",
                        help="import even when the workspace holds npu/debug_N, tf/tf_debug, tf/checkpoints, tf/dump or "
                             "temp/vector_compare: all of them are moved aside to before_infer_<time>/, not deleted")


def _infer(args: argparse.Namespace, ctx: Context) -> Any:
    from precision_tool.analysis.infer_import import import_msquickcmp
    from precision_tool.render.infer import render_import
    from precision_tool.workspace import Workspace

    workspace = Workspace(args.data) if args.data else ctx.workspace
    imported = import_msquickcmp(args.dir, workspace, copy=args.copy, force=args.force)
    ctx.use_workspace(Workspace(imported.workspace))
    return render_import(imported)


def _complete(request: CompletionRequest) -> list[str]:
    from precision_tool.shell.completion import complete_paths

    if request.option in (None, "--data") and not request.current.startswith("-"):
        return list(complete_paths(request.current))
    return []


COMMANDS: list[Command] = [
    Command("infer", "import an msquickcmp / msit compare output folder (dumps, model JSON, result CSV)",
            _parser, _infer, completer=_complete, description=_DESCRIPTION, opens_shell=True),
]
