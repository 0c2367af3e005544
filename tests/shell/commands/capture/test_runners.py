"""npu_dump / npu_overflow / tf_dump "CMD": real training commands run through the one-shot CLI and the shell."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path

import pytest

from tests.conftest import run_cli
from tests.shell.commands.capture.conftest import CLI, script, tool_env


@pytest.fixture(scope="module")
def flag_runs(tmp_path_factory) -> dict[str, tuple[Path, object]]:
    """The TF1 script run once by npu_dump and once by npu_overflow, each with the other flag already set
    in our own environment (the runner must unset it)."""
    runs = {}
    for command, stray in (("npu_dump", "PRECISION_TOOL_OVERFLOW"), ("npu_overflow", "PRECISION_TOOL_DUMP")):
        ws = tmp_path_factory.mktemp(command) / "precision_data"
        ws.mkdir()
        runs[command] = (ws, run_cli(command, script("flags_train.py"), data=ws,
                                     env={stray: "True", "TF_CPP_MIN_LOG_LEVEL": "2"}))
    return runs


def test_npu_dump_flags_reach_the_training_script(flag_runs) -> None:
    ws, result = flag_runs["npu_dump"]
    assert result.status == 0, result.out + result.err
    lines = result.out.splitlines()
    assert "flag PRECISION_TOOL_DUMP=True" in lines
    assert "flag PRECISION_TOOL_OVERFLOW=<unset>" in lines
    assert f"flag PRECISION_DATA={ws.resolve()}" in lines
    # tf_config built the dump options for action=None, and not the overflow ones
    keys = next(line for line in lines if line.startswith("parameter_map keys:")).split()[2:]
    assert {"enable_dump", "dump_path", "dump_step", "dump_mode"} <= set(keys)
    assert "enable_dump_debug" not in keys
    # the script trained; on the CPU no NPU dump appears, which is said in one line with the way to hook it
    assert "step 1 loss" in result.out
    wrote_nothing = [line for line in lines if "wrote no NPU dumps" in line]
    assert len(wrote_nothing) == 1 and "session_dump_config(config)" in wrote_nothing[0]
    assert "Traceback" not in result.out + result.err


def test_npu_overflow_flags_reach_the_training_script_then_the_check_runs(flag_runs) -> None:
    ws, result = flag_runs["npu_overflow"]
    assert result.status == 0, result.out + result.err
    lines = result.out.splitlines()
    assert "flag PRECISION_TOOL_OVERFLOW=True" in lines and "flag PRECISION_TOOL_DUMP=<unset>" in lines
    keys = next(line for line in lines if line.startswith("parameter_map keys:")).split()[2:]
    assert "enable_dump_debug" in keys and "enable_dump" not in keys
    assert any("wrote no overflow records" in line for line in lines)
    assert any(line.startswith("overflow: no overflow (Opdebug) files") for line in lines)


def test_npu_overflow_shows_the_overflow_check_of_what_the_run_wrote(workspace: Path) -> None:
    result = run_cli("npu_overflow", script("fake_npu_overflow.py"), data=workspace)
    assert result.status == 0, result.out + result.err
    out = result.out
    assert out.index("fake NPU: overflow recorded") < out.index("overflow: 1 overflow record file(s)")
    assert "Add net/add_1" in out and "AIC: floating-point overflow (task 31, stream 2" in out
    assert "wrote no overflow records" not in out
    # the same check as `ac`'s overflow section
    ac = run_cli("ac", data=workspace)
    assert "AIC: floating-point overflow (task 31, stream 2" in ac.out


def test_npu_overflow_after_a_failed_run_still_checks_and_keeps_the_status(workspace: Path) -> None:
    result = run_cli("npu_overflow", script("fake_npu_overflow.py", "4"), data=workspace)
    assert result.status == 4
    assert "Add net/add_1" in result.out
    assert result.out.strip().splitlines()[-1] == (f"npu_overflow: `{script('fake_npu_overflow.py', '4')}` exited "
                                                    "with status 4")


@pytest.mark.parametrize("ending, status", [(("exit", "3"), 3), (("exit", "2"), 2), (("kill", "SIGKILL"), 137)])
def test_one_shot_exits_with_the_training_status(workspace: Path, ending, status) -> None:
    command = script("plain.py", "1", *ending)
    result = run_cli("npu_dump", command, data=workspace)
    assert result.status == status
    assert result.out.strip().splitlines()[-1] == f"npu_dump: `{command}` exited with status {status}"
    assert "Traceback" not in result.out + result.err
    assert "hook the script" not in result.out  # the command failed on its own: no misleading hint


def test_tf_dump_runs_the_golden_script_with_its_status(workspace: Path) -> None:
    command = script("plain.py", "2", "exit", "3")
    result = run_cli("tf_dump", command, data=workspace)
    assert result.status == 3
    assert "training line 1" in result.out
    assert result.out.strip().splitlines()[-1] == f"tf_dump: `{command}` exited with status 3; nothing was extracted"
    # the golden side runs with no capture flag, whatever our own environment holds
    flags = run_cli("tf_dump", script("flags_train.py"), data=workspace,
                    env={"PRECISION_TOOL_DUMP": "True", "TF_CPP_MIN_LOG_LEVEL": "2"})
    assert "flag PRECISION_TOOL_DUMP=<unset>" in flags.out.splitlines()


def test_output_streams_through_in_order(workspace: Path) -> None:
    """The script's lines reach our stdout as it prints them, between our own lines, never captured."""
    command = script("plain.py", "40")
    result = run_cli("npu_dump", command, data=workspace)
    assert result.status == 0
    lines = result.out.splitlines()
    assert lines[0].startswith(f"running `{command}` with PRECISION_TOOL_DUMP=True")
    assert lines[1:41] == [f"training line {n}" for n in range(40)]
    assert "wrote no NPU dumps" in lines[41]


