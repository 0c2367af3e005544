"""`explore` at scale (issue 32: the 20,000-op workspace and the real networks open, a search finds an op by
name in under a second, load times quoted).

For each workspace: `explore --no-serve` (the graph JSON, node data and mapping written), then `explore
--no-open --port 0` served and opened in headless Chromium, timing
- ready: navigation until Model Explorer has processed both graphs and explore's boot script is done;
- first op: until the first divergent op is selected and drawn in the NPU pane;
- find: explore's find box, the name looked up (ms) and the op selected and drawn (s), for an op near the
  end of the graph;
- the reference beside it: Model Explorer's own search box on the same name (it tests every node's label,
  attributes and metadata), until its result is listed (`--no-reference` skips it). Showing the op is
  Model Explorer's own work either way: revealing it lays out every layer around it.

Workspaces: by default benchmarks/big_workspace.py's (20,000 ops, built here, compared with `vc`) and
the demo's (built with `demo`); `--workspace DIR` (repeatable) times existing ones instead (explore writes
temp/explore/ into a copy of DIR's temp/, beside links to the rest).

Run: python3 benchmarks/bench_explore.py [--ops 20000] [--workspace DIR]... [--no-reference]
Needs Model Explorer (pip install precision-tool[explore]), playwright and Debian's chromium (all three
installed by scripts/setup.sh).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

CLI = [sys.executable, str(ROOT / "precision_tool" / "cli.py")]
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]
FIND_TARGET_S = 1.0
WAIT_MS = 600_000


def cli_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("PRECISION_TOOL_CONFIG", "PRECISION_DATA")}
    env.update({"COLUMNS": "100000", "NO_COLOR": "1"})
    return env


def build_big(root: Path, ops: int) -> Path:
    from big_workspace import make_workspace

    make_workspace(root, ops=ops)
    proc = subprocess.run([*CLI, "--data", str(root), "vc"], capture_output=True, text=True, env=cli_env())
    if proc.returncode != 0:
        raise SystemExit(f"vc failed: {proc.stdout[-1500:]} {proc.stderr[-1500:]}")
    return root


def build_demo(root: Path) -> Path:
    proc = subprocess.run([*CLI, "demo", str(root)], capture_output=True, text=True, env=cli_env())
    if proc.returncode != 0:
        raise SystemExit(f"demo failed: {proc.stdout[-1500:]} {proc.stderr[-1500:]}")
    return root


def files_step(root: Path) -> tuple[float, dict[str, Any], Path]:
    started = time.perf_counter()
    proc = subprocess.run([*CLI, "--data", str(root), "explore", "--no-serve"], capture_output=True, text=True,
                          env=cli_env())
    seconds = time.perf_counter() - started
    if proc.returncode != 0:
        raise SystemExit(f"explore --no-serve failed: {proc.stdout[-1500:]} {proc.stderr[-1500:]}")
    folder = sorted((root / "temp" / "explore").iterdir())[-1]
    return seconds, json.loads((folder / "explore.json").read_text()), folder


def serve(root: Path) -> tuple[subprocess.Popen, str]:
    process = subprocess.Popen([*CLI, "--data", str(root), "explore", "--no-open", "--port", "0"],
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=cli_env())
    assert process.stdout is not None
    for line in process.stdout:
        if "serving at " in line:
            return process, line.split("serving at ", 1)[1].strip()
    raise SystemExit(f"explore did not serve: {process.communicate()[0][-1500:]}")


def page_times(address: str, first: str, target: str, chromium: str, reference: bool) -> dict[str, Any]:
    from playwright.sync_api import sync_playwright

    out: dict[str, Any] = {"off_machine": [], "errors": []}
    with sync_playwright() as driver:
        browser = driver.chromium.launch(executable_path=chromium, args=CHROMIUM_ARGS)
        page = browser.new_context(viewport={"width": 1600, "height": 1000}).new_page()
        page.on("pageerror", lambda e: out["errors"].append(str(e)))
        page.route(lambda url: not url.startswith(("http://127.0.0.1", "data:", "blob:")),
                   lambda route: (out["off_machine"].append(route.request.url), route.abort()))
        started = time.perf_counter()
        page.goto(address)
        page.wait_for_selector("body[data-explore-ready=yes]", timeout=WAIT_MS)
        out["ready_s"] = time.perf_counter() - started
        page.wait_for_function(f"() => window.me_test.renderers[0].selectedNodeId === {first!r}", timeout=WAIT_MS)
        out["first_s"] = time.perf_counter() - started
        started = time.perf_counter()
        page.fill("#precision-find input", target)
        page.press("#precision-find input", "Enter")
        page.wait_for_function(f"() => window.me_test.renderers[0].selectedNodeId === {target!r}", timeout=WAIT_MS)
        out["find_s"] = time.perf_counter() - started
        out["find_ms"] = page.evaluate("() => window.precisionExplore.lastFind.ms")
        if reference:  # the same name in Model Explorer's own search box, until its result is listed
            box = page.locator("input[placeholder*='Search nodes']").first
            started = time.perf_counter()
            box.fill(f"^{target}$")
            page.locator("io-tree").get_by_text(target, exact=True).first.wait_for(timeout=WAIT_MS)
            out["reference_s"] = time.perf_counter() - started
        browser.close()
    return out


def measure(label: str, root: Path, chromium: str, reference: bool) -> None:
    files_s, info, folder = files_step(root)
    nodes = json.loads((folder / "npu_graph.json").read_text())["graphs"][0]["nodes"]
    first = info.get("first_divergent") or nodes[0]["id"]
    target = nodes[-2]["id"] if len(nodes) > 2 else nodes[-1]["id"]  # near the end: far from the first view
    size = sum(p.stat().st_size for p in folder.iterdir()) / 1e6
    process, address = serve(root)
    try:
        times = page_times(address, first, target, chromium, reference)
    finally:
        process.send_signal(signal.SIGINT)
        process.communicate(timeout=60)
    find_ok = "meets" if times["find_s"] <= FIND_TARGET_S else "MISSES"
    print(f"{label}: {len(nodes):,} NPU ops; files {files_s:.1f} s ({size:.1f} MB); page ready {times['ready_s']:.1f} s, "
          f"first divergent op {first} shown {times['first_s']:.1f} s")
    line = (f"{label}: find {target}: looked up in {times['find_ms']:.2f} ms, selected and drawn in "
            f"{times['find_s']:.2f} s (target {FIND_TARGET_S:.0f} s: {find_ok})")
    if "reference_s" in times:
        line += (f"; Model Explorer's own search box only lists it in {times['reference_s']:.2f} s "
                 f"({times['reference_s'] / max(times['find_s'], 1e-9):.1f}x our look-up and drawing)")
    print(line)
    print(f"{label}: requests off the machine {len(times['off_machine'])}, page errors {len(times['errors'])}")


def _linked_copy(given: Path, copy: Path) -> Path:
    """A workspace explore can write into without touching `given`: its temp/ copied (but earlier explore
    folders), everything else linked (a real network's dumps are gigabytes)."""
    copy.mkdir()
    for entry in given.iterdir():
        if entry.name == "temp":
            shutil.copytree(entry, copy / "temp", symlinks=True, ignore=shutil.ignore_patterns("explore", "cache"))
        else:
            (copy / entry.name).symlink_to(entry.resolve())
    return copy


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--ops", type=int, default=20_000)
    parser.add_argument("--workspace", action="append", default=[], help="an existing workspace (copied)")
    parser.add_argument("--no-reference", action="store_true", help="skip Model Explorer's own search")
    parser.add_argument("--chromium", default=shutil.which("chromium") or "/usr/bin/chromium")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as temp:
        if args.workspace:
            targets = []
            for given in args.workspace:
                targets.append((Path(given).name, _linked_copy(Path(given), Path(temp) / Path(given).name)))
        else:
            targets = [("demo", build_demo(Path(temp) / "demo")),
                       (f"{args.ops:,} ops", build_big(Path(temp) / "big", args.ops))]
        for label, root in targets:
            measure(label, root, args.chromium, not args.no_reference)
    return 0


if __name__ == "__main__":
    sys.exit(main())
