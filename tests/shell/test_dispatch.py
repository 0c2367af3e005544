"""The dispatcher with real commands defined here: errors are one line, bugs are logged, not shown."""

from __future__ import annotations

import io
import logging

from precision_tool.config import Settings
from precision_tool.errors import WorkspaceError
from precision_tool.render.console import make_console
from precision_tool.shell.command import Command, CommandTable, Context
from precision_tool.shell.dispatch import execute
from precision_tool.shell.main import setup_logging
from precision_tool.workspace import Workspace


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
