"""Fixtures for driving the real shell in a pseudo-terminal."""

from __future__ import annotations

import os
import re
import sys
import time
from pathlib import Path

import pexpect
import pytest

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


# --- running as another user -------------------------------------------------------------------------

def _blocking_ancestor(path: Path) -> Path | None:
    """The topmost folder above (or at) `path` that other users cannot enter, or None."""
    for folder in reversed([path, *path.parents]):
        if not os.stat(folder).st_mode & 0o001:
            return folder
    return None


def _needed_paths(extra: list[Path]) -> list[Path]:
    """What another user must reach to run this interpreter on the checkout: its prefixes and the checkout."""
    import site

    paths = {Path(os.path.realpath(p)) for p in (sys.prefix, sys.base_prefix, os.path.dirname(sys.executable),
                                                   os.path.dirname(os.path.realpath(sys.executable)), ROOT,
                                                   *site.getsitepackages(), *extra)}
    paths = {p for p in paths if p.exists()}
    return sorted(p for p in paths if not any(q != p and q in p.parents for q in paths))


def as_nobody(command: list[str], reach: list[Path] = ()) -> list[str]:
    """`command` run as the user nobody (root only), with a HOME that does not exist.

    The interpreter often lives under a folder only root may enter (/root/.pyenv): a private mount
    namespace covers each such folder with an empty world-enterable tmpfs and binds back just the paths
    needed, at the same place. Nothing changes outside that namespace.
    """
    steps: list[str] = []
    binds: list[tuple[Path, int]] = []
    covered: list[Path] = []
    for n, path in enumerate(_needed_paths(list(reach))):
        blocker = _blocking_ancestor(path)
        if blocker is None:
            continue
        binds.append((path, n))
        if blocker not in covered:
            covered.append(blocker)
    steps.append("stash=$(mktemp -d)")
    for path, n in binds:
        steps.append(f"mkdir $stash/{n} && mount --bind '{path}' $stash/{n}")
    for blocker in covered:
        steps.append(f"mount -t tmpfs -o mode=755,size=1m tmpfs '{blocker}'")
    for path, n in binds:
        steps.append(f"mkdir -p '{path}' && mount --move $stash/{n} '{path}'")
    steps.append('rm -r "$stash"')
    steps.append('exec setpriv --reuid=nobody --regid=nogroup --clear-groups env HOME=/nonexistent "$@"')
    return ["unshare", "-m", "--propagation", "private", "sh", "-c", " && ".join(steps), "sh", *command]


def read_only_user_command(command: list[str], workspace: Path) -> list[str]:
    """As root: `command` as nobody on `workspace` made read-only for others. Otherwise (CI may run as a
    user) the current user on a workspace made read-only with chmod, with HOME=/nonexistent."""
    for folder in [workspace, *(p for p in workspace.rglob("*") if p.is_dir())]:
        folder.chmod(0o555)
    for file in (p for p in workspace.rglob("*") if p.is_file()):
        file.chmod(0o444)
    if os.geteuid() == 0:
        return as_nobody(command, reach=[workspace])
    return ["env", "HOME=/nonexistent", *command]


def make_writable_again(workspace: Path) -> None:
    """So pytest can remove the temporary folder afterwards."""
    for folder in [workspace, *(p for p in workspace.rglob("*") if p.is_dir())]:
        folder.chmod(0o755)


@pytest.fixture
def read_only_user():
    """read_only_user(command, workspace) -> the command line to spawn; see read_only_user_command."""
    return read_only_user_command
