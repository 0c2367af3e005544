"""The HTML report at scale (issue 14: a 20,000-op run's report builds in seconds; issue 28: its page is at
most 5 MB, a third of the 14.9 MB it was with plotly.js, and opens in under 2 s in headless Chromium).

Builds a 20,000-op workspace (benchmarks/big_workspace.py: a GE text Build graph, NC1HWC0 and ND float16
dumps, float32 golden tensors, planted abnormal and inf/nan ops), compares it with `vc`, then times
`report` and the page's load in headless Chromium (navigation to the chart drawn and the page's script
done: `body[data-ready=yes]`), and prints the page's size and load time beside their targets and the
figures before issue 28. No reference tool draws a report; the reference side is what msaccucmp gives
for the same run (a CSV, no picture), timed in the same run, so the ratio says how much sooner ours gives
the CSV *and* the page than msaccucmp gives the CSV.

Run: `python3 benchmarks/bench_report.py [--ops N] [--loads K] [--reference PATH]` (the reference
defaults to $MSACCUCMP or /tmp/msacc/msaccucmp, as built by the anchor script; it takes about 18 minutes
on 20,000 ops and 2 cores, `--reference none` skips it). Needs playwright and Debian's chromium
(scripts/setup.sh installs both).
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

CLI = [sys.executable, str(ROOT / "precision_tool" / "cli.py")]
# issue 28's targets for the 20,000-op page, and what it was before (plotly.js embedded; docs/benchmarks.md)
TARGET_MB, TARGET_LOAD_S = 5.0, 2.0
BEFORE = "plotly.js embedded: 14.9 MB, load 4.5-5.9 s (2.2-3.3 s when measured again just before the change)"
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]


def timed(command: list[str], env: dict[str, str]) -> tuple[float, subprocess.CompletedProcess]:
    started = time.perf_counter()
    proc = subprocess.run(command, capture_output=True, text=True, env=env)
    return time.perf_counter() - started, proc


def page_loads(page_path: Path, loads: int, chromium: str) -> tuple[list[float], list[float], int, list[str]]:
    """Seconds per load (a fresh tab each time), the page's own script per load (unpacking the JSON and
    drawing, ms), the points the chart drew, console errors."""
    from playwright.sync_api import sync_playwright

    seconds: list[float] = []
    script_ms: list[float] = []
    errors: list[str] = []
    with sync_playwright() as driver:
        browser = driver.chromium.launch(executable_path=chromium, args=CHROMIUM_ARGS)
        for _ in range(loads):
            page = browser.new_page(viewport={"width": 1300, "height": 900})
            page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
            started = time.perf_counter()
            page.goto(page_path.resolve().as_uri())
            page.wait_for_selector("body[data-ready=yes]", timeout=120_000)
            seconds.append(time.perf_counter() - started)
            script_ms.append(page.evaluate("window.precisionReport.scriptMs"))
            points = page.evaluate("window.precisionReport.chart.drawn.reduce((n, k) => n + k, 0)")
            page.close()
        browser.close()
    return seconds, script_ms, points, errors


def reference_run(reference: str, root: Path, env: dict[str, str]) -> float | None:
    """msaccucmp compare on the same dumps, golden tensors and graph (as JSON, which it reads)."""
    from precision_tool.formats.ge.ge_graph import load_graph, write_graph_json

    graph_txt = next((root / "npu" / "debug_0" / "graph").glob("*_Build.txt"))
    graph_json = root / "graph_Build.json"
    write_graph_json(load_graph(graph_txt), graph_json)
    dump_dir = next(p for p in (root / "npu" / "debug_0" / "dump").rglob("*") if p.is_dir()
                    and any(f.is_file() for f in p.iterdir()))
    out = root / "reference_out"
    out.mkdir()
    seconds, proc = timed([reference, "compare", "-m", str(dump_dir), "-g", str(root / "tf" / "dump"), "-f",
                           str(graph_json), "-out", str(out)], env)
    if not list(out.glob("result_*.csv")):
        print(f"msaccucmp wrote no CSV (exit {proc.returncode}): {proc.stderr[-500:]}")
        return None
    return seconds


def _meets(ok: bool) -> str:
    return "meets" if ok else "MISSES"


def main() -> int:
    from big_workspace import make_workspace

    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--ops", type=int, default=20_000)
    parser.add_argument("--loads", type=int, default=3)
    parser.add_argument("--reference", default=os.environ.get("MSACCUCMP", "/tmp/msacc/msaccucmp"))
    parser.add_argument("--chromium", default=shutil.which("chromium") or "/usr/bin/chromium")
    args = parser.parse_args()
    env = {k: v for k, v in os.environ.items() if k not in ("PRECISION_TOOL_CONFIG", "PRECISION_DATA")}
    env.update({"COLUMNS": "200", "NO_COLOR": "1"})
    with tempfile.TemporaryDirectory() as temp:
        root = Path(temp) / "ws"
        started = time.perf_counter()
        facts = make_workspace(root, ops=args.ops)
        print(f"data: {facts['ops']:,} ops, built in {time.perf_counter() - started:.1f} s; {os.cpu_count()} cores")
        vc_s, vc = timed([*CLI, "--data", str(root), "vc"], env)
        if vc.returncode != 0:
            print(vc.stdout[-2000:], vc.stderr[-2000:])
            return 1
        report_s, report = timed([*CLI, "--data", str(root), "report"], env)
        if report.returncode != 0:
            print(report.stdout[-2000:], report.stderr[-2000:])
            return 1
        page_path = Path(re.search(r"^report: (\S+report\.html)", report.stdout, re.M).group(1))
        size_mb = page_path.stat().st_size / 1e6
        print(f"vc        {vc_s:7.2f} s")
        print(f"report    {report_s:7.2f} s  (whole command, Python start included)")
        loads, script_ms, points, errors = page_loads(page_path, args.loads, args.chromium)
        load = statistics.median(loads)
        print(f"page size {size_mb:7.2f} MB (target <= {TARGET_MB:g} MB: {_meets(size_mb <= TARGET_MB)})")
        print(f"page load {load:7.2f} s  (target < {TARGET_LOAD_S:g} s: {_meets(load < TARGET_LOAD_S)}) median of "
              f"{len(loads)} ({', '.join(f'{s:.2f}' for s in loads)}); the page's script (unpack + draw) "
              f"{statistics.median(script_ms):.0f} ms; chart: {points:,} points; console errors: {len(errors)}")
        print(f"before    {BEFORE}")
        if args.reference == "none" or not Path(args.reference).exists():
            print(f"reference not run ({args.reference}); build it with ../shared/tools/msaccucmp-anchor/setup.sh")
            return 0
        ref_s = reference_run(args.reference, root, env)
        if ref_s is None:
            return 1
        ours = vc_s + report_s
        print(f"msaccucmp {ref_s:7.2f} s  (the CSV only)")
        print(f"ratio     {ref_s / ours:7.1f}x: ours gives the CSV and the report in {ours:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
