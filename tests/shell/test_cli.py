"""One-shot and stdin modes, configuration and bad input, through the real entry points."""

from __future__ import annotations

import os
import subprocess
import sys

from precision_tool import __version__


def test_one_shot_help_and_exit_status(cli, tmp_path):
    result = cli("help", data=tmp_path)
    assert result.status == 0
    assert "ac" in result.out and "run" in result.out
    result = cli("nosuchcommand", data=tmp_path)
    assert result.status == 1
    assert result.out.strip() == "unknown command 'nosuchcommand'; type `help` for the commands"


def test_one_shot_command_help(cli, tmp_path):
    result = cli("ac", "-h", data=tmp_path)
    assert result.status == 0 and result.out.startswith("usage: ac")
    # -h wins over a missing required argument, and an alias names itself
    result = cli("dc", "-h", data=tmp_path)
    assert result.status == 0 and result.out.startswith("usage: dc")
    result = cli("quit", "now", data=tmp_path)
    assert result.status == 1 and result.out.startswith("quit: unrecognized arguments: now")


def test_unknown_option_is_one_line(cli, tmp_path):
    result = cli("ac", "--bogus", data=tmp_path)
    assert result.status == 1
    assert result.out.strip().splitlines() == ["ac: unrecognized arguments: --bogus (see `ac -h`)"]


def test_wrong_number_of_arguments_is_one_line(cli, tmp_path):
    result = cli("help", "ac", "ls", data=tmp_path)
    assert result.status == 1
    assert len(result.out.strip().splitlines()) == 1 and "unrecognized arguments: ls" in result.out


def test_bad_data_path(cli, tmp_path):
    not_a_folder = tmp_path / "file.txt"
    not_a_folder.write_text("x")
    result = cli("help", data=not_a_folder)
    assert result.status == 1
    assert result.out.strip() == f"workspace {not_a_folder} is a file, not a folder; pass a folder with --data DIR"


def test_version(cli):
    result = cli("--version")
    assert result.status == 0 and result.out.strip() == f"PrecisionTool {__version__}"


def test_stdin_mode_runs_lines_and_reports_failure(cli, tmp_path):
    result = cli(data=tmp_path, stdin="run echo first\n# a comment\n\nrun echo second\n")
    assert result.status == 0
    assert result.out.splitlines() == ["first", "second"]
    result = cli(data=tmp_path, stdin="nosuch\nrun echo after\n")
    assert result.status == 1  # a failed line fails the script, the rest still runs
    assert "unknown command 'nosuch'" in result.out and "after" in result.out
    result = cli(data=tmp_path, stdin="run echo one\nexit\nrun echo never\n")
    assert "never" not in result.out


def test_shell_passthrough_failure_status(cli, tmp_path):
    result = cli("run", "exit 3", data=tmp_path)
    assert result.status == 1 and "exited with status 3" in result.out


def test_config_file_from_env(cli, tmp_path):
    config = tmp_path / "my_config.py"
    config.write_text("ROOT_DIR = '%s'\nCOSINE_THRESHOLD = 0.9\n" % (tmp_path / "ws"))
    result = cli(stdin="run echo ok\n", env={"PRECISION_TOOL_CONFIG": str(config)})
    assert result.status == 0, result.out


def test_config_errors_are_one_line(cli, tmp_path):
    config = tmp_path / "config.py"
    cases = {
        "ROOT_DIR = (\n": "has a syntax error at line 1",
        "COSINE_THRESHOLD = 'high'\n": "setting COSINE_THRESHOLD in",
        "COSINE_TRESHOLD = 0.9\n": "unknown setting COSINE_TRESHOLD (did you mean COSINE_THRESHOLD?)",
        "WORKERS = 1.5\n": "must be int, got float",
        "raise ValueError('boom')\n": "failed while running: ValueError: boom",
    }
    for text, expected in cases.items():
        config.write_text(text)
        result = cli("help", cwd=tmp_path)  # config.py in the working directory is picked up
        assert result.status == 1, text
        lines = result.out.strip().splitlines()
        assert len(lines) == 1 and expected in lines[0], (text, result.out)
    result = cli("help", env={"PRECISION_TOOL_CONFIG": str(tmp_path / "absent.py")})
    assert result.status == 1 and "does not exist" in result.out


def test_python_dash_m_is_equivalent(tmp_path):
    proc = subprocess.run([sys.executable, "-m", "precision_tool", "--data", str(tmp_path), "help"],
                          capture_output=True, text=True, env={"NO_COLOR": "1", "PATH": "/usr/bin:/bin",
                                                               "PYTHONPATH": str(__import__("pathlib").Path(__file__).resolve().parents[2])})
    assert proc.returncode == 0 and "auto check" in proc.stdout


def test_workspace_whose_temp_is_a_file_still_runs(cli, tmp_path):
    # A workspace whose temp/ is a file makes writing the log and history impossible; still no traceback.
    (tmp_path / "temp").write_text("not a folder")
    result = cli(data=tmp_path, stdin="run echo fine\n")
    assert result.status == 0 and "Traceback" not in result.out + result.err


def _runs_sleep(pid: int) -> bool:
    """Whether `sleep` runs below process `pid` (child or grandchild, through the shell of `run`)."""
    from pathlib import Path

    try:
        for task in Path(f"/proc/{pid}/task").iterdir():
            for child in (task / "children").read_text().split():
                if Path(f"/proc/{child}/cmdline").read_bytes().startswith(b"sleep") or _runs_sleep(int(child)):
                    return True
    except OSError:  # a process ended while we looked
        pass
    return False


