"""Entry point shared by `python3 precision_tool/cli.py`, `python -m precision_tool` and `precision-tool`."""

from __future__ import annotations

import argparse
import logging
import os
import sys
from pathlib import Path
from typing import NoReturn, Sequence

from precision_tool import __version__
from precision_tool.config import DATA_ENV, LOG_LEVELS, load_settings, temp_log_file, user_state_dir
from precision_tool.errors import PrecisionToolError
from precision_tool.render.console import make_console
from precision_tool.render.console import show
from precision_tool.render.messages import show_error, warning_line
from precision_tool.shell.command import CommandTable, Context
from precision_tool.shell.dispatch import execute
from precision_tool.shell.table import build_table
from precision_tool.workspace import Workspace


class FallbackFileHandler(logging.FileHandler):
    """Logs to the first of `paths` that can be written, creating its folder only when something is logged.

    A read-only workspace, a missing HOME or a full disk move the log to the next place; when none is
    writable records are dropped. Logging never prints "--- Logging error ---" tracebacks at the user.
    """

    def __init__(self, paths: Sequence[Path]) -> None:
        self._places = [Path(p) for p in paths]
        super().__init__(self._places[0], delay=True, encoding="utf-8")

    def _open(self):  # type: ignore[no-untyped-def]
        while self._places:
            self.baseFilename = os.path.abspath(self._places[0])
            try:
                Path(self.baseFilename).parent.mkdir(parents=True, exist_ok=True)
                return super()._open()
            except OSError:
                self._places.pop(0)
        self.baseFilename = os.devnull
        return open(os.devnull, "a", encoding="utf-8")

    def handleError(self, record: logging.LogRecord) -> None:
        # Writing failed (disk full, folder gone): try the next place once per place, then drop. Any other
        # error (a record that cannot be formatted) drops that record only, and the log stays where it is.
        if self.baseFilename == os.devnull or not isinstance(sys.exc_info()[1], OSError):
            return
        stream, self.stream = self.stream, None  # type: ignore[assignment]
        try:
            if stream is not None:
                stream.close()
        except OSError:
            pass
        if self._places:
            self._places.pop(0)
        self.emit(record)


def log_places(workspace: Workspace) -> list[Path]:
    """Where the log may go, best first: the workspace's temp/, the per-user folder, the temp folder."""
    places = [workspace.log_file] if workspace.root.is_dir() else []
    places.append(user_state_dir() / "precision_tool.log")
    try:
        places.append(temp_log_file())
    except OSError:  # no usable temp folder at all
        pass
    return places


def setup_logging(workspace: Workspace, level: str) -> None:
    logger = logging.getLogger("precision_tool")
    logger.handlers.clear()
    logger.propagate = False
    handler: logging.Handler = FallbackFileHandler(log_places(workspace))
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    logger.addHandler(handler)
    logger.setLevel(level.upper() if level.upper() in LOG_LEVELS else "INFO")


class TopParser(argparse.ArgumentParser):
    """The top-level parser: a bad option is one line and exit status 1, as every other error."""

    def error(self, message: str) -> NoReturn:
        from precision_tool.shell.command import user_words

        sys.stderr.write(f"precision-tool: {user_words(message)} (see `precision-tool -h`)\n")
        raise SystemExit(1)


def top_parser(table: CommandTable | None = None) -> argparse.ArgumentParser:
    """The `precision-tool` command line; -h lists the commands from `table` after the options."""
    from precision_tool.shell.help_format import HelpFormatter

    parser = TopParser(
        prog="precision-tool",
        description="Find the operator that makes a network lose accuracy on an Ascend NPU. "
        "Without COMMAND opens the `PrecisionTool >` shell (or reads commands from stdin "
        "when it is not a terminal).",
        epilog=_commands_epilog(table) if table is not None else None,
        formatter_class=HelpFormatter,
        allow_abbrev=False,
    )
    parser.add_argument("--data", metavar="DIR", help="workspace folder (default ./precision_data, "
                        "or $PRECISION_DATA, or ROOT_DIR in config.py)")
    parser.add_argument("--debug", action="store_true", help="show full tracebacks of unexpected errors")
    parser.add_argument("--version", action="version", version=f"PrecisionTool {__version__}")
    parser.add_argument("command", nargs=argparse.REMAINDER, metavar="COMMAND ...",
                        help="one command and its options (see the list below)")
    return parser


def _commands_epilog(table: CommandTable) -> str:
    # Indented lines are kept as written by the formatter; a long summary wraps under its column.
    names = [", ".join((c.name, *c.aliases)) for c in table]
    column = max(len(n) for n in names) + 4
    lines = ["commands (`precision-tool help CMD` or `precision-tool CMD -h` explains one):"]
    lines += [f"  {name.ljust(column - 2)}{command.summary}" for name, command in zip(names, table)]
    return "\n".join(lines) + "\n\n" + _EXAMPLES


