"""`vc` in a real terminal and on a workspace the user cannot write (issue 10, parts 2 and 7).

Ctrl-C is sent in a pseudo-terminal while rows are being written; the read-only workspace is used as the
user nobody (as root) or made read-only with chmod (as a user), as tests/shell does.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pexpect
import pytest

from tests import users

ROOT = Path(__file__).resolve().parents[3]
CLI = str(ROOT / "precision_tool" / "cli.py")
SLOW_CLI = [str(ROOT / "tests" / "slow_dump_reads.py"), "0.002"]  # 2 ms a dump: a run lasts seconds
ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]|\r")


def _env(columns: int) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("PRECISION_TOOL_CONFIG", "PRECISION_DATA")}
    env.update({"NO_COLOR": "1", "TERM": "xterm", "COLUMNS": str(columns), "LINES": "40"})
    return env


def _joined(screen: str) -> str:
    """Prose wrapped by the terminal view back on one line (continuation lines are indented)."""
    return " ".join(line.strip() for line in screen.splitlines())


def _wait_for_rows(folder: Path, rows: int, child: pexpect.spawn) -> Path:
    """The .partial CSV once it holds `rows` rows (polled; the run is long enough not to end first)."""
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline:
        for partial in folder.glob("*/result_*.csv.partial"):
            if partial.read_bytes().count(b"\r\n") > rows:
                return partial
        try:
            child.read_nonblocking(65536, timeout=0.05)  # keep the pty drained
        except (pexpect.TIMEOUT, pexpect.EOF):
            pass
    raise AssertionError("vc never wrote rows")


def test_ctrl_c_during_vc_says_what_was_kept_and_resume_finishes(tmp_path: Path, make_net, cli) -> None:  # type: ignore[no-untyped-def]
    net = make_net(tmp_path / "precision_data", chain=3000)
    shutil.copytree(net.root / "npu" / "debug_0", net.root / "npu" / "debug_1")  # a second run: NPU vs NPU
    results = net.root / "temp" / "vector_compare"
    child = pexpect.spawn(sys.executable, [*SLOW_CLI, "--data", str(net.root), "vc", "-j", "1"], env=_env(100),
                          encoding="utf-8", timeout=120, dimensions=(40, 100))
    partial = _wait_for_rows(results, 20, child)
    child.sendintr()
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 1
    screen = ANSI.sub("", child.before)
    assert "Traceback" not in screen
    said = _joined(screen[screen.index("vc interrupted"):])
    match = re.search(r"vc interrupted \(Ctrl-C\); kept: partial \((\d+) of (\d+) ops\): (\S+) "
                      r"not started: debug_0 vs debug_1 `vc --resume` finishes the run", said)
    assert match, said
    assert match.group(3) == str(partial) and 0 < int(match.group(1)) < int(match.group(2))
    assert partial.is_file()  # kept as it said
    # each path and each kept item on a line of its own
    assert any(line.strip().endswith(str(partial)) for line in screen.splitlines())
    resumed = cli("vc", "--resume", "-j", "1", data=net.root)
    assert resumed.status == 0, resumed.out + resumed.err
    folder = partial.parent
    assert sorted(p.name for p in folder.glob("result_*")) == [f"result_{folder.name}.csv",
                                                              f"result_{folder.name}_npu_vs_npu.csv"]


def test_ctrl_c_during_ac_c_stops_ac_and_vcs_skips_a_run_with_no_rows(tmp_path: Path, make_net, cli) -> None:  # type: ignore[no-untyped-def]
    """Ctrl-C cancels `ac -c` as a whole (the other checks do not run after it); a run interrupted before its
    first row leaves nothing that hides the older, complete results from `vcs`."""
    net = make_net(tmp_path / "precision_data", chain=3000)
    assert cli("vc", "-j", "1", data=net.root).status == 0
    results = net.root / "temp" / "vector_compare"
    child = pexpect.spawn(sys.executable, [*SLOW_CLI, "--data", str(net.root), "ac", "-c"], env=_env(100),
                          encoding="utf-8", timeout=120, dimensions=(40, 100))
    _wait_for_rows(results, 20, child)
    child.sendintr()
    child.expect(pexpect.EOF)
    child.close()
    screen = ANSI.sub("", child.before)
    assert child.exitstatus == 1 and "Traceback" not in screen
    assert "vc interrupted (Ctrl-C); kept:" in screen
    after = screen[screen.index("vc interrupted"):]
    for later_check in ("overflow", "fusion passes", "Cast ops", "comparison recap"):
        assert later_check not in after, after
    # A newer run with a header only (interrupted before its first row) is skipped, and said.
    header_only = results / "29990101000000"
    header_only.mkdir()
    (header_only / "result_29990101000000.csv.partial").write_text("Index,LeftOp\r\n")
    shown = cli("vcs", data=net.root)
    assert shown.status == 0, shown.out + shown.err
    assert "interrupted before any row was compared" in shown.out and str(header_only) in shown.out
    # shown: the newest run with rows (ac's interrupted one, said to be so), never the header-only one
    shown_csvs = re.findall(r"(/\S+\.csv(?:\.partial)?)$", shown.out, re.M)
    assert shown_csvs and not any(c.startswith(str(header_only)) for c in shown_csvs), shown.out
    assert "(interrupted: `vc --resume` finishes it)" in shown.out


@pytest.fixture
def read_only_net(tmp_path: Path, make_net, cli):  # type: ignore[no-untyped-def]
    """A network with one finished comparison, then made read-only; (network, results folder to use)."""
    net = make_net(tmp_path / "precision_data")
    assert cli("vc", "-j", "1", data=net.root).status == 0
    out = tmp_path / "results"
    out.mkdir()
    out.chmod(0o777)  # where the other user may write
    yield net, out
    users.make_writable_again(net.root)


def _as_other_user(args: list[str], workspace: Path, out: Path) -> subprocess.CompletedProcess:
    command = users.read_only_user_command([sys.executable, CLI, "--data", str(workspace), *args], workspace)
    if os.geteuid() == 0:
        command = users.as_nobody([sys.executable, CLI, "--data", str(workspace), *args], reach=[workspace, out])
    env = {k: v for k, v in _env(80).items() if k not in ("PRECISION_TOOL_HISTORY", "PRECISION_TOOL_HOME")}
    return subprocess.run(command, capture_output=True, text=True, env=env, cwd="/", timeout=600)


def test_read_only_workspace_vc_says_where_it_cannot_write_and_readers_work(read_only_net) -> None:  # type: ignore[no-untyped-def]
    net, out = read_only_net
    results = net.root / "temp" / "vector_compare"
    before = sorted(results.iterdir())
    refused = _as_other_user(["vc", "-j", "1"], net.root, out)
    assert refused.returncode == 1, refused.stdout + refused.stderr
    text = refused.stdout + refused.stderr
    assert "Traceback" not in text
    lines = [line for line in text.splitlines() if line.strip()]
    assert lines == [
        f"cannot write the comparison results folder {results}: Permission denied; add `-o DIR` to write the "
        "results to another folder (`vcs -f DIR` reads them), or choose another workspace with --data DIR"], lines
    assert sorted(results.iterdir()) == before
    # -o DIR: the comparison runs and writes there; vcs -f DIR reads it
    elsewhere = _as_other_user(["vc", "-j", "1", "-o", str(out)], net.root, out)
    assert elsewhere.returncode == 0, elsewhere.stdout + elsewhere.stderr
    written = sorted(out.glob("*/result_*.csv"))
    assert len(written) == 1 and str(written[0]) in elsewhere.stdout
    for args in (["vcs"], ["vcs", "-f", str(out)]):
        shown = _as_other_user(args, net.root, out)
        assert shown.returncode == 0 and "first divergent op: [3] relu1/Relu" in shown.stdout, shown.stdout + shown.stderr
    dump = next(p.name for p in net.dump_dir.iterdir() if ".relu1_Relu." in p.name)
    golden = next(p.name for p in net.golden_dir.iterdir() if p.name.startswith("relu1_Relu.0."))
    pair = _as_other_user(["cp", f"{dump}:output:0", golden], net.root, out)
    assert pair.returncode == 0 and "CosineSimilarity" in pair.stdout, pair.stdout + pair.stderr
    saved = _as_other_user(["cp", f"{dump}:output:0", golden, "-s"], net.root, out)
    assert saved.returncode == 1 and "Traceback" not in saved.stdout + saved.stderr
    assert (f"cannot write the cp -s folder {net.root}/temp/tensor_compare: Permission denied; run cp without -s"
            in saved.stdout + saved.stderr)
