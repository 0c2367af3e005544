"""A typo that names a program is not run; a missing workspace is named before anything else."""

from __future__ import annotations

import shutil

from precision_tool.shell.dispatch import one_edit_away
from precision_tool.shell.table import build_table

NAMES = build_table().names()


def test_one_edit_away():
    assert one_edit_away("nl", NAMES) == ["ni"]
    assert one_edit_away("vsc", NAMES) == ["vc", "vcs"]  # a dropped letter, a swapped pair
    assert one_edit_away("tf_dupm", NAMES) == ["tf_dump"]
    assert one_edit_away("ls", NAMES) == []  # a command itself
    assert one_edit_away("grep", NAMES) == []


def test_a_program_one_typo_from_a_command_is_not_run(cli, tmp_path):
    assert shutil.which("nl") and shutil.which("echo") and shutil.which("sort")
    marker = tmp_path / "input.txt"
    marker.write_text("first\n")
    result = cli(data=tmp_path, stdin=f"nl {marker}\nsort {marker}\nrun nl {marker}\n")
    lines = result.out.splitlines()
    assert lines[0] == f"`nl` is a shell program; did you mean `ni`? `run nl {marker}` runs it"
    assert lines[1] == "first"  # sort is far from every command: it runs as before
    assert lines[2].split() == ["1", "first"]  # `run nl` runs it
    assert result.status == 1  # the refused line failed the script


def test_in_the_shell_too(shell, run):
    out = run(shell, "nl x").replace("\r\n", " ")
    assert "`nl` is a shell program; did you mean `ni`? `run nl x` runs it" in " ".join(out.split())


def test_a_workspace_named_but_missing_is_said_first(cli, tmp_path):
    missing = tmp_path / "typo"
    warning = (f"warning: the workspace {missing} (--data) does not exist; fix the path, or let a command "
               f"create it (`demo {missing}` builds an example there)")
    for words in (["ls"], ["ni", "conv1"], ["vc"]):
        result = cli(*words, data=missing)
        lines = result.out.splitlines()
        assert result.status == 1 and lines[0] == warning and len(lines) == 2, result.out
    result = cli("ls", env={"PRECISION_DATA": str(missing)})
    assert result.out.splitlines()[0] == warning.replace("(--data)", "($PRECISION_DATA)")
    assert cli(data=missing, stdin="run echo fine\n").out.splitlines() == [warning, "fine"]
    assert not missing.exists()
    assert "does not exist" not in cli("ls", data=tmp_path).out  # an existing workspace: no warning


def test_precision_tool_home_holds_history_and_log_without_a_workspace(cli, tmp_path):
    import os
    import sys

    import pexpect

    from precision_tool.config import user_state_dir

    home = tmp_path / "state"
    os.environ["PRECISION_TOOL_HOME"] = str(home)
    try:
        assert user_state_dir() == home
    finally:
        del os.environ["PRECISION_TOOL_HOME"]
    root = __import__("pathlib").Path(__file__).resolve().parents[2]
    env = {k: v for k, v in os.environ.items() if k not in ("PRECISION_DATA", "PRECISION_TOOL_HISTORY")}
    env.update({"PRECISION_TOOL_HOME": str(home), "NO_COLOR": "1", "TERM": "xterm", "PROMPT_TOOLKIT_NO_CPR": "1"})
    child = pexpect.spawn(sys.executable, [str(root / "precision_tool" / "cli.py"), "--data", str(tmp_path / "none")],
                          env=env, encoding="utf-8", timeout=20, dimensions=(40, 120), cwd=str(tmp_path))
    child.expect_exact("PrecisionTool >")
    child.sendline("run echo kept")
    child.expect_exact("kept\r\n")
    child.expect_exact("PrecisionTool >")
    child.sendline("exit")
    child.expect(pexpect.EOF)
    assert "+run echo kept" in (home / "history").read_text()
    assert not (tmp_path / "none").exists()