# Shown as the commands' own `examples:` blocks are (shell/help_format.py keeps indented lines as
# written); each explanation fits beside its command at 80 columns.
_EXAMPLES = """\
examples:
  precision-tool demo               build and check ./precision_data_demo
  precision-tool --data DIR         open the shell on the workspace DIR
  precision-tool --data DIR ac -c   compare all, name the first divergent op
  precision-tool vcs -c 0.99 -l 10  the first 10 ops whose cosine is ≤ 0.99
  precision-tool ni OP -s 3         OP's details and a picture 3 ops deep
  precision-tool replay OP          replay on CPU: kernel/precision/inherited
  precision-tool tf_dump            extract golden tensors from tf/tf_debug
Without --data the workspace is ./precision_data; in the shell type what follows it (`vcs -c 0.99 -l 10`)."""


# One-shots whose work is to fill a workspace: a --data folder that does not exist yet is no news to them.
MAKES_WORKSPACE = frozenset({"demo", "infer", "npu_dump", "npu_overflow", "tf_dump"})


def _missing_workspace_warning(workspace: Workspace, args: argparse.Namespace) -> str | None:
    """One line when a workspace the user named (--data, $PRECISION_DATA) does not exist."""
    if workspace.root.exists():
        return None
    source = "--data" if args.data is not None else f"${DATA_ENV}" if os.environ.get(DATA_ENV) else None
    if source is None:  # the default ./precision_data: the banner and each command say what is missing
        return None
    return (f"the workspace {workspace.root} ({source}) does not exist; fix the path, or let a command "
            f"create it (`demo {workspace.root}` builds an example there)")


# One-shots that open the shell and, like the plain shell, read commands from stdin when it is not a
# terminal (`data DIR` is `--data DIR`); other opens_shell commands (`infer DIR`) then just do their work.
SHELL_FROM_STDIN = frozenset({"data"})


def main(argv: Sequence[str] | None = None) -> int:
    table = build_table()
    args = top_parser(table).parse_args(argv)
    console = make_console()
    try:
        os.getcwd()
    except FileNotFoundError:  # the folder was deleted under a shell still sitting in it
        show_error(console, "the current folder no longer exists (deleted or moved); `cd` to a folder that exists "
                            "and start precision-tool again")
        return 1
    try:
        settings = load_settings(data_dir=args.data)
        workspace = Workspace(settings.root_dir)
    except PrecisionToolError as exc:
        show_error(console, str(exc))
        return 1
    setup_logging(workspace, settings.LOG_LEVEL)
    ctx = Context(settings=settings, workspace=workspace, console=console, table=table)
    warning = _missing_workspace_warning(workspace, args)
    if args.command and args.command[0] in MAKES_WORKSPACE:
        warning = None
    if warning and (args.command or not sys.stdin.isatty()):  # the shell's banner says it instead
        show(console, warning_line(warning))
    if args.command:
        # The user's shell has already split the words; `run "ls | wc"` keeps its text as given.
        line = " ".join(args.command)
        outcome = execute(line, ctx, debug=args.debug, passthrough=False, words=list(args.command))
        command = table.get(args.command[0])
        if not outcome.ok or command is None or not command.opens_shell or _asked_for_help(args.command):
            return outcome.exit_status
        if ctx.workspace is not workspace:  # the command moved to another workspace: log there
            setup_logging(ctx.workspace, settings.LOG_LEVEL)
        if not sys.stdin.isatty() and command.name not in SHELL_FROM_STDIN:
            return 0  # `infer DIR` from a script: the import is the whole job
    from precision_tool.shell import repl

    if sys.stdin.isatty():
        return repl.interactive(ctx, debug=args.debug)
    return repl.scripted(ctx, sys.stdin, debug=args.debug)


def _asked_for_help(words: Sequence[str]) -> bool:
    """`data -h`: the help was the whole answer, no shell follows."""
    return "-h" in words[1:] or "--help" in words[1:]


def run() -> None:
    """Console-script entry: main(), and Ctrl-C before the shell is up ends quietly (status 130)."""
    try:
        status = main()
    except KeyboardInterrupt:
        status = 130
    leave(status)


def leave(status: int) -> NoReturn:
    """Exit with `status`, skipping the interpreter's teardown when nothing else is running.

    Why: the teardown frees every object one by one, and after a comparison of 20,000 ops (its plan and
    44,000 result rows) that took 0.15-0.25 s after the answer was printed. What an exit still has to do is
    done first: the atexit handlers (logging's flush and close, multiprocessing's, temporary folders'), and
    the standard streams flushed. A thread still working (not a daemon) is waited for by a normal exit."""
    import atexit
    import threading

    if any(t.is_alive() and not t.daemon for t in threading.enumerate() if t is not threading.main_thread()):
        sys.exit(status)
    atexit._run_exitfuncs()  # (private, but the one way to run them all in their order)
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):  # a closed pipe (`vc | head`) or stream: nothing more can be said
            pass
    os._exit(status)
