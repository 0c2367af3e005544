"""Fixtures for driving the real shell in a pseudo-terminal."""

from __future__ import annotations

import os
import re
import sys
import time
from pathlib import Path

import pexpect
import pytest

from tests.users import read_only_user_command

ROOT = Path(__file__).resolve().parents[2]
PROMPT = "PrecisionTool >"  # prompt_toolkit draws the trailing space as a cursor move


def spawn_shell(data: Path, history: Path, extra_env: dict[str, str] | None = None,
                columns: int = 120) -> pexpect.spawn:
    env = {k: v for k, v in os.environ.items() if k not in ("PRECISION_TOOL_CONFIG", "PRECISION_DATA")}
    env.update({"NO_COLOR": "1", "TERM": "xterm", "PROMPT_TOOLKIT_NO_CPR": "1",
                "PRECISION_TOOL_HISTORY": str(history), "COLUMNS": str(columns), "LINES": "40"})
    env.update(extra_env or {})
    child = pexpect.spawn(sys.executable, [str(ROOT / "precision_tool" / "cli.py"), "--data", str(data)],
                          env=env, encoding="utf-8", timeout=20, dimensions=(40, columns), cwd=str(data.parent))
    child.expect_exact(PROMPT)
    return child


@pytest.fixture
def shell(tmp_path):
    """A started shell on an empty workspace; closed after the test."""
    data = tmp_path / "precision_data"
    data.mkdir()
    child = spawn_shell(data, tmp_path / "history")
    yield child
    child.close(force=True)


@pytest.fixture
def spawn():
    return spawn_shell


def run_line(child: pexpect.spawn, line: str, timeout: float = 20) -> str:
    """Type a line, wait until it has run and the prompt is back, return what it printed (raw)."""
    child.sendline(line)
    child.expect_exact("\r\r\n", timeout=timeout)  # Enter accepted: prompt_toolkit moves to a new line
    child.expect_exact(PROMPT, timeout=timeout)
    return child.before


@pytest.fixture
def run():
    return run_line


ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


def wait_for_text(child: pexpect.spawn, text: str, timeout: float = 10) -> str:
    """Read the screen until `text` shows, ignoring the escape codes a redraw puts between characters."""
    seen = ""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            seen += child.read_nonblocking(4096, timeout=0.2)
        except pexpect.TIMEOUT:
            pass
        if text in ANSI.sub("", seen):
            return seen
    raise AssertionError(f"{text!r} never appeared; screen: {ANSI.sub('', seen)!r}")


@pytest.fixture
def wait_text():
    return wait_for_text


# --- running as another user (tests/users.py) ----------------------------------------------------

@pytest.fixture
def read_only_user():
    """read_only_user(command, workspace) -> the command line to spawn; see read_only_user_command."""
    return read_only_user_command