def test_ctrl_c_at_any_moment_ends_without_a_traceback(tmp_path):
    """Interrupted early or late while importing, or while running: never a traceback.

    The moments are events, not delays: `-X importtime` reports each finished import on stderr, and the
    running command is there once `sleep` is a child. (Before Python has imported `site` Ctrl-C is
    CPython's own "Fatal Python error", whatever the program; no moment here falls in that window.)
    """
    import os
    import signal
    from pathlib import Path

    cli_path = Path(__file__).resolve().parents[2] / "precision_tool" / "cli.py"
    for moment in ("precision_tool.errors", "precision_tool.shell.table", "running"):
        # its own process group, signalled as a whole: what Ctrl-C in a terminal does
        proc = subprocess.Popen([sys.executable, "-X", "importtime", str(cli_path), "--data", str(tmp_path), "run",
                                 "sleep 20"],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                env={**os.environ, "NO_COLOR": "1"}, start_new_session=True)
        err = ""
        if moment == "running":
            while proc.poll() is None and not _runs_sleep(proc.pid):
                pass
        else:
            for line in proc.stderr:
                err += line
                if line.rstrip().endswith(f"| {moment}") or line.rstrip().endswith(f"  {moment}"):
                    break
        os.killpg(proc.pid, signal.SIGINT)
        out, rest = proc.communicate(timeout=15)
        err = "\n".join(line for line in (err + rest).splitlines() if not line.startswith("import time:"))
        assert "Traceback" not in out + err, (moment, out, err)
        assert proc.returncode in (1, 130), (moment, proc.returncode)


def test_a_bad_top_level_option_is_one_line_and_status_1(tmp_path):
    from pathlib import Path

    cli = Path(__file__).resolve().parents[2] / "precision_tool" / "cli.py"
    for args, said in ((["--bogus"], "unrecognized arguments: --bogus"), (["--data"], "--data needs a value")):
        proc = subprocess.run([sys.executable, str(cli), *args], capture_output=True, text=True, cwd=tmp_path)
        assert proc.returncode == 1
        assert proc.stderr == f"precision-tool: {said} (see `precision-tool -h`)\n" and proc.stdout == ""


def test_a_deleted_current_folder_is_one_line(tmp_path):
    """A shell still sitting in a folder that was deleted: one line saying so, no traceback."""
    import subprocess
    import sys

    from tests.conftest import ROOT

    gone = tmp_path / "gone"
    gone.mkdir()
    proc = subprocess.run(["sh", "-c", f'cd "{gone}" && rmdir "{gone}" && exec "$0" "$1" ls',
                           sys.executable, str(ROOT / "precision_tool" / "cli.py")],
                          capture_output=True, text=True, timeout=120, env={**os.environ, "NO_COLOR": "1"})
    assert proc.returncode == 1
    assert "Traceback" not in proc.stdout + proc.stderr
    assert "the current folder no longer exists (deleted or moved)" in proc.stdout + proc.stderr


def test_leaving_without_teardown_still_does_what_an_exit_must(tmp_path):
    # leave() skips the interpreter's teardown (seconds of freeing after a big comparison), but the
    # atexit handlers still run, buffered output still comes out, a working thread is still waited for,
    # and the status is the command's
    script = f"""
import atexit, sys, threading, time
from precision_tool.shell.main import leave
atexit.register(lambda: open({str(tmp_path / 'atexit')!r}, 'w').write('ran'))
def work():
    time.sleep(0.3)
    open({str(tmp_path / 'thread')!r}, 'w').write('done')
threading.Thread(target=work).start()
sys.stdout.write('buffered, no newline')
leave(3)
"""
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 3
    assert proc.stdout == "buffered, no newline"
    assert (tmp_path / "atexit").read_text() == "ran" and (tmp_path / "thread").read_text() == "done"
    assert proc.stderr == ""
    # nothing running: the same, by os._exit
    quick = script.replace("threading.Thread(target=work).start()", "work()")
    proc = subprocess.run([sys.executable, "-c", quick], capture_output=True, text=True, timeout=60)
    assert (proc.returncode, proc.stdout, proc.stderr) == (3, "buffered, no newline", "")


_WITHOUT_NUMPY = """
import sys
class NoNumpy:
    def find_spec(self, name, path=None, target=None):
        if name == "numpy" or name.startswith("numpy."):
            raise ImportError("numpy imported by a command that needs no tensor")
sys.meta_path.insert(0, NoNumpy())
sys.argv = ["cli.py", *sys.argv[1:]]
sys.path.insert(0, {root!r})
from precision_tool.shell.main import run
run()
"""


def test_vcs_starts_without_numpy(cli, demo_workspace, tmp_path):
    """`vcs` reads result CSVs and kept digests, never a tensor: it does not import numpy (50-60 ms of its
    start, more on a busy machine), and says the same as with it. (`ac` imports it only for a section that
    reads tensors.)"""
    from pathlib import Path

    script = tmp_path / "no_numpy.py"
    script.write_text(_WITHOUT_NUMPY.format(root=str(Path(__file__).resolve().parents[2])))
    env = {k: v for k, v in os.environ.items() if k not in ("PRECISION_TOOL_CONFIG", "PRECISION_DATA")}
    env.update({"COLUMNS": "200", "NO_COLOR": "1"})
    for command in (["vcs"], ["vcs", "-l", "2"], ["vcs", "-c", "0.5"]):
        proc = subprocess.run([sys.executable, str(script), "--data", str(demo_workspace), *command],
                              capture_output=True, text=True, env=env, timeout=300)
        usual = cli(*command, data=demo_workspace)
        assert (proc.returncode, proc.stdout) == (usual.status, usual.out), proc.stderr[-2000:]
        assert "numpy imported" not in proc.stdout + proc.stderr
