"""The original tool's spellings (its CANN guide, README, cli.py and interactive_cli.py) on the demo workspace:
each is one of ours, none is an unknown command or option."""

from __future__ import annotations

import io
import re
from pathlib import Path

import pytest

from precision_tool.config import load_settings
from precision_tool.render.console import make_console
from precision_tool.shell.command import Context
from precision_tool.shell.dispatch import execute
from precision_tool.shell.table import build_table
from precision_tool.workspace import Workspace
from tests.conftest import run_cli


def _run(workspace: Path, line: str) -> tuple[bool, str]:
    """One line through the dispatcher, as the shell runs it; (ok, what it printed)."""
    out = io.StringIO()
    ctx = Context(settings=load_settings(data_dir=str(workspace)), workspace=Workspace(workspace),
                  console=make_console(file=out, width=200), table=build_table())
    outcome = execute(line, ctx, passthrough=False)
    return outcome.ok, out.getvalue()


def _names(ws: Path) -> dict[str, str]:
    dump = next((ws / "npu" / "debug_0" / "dump").rglob("Conv2D.conv2_Conv2D.*")).name
    golden = next((ws / "tf" / "dump").glob("conv2_Conv2D.0.*.npy")).name
    return {"dump": dump, "golden": golden, "op": "conv2/Conv2D"}


# Every command line the guides show, with their placeholders filled in from the demo.
GUIDE_LINES = [
    "ac -c", "ac -l 3 -c", "ac -l 2",  # original-guide.zh.md steps 5-6, README 1
    "vcs -f {results} -c 0.98 -l 3", "vcs -c 0.98 -l 2",  # guide step 6, README 8
    "vcs --file {results} --cos_sim 0.9 --limit 1",  # the original's long options
    "ni -n {op} -s 2", "ni {op} -s 2", "ni {op}", "ni -n {op} -g graph -a",  # guide step 7, README 4
    "ls -t Conv2D -n conv -f Tbe", "ls -k conv",  # README 3
    "run echo ok",  # README 2 (run vim cli.py)
    "pt {dump}.output.0.npy", "pt -n {dump}.input.0.npy", "pt {golden}", "pt -n {golden} -c",  # README 5
    "cp {dump}.output.0.npy {golden} -p 10 -s -al 0.002 -rl 0.005",  # README 6
    "cp -n {dump}.output.0.npy {golden} -p 10", "compare -n {dump}.output.0.npy {golden}",
    "vc -lt {npu} -rt {tf} -g {graph}", "vector_compare -lt {npu} -rt {tf}",  # README 7, cli.py vector_compare
    "dc -n {dump}", "dc {dump} -f NCHW -o {out}",  # interactive_cli's `dc (-n) NAME -f FORMAT`
]


@pytest.fixture(scope="module")
def demo_lines(demo_workspace: Path, tmp_path_factory) -> list[tuple[str, bool, str]]:
    ws = demo_workspace
    names = _names(ws)
    values = {**names, "npu": next((ws / "npu" / "debug_0" / "dump").rglob("Conv2D.*")).parent,
              "tf": ws / "tf" / "dump", "graph": next((ws / "npu" / "debug_0" / "graph").glob("*_Build.txt")),
              "out": tmp_path_factory.mktemp("dc_out")}
    done = []
    for line in GUIDE_LINES:  # in order: `ac -c` writes the results `vcs -f` reads
        if "{results}" in line:
            values["results"] = sorted((ws / "temp" / "vector_compare").iterdir())[-1]
        line = line.format(**values)
        done.append((line, *_run(ws, line)))
    return done


def test_every_guide_line_is_a_known_command_and_option(demo_lines) -> None:
    for line, ok, out in demo_lines:
        assert "unknown command" not in out and "unrecognized arguments" not in out, (line, out)
        assert ok, (line, out)


def test_decoded_names_read_the_dump_tensor(demo_lines) -> None:
    """pt DUMPFILE.output.0.npy before any decode: that tensor of the dump, with a note saying so."""
    line, _, out = next(item for item in demo_lines if item[0].startswith("pt ") and ".output.0.npy" in item[0])
    assert "is not decoded yet: reading" in out and ":output:0 from the dump file" in out


def test_ni_check_replays_the_op(demo_workspace: Path) -> None:
    """The original's single-op check (`ni -c`), which it declares and never wires up, replays the op."""
    ok, out = _run(demo_workspace, "ni -c conv2/Conv2D")
    assert ok, out
    assert re.search(r"^replay \[\d+\] conv2/Conv2D \(Conv2D\): OK$", out, re.M), out


def test_original_one_shots(demo_workspace: Path, tmp_path: Path) -> None:
    names = _names(demo_workspace)
    ws = str(demo_workspace)
    # cli.py compare -n A B, cli.py vector_compare -lt .. -rt .., cli.py data DIR, cli.py tf_dump
    compared = run_cli("--data", ws, "compare", "-n", f"{names['dump']}:output:0", names["golden"])
    assert compared.status == 0 and "cosine" in compared.out.lower(), compared.out
    vector = run_cli("--data", ws, "vector_compare", "-lt", str(next((demo_workspace / "npu" / "debug_0" / "dump")
                     .rglob("Conv2D.*")).parent), "-rt", str(demo_workspace / "tf" / "dump"), "-o", str(tmp_path))
    assert vector.status == 0, vector.out
    # `data DIR` without a terminal: the shell on DIR reads its commands from stdin
    data = run_cli("data", ws, stdin=f"pt {names['golden']}\n")
    assert data.status == 0 and "shape" in data.out.lower(), data.out
    assert data.out.splitlines()[0] == f"workspace: {ws}"
    assert run_cli("tf_dump", data=demo_workspace).status == 0


def test_data_without_a_folder_is_one_line(tmp_path: Path) -> None:
    result = run_cli("data", str(tmp_path / "nope"))
    assert result.status == 1
    assert result.out.strip() == (f"data: {tmp_path / 'nope'} does not exist; give a workspace folder "
                                  f"(`demo {tmp_path / 'nope'}` builds an example there)")


def test_data_in_a_terminal_opens_the_shell_on_the_folder(tmp_path: Path) -> None:
    import sys

    import pexpect

    from tests.shell.commands.capture.conftest import ROOT, tool_env

    ws = tmp_path / "ws"
    (ws / "npu").mkdir(parents=True)
    env = tool_env(TERM="xterm", PROMPT_TOOLKIT_NO_CPR="1", PRECISION_TOOL_HISTORY=str(tmp_path / "history"))
    child = pexpect.spawn(sys.executable, [str(ROOT / "precision_tool" / "cli.py"), "data", str(ws)], env=env,
                          encoding="utf-8", timeout=30, dimensions=(40, 200), cwd=str(tmp_path))
    try:
        child.expect_exact(f"workspace: {ws}")
        child.expect_exact("PrecisionTool >")
        child.sendline("exit")
        child.expect(pexpect.EOF)
    finally:
        child.close(force=True)
    assert child.exitstatus == 0
