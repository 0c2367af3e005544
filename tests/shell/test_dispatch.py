"""The dispatcher with real commands defined here: errors are one line, bugs are logged, not shown."""

from __future__ import annotations

import io
import logging
import os
import subprocess
import sys
from pathlib import Path

from precision_tool.config import Settings
from precision_tool.errors import WorkspaceError
from precision_tool.render.console import make_console
from precision_tool.shell.command import Command, CommandTable, Context
from precision_tool.shell.dispatch import execute
from precision_tool.shell.main import setup_logging
from precision_tool.workspace import Workspace

ROOT = Path(__file__).resolve().parents[2]


def _buggy(args, ctx):
    raise RuntimeError("boom")


def _user_error(args, ctx):
    raise WorkspaceError("no NPU dumps in x; run the NPU training first")


def _context(tmp_path) -> tuple[Context, io.StringIO]:
    out = io.StringIO()
    workspace = Workspace(tmp_path)
    setup_logging(workspace, "INFO")
    table = CommandTable([Command("bug", "raises a bug", lambda p: None, _buggy),
                          Command("oops", "raises a user error", lambda p: None, _user_error)])
    return Context(Settings(ROOT_DIR=str(tmp_path)), workspace, make_console(file=out, width=60), table), out


def test_unexpected_error_is_one_line_and_the_traceback_is_logged(tmp_path):
    ctx, out = _context(tmp_path)
    outcome = execute("bug", ctx)
    logging.getLogger("precision_tool").handlers[0].flush()
    assert not outcome.ok
    lines = out.getvalue().splitlines()
    assert lines == [f"unexpected error: RuntimeError: boom (full traceback in {tmp_path}/temp/precision_tool.log; "
                     "--debug shows it here)"]
    log = (tmp_path / "temp" / "precision_tool.log").read_text()
    assert "Traceback" in log and "RuntimeError: boom" in log


def test_debug_shows_the_traceback(tmp_path):
    ctx, out = _context(tmp_path)
    execute("bug", ctx, debug=True)
    assert "Traceback" in out.getvalue() and "RuntimeError" in out.getvalue()


def test_user_error_is_one_unwrapped_line_and_not_logged_as_a_bug(tmp_path):
    ctx, out = _context(tmp_path)
    outcome = execute("oops", ctx)
    assert not outcome.ok
    assert out.getvalue().splitlines() == ["no NPU dumps in x; run the NPU training first"]
    assert not (tmp_path / "temp" / "precision_tool.log").exists()  # nothing was written, nothing created


def test_without_a_workspace_the_traceback_goes_to_the_user_log(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    ctx, out = _context(tmp_path / "no_workspace")
    execute("bug", ctx)
    logging.getLogger("precision_tool").handlers[0].flush()
    log = tmp_path / "state" / "precision_tool" / "precision_tool.log"
    assert f"full traceback in {log};" in out.getvalue()
    assert "RuntimeError: boom" in log.read_text()
    assert not (tmp_path / "no_workspace").exists()


def test_log_falls_back_to_the_temp_folder_then_to_nothing(tmp_path, monkeypatch):
    import tempfile

    (tmp_path / "temp").write_text("a file where temp/ should be")  # the workspace log cannot be written
    monkeypatch.setenv("PRECISION_TOOL_HOME", str(tmp_path / "temp" / "state"))  # nor the per-user one
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "tmp"))
    (tmp_path / "tmp").mkdir()
    ctx, out = _context(tmp_path)
    execute("bug", ctx)
    log = tmp_path / "tmp" / f"precision_tool-{os.getuid()}.log"
    assert out.getvalue().splitlines() == [f"unexpected error: RuntimeError: boom (full traceback in {log}; "
                                           "--debug shows it here)"]
    logging.getLogger("precision_tool").handlers[0].flush()
    assert "RuntimeError: boom" in log.read_text()
    (tmp_path / "tmp").chmod(0o755)
    log.unlink()
    (tmp_path / "tmp").rmdir()
    (tmp_path / "tmp").write_text("now the temp folder is a file too")
    ctx, out = _context(tmp_path)
    execute("bug", ctx)
    assert out.getvalue().splitlines() == ["unexpected error: RuntimeError: boom (full traceback in no log file; "
                                           "--debug shows it here)"]


def test_a_full_disk_never_prints_a_logging_error(tmp_path):
    # A private tmpfs without free space (unshare -rm: works as root and as a user) holds the workspace.
    ws = tmp_path / "ws"
    ws.mkdir()
    script = (
        "import logging, tempfile, io\n"
        "from pathlib import Path\n"
        "tempfile.tempdir = '/proc/no-temp-folder-here'\n"  # not even root can create it
        "from precision_tool.shell.main import setup_logging\n"
        "from precision_tool.workspace import Workspace\n"
        f"setup_logging(Workspace({str(ws)!r}), 'INFO')\n"
        "log = logging.getLogger('precision_tool')\n"
        "for n in range(200):\n"
        "    log.error('x' * 1000)\n"
        "print('done')\n"
    )
    shell = (f"mount -t tmpfs -o size=8k tmpfs {ws} && "
             f'PRECISION_TOOL_HOME={ws}/state "{sys.executable}" -c "$0"')
    done = subprocess.run(["unshare", "-rm", "sh", "-c", shell, script], capture_output=True, text=True,
                          cwd=ROOT)
    assert done.returncode == 0 and done.stdout == "done\n" and done.stderr == "", done.stderr


def test_a_record_that_cannot_be_formatted_is_dropped_and_the_log_stays(tmp_path, capfd):
    """A bug in one log call (wrong format arguments) loses that record only: no 'Logging error' at the
    user, and later records still reach the workspace log."""
    from precision_tool.shell.main import setup_logging
    from precision_tool.workspace import Workspace

    (tmp_path / "ws").mkdir()
    workspace = Workspace(tmp_path / "ws")
    setup_logging(workspace, "INFO")
    log = logging.getLogger("precision_tool")
    log.info("one %s and %s", "argument")  # too few arguments
    log.info("still logged")
    log.handlers[0].flush()
    assert "still logged" in workspace.log_file.read_text()
    assert "Logging error" not in capfd.readouterr().err
