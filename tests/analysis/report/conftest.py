"""The report's pages opened in a real browser: Debian's headless Chromium driven by playwright.

`scripts/setup.sh` installs both (chromium through apt-get when root). Without them the browser tests are
skipped with the reason saying what to install; CI has them.
"""

from __future__ import annotations

import os
import shutil
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator

import pytest

CHROMIUM = os.environ.get("PRECISION_TOOL_CHROMIUM") or shutil.which("chromium") or "/usr/bin/chromium"
# Flags of a headless Chromium on a machine without a screen or internet (no sandbox as root; no
# background connections, which a closed network refuses many times a second).
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]


def _missing() -> str | None:
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        return "playwright is not installed: pip install playwright (scripts/setup.sh installs it)"
    if not Path(CHROMIUM).is_file():
        return (f"headless Chromium not found at {CHROMIUM}: apt-get install chromium (scripts/setup.sh does it "
                "as root), or set PRECISION_TOOL_CHROMIUM to a Chromium binary")
    return None


@dataclass
class OpenedPage:
    page: Any
    errors: list[str] = field(default_factory=list)
    load_seconds: float = 0.0


@pytest.fixture(scope="session")
def browser() -> Iterator[Any]:
    missing = _missing()
    if missing:
        pytest.skip(missing)
    from playwright.sync_api import sync_playwright

    with sync_playwright() as driver:
        chromium = driver.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield chromium
        chromium.close()


@pytest.fixture
def open_report(browser: Any) -> Iterator[Any]:
    """open_report(path, width=1300) → OpenedPage, loaded and drawn; console errors are collected."""
    contexts = []

    def opened(path: Path, width: int = 1300, height: int = 900) -> OpenedPage:
        context = browser.new_context(viewport={"width": width, "height": height})
        contexts.append(context)
        page = context.new_page()
        result = OpenedPage(page)
        page.on("console", lambda m: result.errors.append(m.text) if m.type == "error" else None)
        page.on("pageerror", lambda e: result.errors.append(str(e)))
        page.on("dialog", lambda d: (result.errors.append(f"dialog: {d.message}"), d.dismiss()))
        # anything fetched from the network would be a page that is not self-contained
        page.route("http*://**", lambda route: (result.errors.append(f"fetched {route.request.url}"), route.abort()))
        started = time.perf_counter()
        page.goto(path.resolve().as_uri())
        page.wait_for_selector("body[data-ready=yes]", timeout=120_000)
        result.load_seconds = time.perf_counter() - started
        return result

    yield opened
    for context in contexts:
        context.close()
