"""`explore` opened in a real browser: Debian's headless Chromium driven by playwright, on the page the
command itself serves (a subprocess of the one-shot CLI). Own fixtures: the report's are not imported."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any, Iterator

import pytest

ROOT = Path(__file__).resolve().parents[4]
CHROMIUM = os.environ.get("PRECISION_TOOL_CHROMIUM") or shutil.which("chromium") or "/usr/bin/chromium"
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]


def _missing() -> str | None:
    import importlib.util

    if importlib.util.find_spec("model_explorer") is None:
        return "Model Explorer is not installed: pip install ai-edge-model-explorer (scripts/setup.sh installs it)"
    if importlib.util.find_spec("playwright") is None:
        return "playwright is not installed: pip install playwright (scripts/setup.sh installs it)"
    if not Path(CHROMIUM).is_file():
        return f"headless Chromium not found at {CHROMIUM}: apt-get install chromium"
    return None


@pytest.fixture(scope="session")
def explore_browser() -> Iterator[Any]:
    missing = _missing()
    if missing:
        pytest.skip(missing)
    from playwright.sync_api import sync_playwright

    with sync_playwright() as driver:
        chromium = driver.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield chromium
        chromium.close()


@pytest.fixture(scope="module")
def explore_workspace(demo_workspace: Path, tmp_path_factory) -> Path:
    """A copy of the demo workspace (explore writes temp/explore/ into it)."""
    copy = tmp_path_factory.mktemp("explore") / "ws"
    shutil.copytree(demo_workspace, copy, symlinks=True)
    return copy


class Served:
    def __init__(self, process: subprocess.Popen, address: str, lines: list[str]) -> None:
        self.process, self.address, self.lines = process, address, lines


@pytest.fixture(scope="module")
def served(explore_workspace: Path) -> Iterator[Served]:
    """`explore --no-open --port 0` running; its address read from what it prints; Ctrl-C at the end."""
    if _missing():
        pytest.skip(_missing())
    env = {k: v for k, v in os.environ.items() if k not in ("PRECISION_TOOL_CONFIG", "PRECISION_DATA")}
    env.update({"COLUMNS": "100000", "NO_COLOR": "1"})
    process = subprocess.Popen([sys.executable, str(ROOT / "precision_tool" / "cli.py"), "--data",
                                str(explore_workspace), "explore", "--no-open", "--port", "0"],
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env, cwd=ROOT)
    lines: list[str] = []
    address = ""
    assert process.stdout is not None
    for line in process.stdout:
        lines.append(line)
        if "serving at " in line:
            address = line.split("serving at ", 1)[1].strip()
            break
    assert address, "".join(lines)
    yield Served(process, address, lines)
    process.send_signal(signal.SIGINT)
    rest, _ = process.communicate(timeout=30)
    lines.append(rest)
