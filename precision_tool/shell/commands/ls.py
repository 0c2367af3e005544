"""`ls`: list graph ops (`ls -n NAME -t TYPE -f PASS -k KERNEL -g GRAPH`) or dump files (`ls dump ...`).

One command with two subjects, as users of the original expect; each subject's listing lives with its
area (graphs.list_ops, dumps.list_dumps).
"""

from __future__ import annotations

import argparse

from precision_tool.errors import UsageError
from precision_tool.shell.arg_types import non_negative_int
from precision_tool.shell.command import Command, CommandParser, CompletionRequest, Context


def _parser(parser: CommandParser) -> None:
    parser.add_argument("subject", nargs="?", choices=["dump"], metavar="dump",
                        help="`dump` lists NPU dump files instead of graph ops")
    parser.add_argument("-n", "--name", help="op name contains this (case-insensitive)")
    parser.add_argument("-t", "--type", help="op type contains this")
    parser.add_argument("-f", "--fusion-pass", "--fusion", dest="fusion_pass",
                        help="a fusion pass of the op (graph pass or UB pass) contains this")
    parser.add_argument("-k", "--kernel", "--kernel_name", dest="kernel",
                        help="kernel name contains this (the listing then shows the kernels)")
    parser.add_argument("-g", "--graph", help="graph name (or file name) contains this")
    parser.add_argument("-r", "--rank", dest="rank", type=non_negative_int, metavar="N",
                        help="ls dump of a multi-device dump: only rank N's files (its <device_id> folder)")


def _ls(args: argparse.Namespace, ctx: Context) -> object:
    from precision_tool.render.console import Paged

    # Hundreds of rows: the interactive shell pages them when taller than the terminal, as ni and vcs.
    if args.subject == "dump":
        for option, value in (("-f", args.fusion_pass), ("-k", args.kernel), ("-g", args.graph)):
            if value is not None:
                raise UsageError(f"ls dump: {option} filters graph ops; `ls dump` takes -n, -t and -r only")
        from precision_tool.shell.commands.dumps import list_dumps

        return Paged(list_dumps(args, ctx))
    if args.rank is not None:
        raise UsageError("ls: -r N picks the dump files of rank N: `ls dump -r N`")
    from precision_tool.shell.commands.graphs import list_ops

    return Paged(list_ops(args, ctx))


def _complete(request: CompletionRequest) -> list[str]:
    if request.option in ("-n", "--name"):
        from precision_tool.shell.commands.op_names import complete_op_names

        return complete_op_names(request)
    if request.option in ("-g", "--graph"):
        from precision_tool.shell.commands.op_names import complete_graph_names

        return complete_graph_names(request)
    if request.option is None and "dump" not in request.words:
        return ["dump"]
    return []


COMMANDS = [Command("ls", "list graph ops by name/type/pass/kernel, or `ls dump` the NPU dump files",
                    _parser, _ls, completer=_complete)]
