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
def explore_browser() -> Any:
    """run(check) → check(browser)'s result, with a Chromium of its own driven from a thread of its own: the
    report's browser fixture keeps a playwright driver running on this thread for the whole session, and a
    second one cannot start beside it on the same thread."""
    missing = _missing()
    if missing:
        pytest.skip(missing)

    def run(check: Any) -> Any:
        import threading

        from playwright.sync_api import sync_playwright

        outcome: dict[str, Any] = {}

        def drive() -> None:
            try:
                with sync_playwright() as driver:
                    chromium = driver.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
                    try:
                        outcome["value"] = check(chromium)
                    finally:
                        chromium.close()
            except BaseException as exc:  # an assertion in check() fails the test, with its traceback
                outcome["error"] = exc

        thread = threading.Thread(target=drive, name="explore-browser")
        thread.start()
        thread.join(600)
        assert not thread.is_alive(), "the browser check did not finish in 10 minutes"
        if "error" in outcome:
            raise outcome["error"]
        return outcome.get("value")

    return run


@pytest.fixture(scope="module")
def explore_workspace(demo_workspace: Path, tmp_path_factory) -> Path:
    """A copy of the demo workspace (explore writes temp/explore/ into it)."""
    copy = tmp_path_factory.mktemp("explore") / "ws"
    shutil.copytree(demo_workspace, copy, symlinks=True)
    # the comparison `demo` made and `ac -c` replayed is the one shown: a `vc` of an earlier test of the session
    # may have left a newer one (without replay verdicts) in the shared demo workspace
    results = copy / "temp" / "vector_compare"
    for folder in [f for f in results.iterdir() if f.is_dir() and not (f / "replay").is_dir()]:
        shutil.rmtree(folder)
    assert any(results.iterdir()), f"no comparison with replay verdicts in {demo_workspace}"
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
