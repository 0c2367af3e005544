"""`cp`: compare two tensors (files, dump tensors or golden tensors in any spelling `pt` takes): errors, the
elements that differ most and the ten metrics (analysis/compare/pair_compare.py), rendered by render/compare/pair.py."""

from __future__ import annotations

import argparse
from typing import Any

from precision_tool.errors import UsageError
from precision_tool.shell.arg_types import non_negative_float, positive_int
from precision_tool.shell.command import Command, CommandParser, Context


def _cp_parser(parser: CommandParser) -> None:
    parser.add_argument("left", metavar="A", nargs="?",
                        help="tensor A, in any spelling pt takes: a .npy or dump file (path or bare name), "
                             "DUMPFILE:output:0 / DUMPFILE:input:1, OP:output:0 (its NPU dump), OP:0 (its golden "
                             "tensor)")
    parser.add_argument("right", metavar="B", nargs="?", help="tensor B (the reference side), same forms as A")
    parser.add_argument("-n", "--name", dest="names", nargs=2, metavar=("A", "B"),
                        help="A and B as an option, as the original tool spelled it: cp -n A B")
    parser.add_argument("-p", "--print", dest="items", type=positive_int, default=20, metavar="N",
                        help="how many of the elements that differ most to list, worst first (default 20)")
    parser.add_argument("-al", "--atol", dest="atol", type=non_negative_float, metavar="ATOL",
                        help="absolute tolerance (default: by dtype: 1e-3 for float16, 1e-2 for bfloat16, "
                             "1e-8 for float32 as numpy; the less precise tensor decides)")
    parser.add_argument("-rl", "--rtol", dest="rtol", type=non_negative_float, metavar="RTOL",
                        help="relative tolerance (default: by dtype: 1e-3 for float16, 1e-2 for bfloat16, "
                             "1e-5 for float32 as numpy)")
    parser.add_argument("-s", "--save", dest="save", action="store_true",
                        help="also save both tensors as .txt under temp/tensor_compare")


def _cp_pair(args: argparse.Namespace, name: str) -> tuple[str, str]:
    """A and B, given as `cp A B` or as the original's `cp -n A B` (never both)."""
    given = [t for t in (args.left, args.right) if t is not None] + list(args.names or [])
    if len(given) != 2:
        how = f"got {len(given)}" if given else "got none"
        raise UsageError(f"{name}: give two tensors, `{name} A B` or `{name} -n A B` ({how}; see `{name} -h`)")
    return given[0], given[1]


def _cp(args: argparse.Namespace, ctx: Context) -> Any:
    from precision_tool.analysis.compare.network_compare import compare_pair
    from precision_tool.render.compare.pair import pair_view

    from precision_tool.workspace import Workspace

    save_dir = ctx.workspace.temp_dir / "tensor_compare" if args.save else None
    if save_dir is not None:  # before comparing: a folder that cannot be written is said at once
        Workspace.ensure_dir(save_dir, "cp -s folder", hint="run cp without -s (nothing else is written), "
                                                          "or choose another workspace with --data DIR")
    left_text, right_text = _cp_pair(args, getattr(args, "invoked_as", "cp"))
    left, right = resolve_tensor_arg(left_text, ctx), resolve_tensor_arg(right_text, ctx)
    report = compare_pair(left.spec, right.spec, items=args.items, atol=args.atol, rtol=args.rtol,
                          save_dir=save_dir, graph_layouts=_graph_layouts((left, right), ctx))
    return pair_view(report)


def _graph_layouts(refs: Any, ctx: Context) -> dict[str, str]:
    """The origin layout the run's Build graph gives each dump tensor of the workspace (as `pt`/`ni` use)."""
    from precision_tool.analysis.dumps.origin_layout import graph_origin_formats

    layouts: dict[str, str] = {}
    for ref in refs:
        if ref.kind is None or ref.path.suffix == ".npy":
            continue
        found = graph_origin_formats(ctx.workspace, [ref.path]).get(ref.path, {}).get((ref.kind, ref.index))
        if found:
            layouts[ref.spec] = found
    return layouts


def resolve_tensor_arg(text: str, ctx: Context) -> Any:
    """`cp`'s A/B in any spelling `pt` takes (analysis/ops/tensor_ref.py lists them): a path, a bare dump or
    golden file name, DUMPFILE:output:N, OP:output:N, a TF tensor OP:N. Notes (which file was picked)
    are shown as they come."""
    from precision_tool.analysis.ops.tensor_ref import one_tensor_of
    from precision_tool.render.messages import note_line
    from precision_tool.shell.commands.dumps import resolve_any_tensor

    # A whole dump file stands for its output 0 (as in pt), said so that a user who meant another knows
    ref = one_tensor_of(resolve_any_tensor(text, ctx.workspace, "cp"), text, verb="comparing", command="cp")
    for note in ref.notes:
        ctx.note(note_line(note))
    return ref


def _complete_cp(request: Any) -> list[str]:
    """Dump file names (and FILE:output:N after a colon) for A and B; nothing for the numeric options."""
    if request.option is not None:
        return []
    from precision_tool.shell.commands.dumps import complete_dump_files

    return list(complete_dump_files(request))


COMMANDS = [
    Command("cp", "compare two tensors (files, OP:output:0 or OP:0): errors, the worst elements, the ten metrics",
            _cp_parser, _cp, completer=_complete_cp, aliases=("compare",),
            description="Compare tensor A with tensor B (the reference): how many elements are outside the "
                        "tolerances and where the first one is, the elements that differ most (NaN/Inf "
                        "mismatches, then the largest |A-B|, then |A-B|/|B|) at their index in the shape, and "
                        "the ten metrics. `compare` and the original's `cp -n A B` spell the same.\n\n"
                        "examples:\n  cp conv1/Conv2D:output:0 conv1/Conv2D:0\n"
                        "  cp -n add_3:output:0 add_3:0 -p 10 -s -al 0.002 -rl 0.005"),
]
