"""Fixtures shared by every test: the one-shot CLI in a subprocess, and the msaccucmp reference tool."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
ANCHOR_SETUP = ROOT.parent / "shared" / "tools" / "msaccucmp-anchor" / "setup.sh"

# A test run started in the background of a non-interactive shell (`cmd &`, `su -c ... &`) inherits SIGINT
# ignored, and so would every program it starts: the Ctrl-C tests would test the harness, not the tool.
# Ctrl-C in a terminal reaches a program with SIGINT at its default; give the children that.
if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)


# Set in os.environ when a test imports TensorFlow 2 in this process (seen with TF 2.21); a user's shell
# has none of them, and TF2_BEHAVIOR=1 turns a TensorFlow 1.15 child into TF2 (resource variables, eager).
TF_IMPORT_LEFTOVERS = ("TF2_BEHAVIOR", "TPU_ML_PLATFORM", "TPU_ML_PLATFORM_VERSION")


@dataclass
class CliResult:
    status: int
    out: str
    err: str


def run_cli(*args: str, data: Path | None = None, stdin: str | None = None,
            cwd: Path | None = None, env: dict[str, str] | None = None, timeout: float = 600) -> CliResult:
    """Run `python3 precision_tool/cli.py` from the checkout, as a user of the original would."""
    command = [sys.executable, str(ROOT / "precision_tool" / "cli.py")]
    if data is not None:
        command += ["--data", str(data)]
    command += list(args)
    full_env = {k: v for k, v in os.environ.items() if k not in ("PRECISION_TOOL_CONFIG", "PRECISION_DATA")
                and k not in TF_IMPORT_LEFTOVERS}
    full_env.update({"COLUMNS": "200", "NO_COLOR": "1", **(env or {})})
    proc = subprocess.run(command, input=stdin, capture_output=True, text=True,
                          cwd=cwd or ROOT, env=full_env, timeout=timeout)
    return CliResult(proc.returncode, proc.stdout, proc.stderr)


@pytest.fixture
def cli():
    return run_cli


@dataclass
class DemoRun:
    root: Path
    status: int
    out: str
    err: str


def run_demo_cli(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in ("PRECISION_TOOL_CONFIG", "PRECISION_DATA")}
    env.update({"COLUMNS": "200", "NO_COLOR": "1"})
    command = [sys.executable, str(ROOT / "precision_tool" / "cli.py"), *args]
    return subprocess.run(command, capture_output=True, text=True, cwd=cwd or ROOT, env=env, timeout=900)


@pytest.fixture(scope="session")
def demo_run(tmp_path_factory) -> DemoRun:
    """The demo workspace, built once per test session through the one-shot CLI (`demo DIR`, with `ac -c`)."""
    root = tmp_path_factory.mktemp("demo") / "precision_data_demo"
    proc = run_demo_cli("demo", str(root))
    return DemoRun(root, proc.returncode, proc.stdout, proc.stderr)


@pytest.fixture(scope="session")
def demo_workspace(demo_run: DemoRun) -> Path:
    assert demo_run.status == 0, demo_run.out[-3000:] + demo_run.err[-3000:]
    return demo_run.root


@pytest.fixture(scope="session")
def multi_step_workspace(demo_workspace: Path, tmp_path_factory) -> Path:
    """The demo dumped over two steps, step 1 diverging first (tests/tools/step_workspace.py); copy it
    before writing into it."""
    from tests.tools.step_workspace import build

    return build(demo_workspace, tmp_path_factory.mktemp("steps") / "ws")


@pytest.fixture(scope="session")
def reference_tool(tmp_path_factory) -> Path:
    """The msaccucmp wrapper built by the anchor script ($MSACCUCMP overrides; built once per run)."""
    if os.environ.get("MSACCUCMP"):
        return Path(os.environ["MSACCUCMP"])
    # Kept across runs (setup.sh is idempotent), so only the first run pays for installing it.
    default = Path.home() / ".cache" / "precision_tool" / "msaccucmp-anchor"
    target = os.environ.get("MSACC_ANCHOR") or str(default)
    if not ANCHOR_SETUP.is_file():
        raise RuntimeError(f"the reference tool's anchor script is not at {ANCHOR_SETUP} (the checkout's sibling "
                           "folder shared/): clone next to it, or set MSACCUCMP to a built msaccucmp wrapper")
    proc = subprocess.run(["bash", str(ANCHOR_SETUP), target], capture_output=True, text=True, timeout=1200)
    if proc.returncode != 0:
        raise RuntimeError(f"anchor setup failed: {proc.stderr[-2000:]}")
    return Path(proc.stdout.strip().splitlines()[-1])


@pytest.fixture(scope="session")
def pb2(tmp_path_factory):  # type: ignore[no-untyped-def]
    """Ascend's own dump proto (tests/tools/AclDumpMsg.proto) compiled with protoc, once per run."""
    from tests.tools import real_dumps

    return real_dumps.compile_proto(tmp_path_factory.mktemp("proto"))
