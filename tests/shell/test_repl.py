"""The REPL through a real pseudo-terminal, as a user types into it."""

from __future__ import annotations

import re
import time

import pexpect

from precision_tool import __version__

ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


def plain(text: str) -> str:
    """The screen text without terminal escapes (styles stay on under NO_COLOR; only colours go)."""
    return ANSI.sub("", text)

PROMPT = "PrecisionTool >"  # prompt_toolkit draws the trailing space as a cursor move


def test_banner_names_version_and_what_is_missing(tmp_path, spawn):
    data = tmp_path / "precision_data"
    data.mkdir()
    child = spawn(data, tmp_path / "history")
    banner = plain(child.before)
    assert f"PrecisionTool {__version__}" in banner
    assert "missing" in banner and "NPU dumps" in banner and "golden tensors" in banner
    child.close(force=True)


def _banner(child) -> str:
    """The banner's prose on one line (wrapped lines joined)."""
    return " ".join(plain(child.before).split())


def test_missing_workspace_still_opens(tmp_path, spawn):
    child = spawn(tmp_path / "nowhere", tmp_path / "history")
    banner = _banner(child)
    assert not (tmp_path / "nowhere").exists()
    child.close(force=True)
    # demo builds ./precision_data_demo, not the ./precision_data the next plain start looks for: say so
    assert f"missing workspace {tmp_path / 'nowhere'} (the folder does not exist)" in banner
    assert ("demo workspace — `precision-tool demo` builds one in ./precision_data_demo; then "
            "`precision-tool --data ./precision_data_demo` opens it") in banner, banner
    (tmp_path / "precision_data_demo").mkdir()  # in the folder the shell starts in
    child = spawn(tmp_path / "nowhere", tmp_path / "history", columns=80)
    banner = _banner(child)
    child.close(force=True)
    assert ("demo workspace ./precision_data_demo is here — open it: `precision-tool --data "
            "./precision_data_demo` (in this shell: `data ./precision_data_demo`)") in banner, banner
    assert "builds one" not in banner


def test_help_lists_commands(shell, run):
    out = plain(run(shell, "help"))
    for name in ("help", "exit", "run", "ac", "ls"):
        assert name in out
    out = plain(run(shell, "help ac"))
    assert "usage: ac" in out and "--limit" in out
    out = plain(run(shell, "ac -h"))
    assert "usage: ac" in out


def test_unknown_command_suggests_closest(shell, run):
    out = plain(run(shell, "lss"))
    assert "unknown command 'lss'; did you mean ls" in out
    out = plain(run(shell, "ac --bogus"))
    assert "unrecognized arguments: --bogus" in out


def test_shell_passthrough(shell, run):
    out = plain(run(shell, "run echo hi | tr a-z A-Z"))
    assert "HI" in out
    out = plain(run(shell, "echo bare-executable"))
    assert "bare-executable" in out


def test_ctrl_c_cancels_running_command_and_keeps_shell(shell, run):
    shell.sendline("run sleep 30")
    shell.expect_exact("\r\r\n")  # accepted: the command is now running
    time.sleep(0.5)
    shell.sendintr()
    shell.expect_exact(PROMPT, timeout=5)  # long before the 30 s are up
    assert "cancelled" in plain(shell.before)
    shell.send("half a line")
    shell.sendcontrol("c")  # Ctrl-C at the prompt drops the line and stays
    shell.sendline("run echo still-here")
    shell.expect_exact("still-here\r\n")  # the command's output, not the echo of what was typed


def test_history_survives_restart(tmp_path, spawn, run):
    data = tmp_path / "precision_data"
    data.mkdir()
    history = tmp_path / "history"
    first = spawn(data, history)
    run(first, "run echo remembered-line")
    first.sendline("exit")
    first.expect(pexpect.EOF)
    second = spawn(data, history)
    second.send("\x1b[A\x1b[A")  # two lines back: the previous session's `exit`, then our line
    second.expect("run echo remembered-line")
    second.close(force=True)


def test_ctrl_d_leaves(shell, run):
    shell.sendcontrol("d")
    shell.expect(pexpect.EOF)
    shell.close()
    assert shell.exitstatus == 0


def test_quit_leaves(shell, run):
    shell.sendline("quit")
    shell.expect(pexpect.EOF)
    shell.close()
    assert shell.exitstatus == 0


def test_tab_completes_command_names_and_options(shell, wait_text):
    shell.send("he\t")
    wait_text(shell, "help")
    shell.sendcontrol("c")
    shell.send("ac --li\t")
    wait_text(shell, "ac --limit")