def test_ctrl_c_reaches_the_child_and_ends_with_130(workspace: Path) -> None:
    command = script("plain.py", "1", "wait")
    # A terminal sends Ctrl-C to the foreground process group: the tool and the training command alike
    proc = subprocess.Popen([*CLI, "--data", str(workspace), "npu_dump", command], stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, env=tool_env(), start_new_session=True)
    seen = []
    for line in proc.stdout:
        seen.append(line.rstrip("\n"))
        if line.strip() == "ready":
            os.killpg(proc.pid, signal.SIGINT)
            break
    rest = proc.stdout.read()
    status = proc.wait(timeout=60)
    lines = seen + rest.splitlines()
    assert status == 130
    assert "child got SIGINT" in lines
    assert lines[-1] == f"`{command}` was interrupted (Ctrl-C)"
    assert "Traceback" not in rest


def test_in_the_shell_a_failed_run_is_one_line_and_the_shell_goes_on(workspace: Path) -> None:
    command = script("plain.py", "1", "exit", "3")
    result = run_cli(data=workspace, stdin=f'npu_dump "{command}"\nrun echo after\n')
    lines = result.out.splitlines()
    assert f"npu_dump: `{command}` exited with status 3" in lines
    assert lines[-1] == "after" and result.status == 1


def test_npu_overflow_that_wrote_nothing_says_the_records_shown_are_older(workspace: Path) -> None:
    assert run_cli("npu_overflow", script("fake_npu_overflow.py"), data=workspace).status == 0
    for folder in (workspace / "overflow" / "dump").iterdir():  # an earlier run: not written this second
        os.utime(folder, (time.time() - 3600, time.time() - 3600))
    again = run_cli("npu_overflow", script("plain.py", "1"), data=workspace)
    assert again.status == 0, again.out + again.err
    text = " ".join((again.out + again.err).split())  # warnings may go to stderr, and wrap
    assert "wrote no overflow records into" in text
    assert "(the check below reads the records of earlier runs)" in text
    assert "Add net/add_1" in again.out
