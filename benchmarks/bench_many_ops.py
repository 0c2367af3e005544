"""`vc` on a network of many small ops, against the time it takes just to read its files (issue 28).

Real networks are thousands of ops with small tensors, where the cost per op (opening and parsing files,
numpy calls, rows) and not the arithmetic sets the time. This builds benchmarks/big_workspace.py's
workspace (default 20,000 ops: 38,185 files, 60 MB with the graph), then, side by side in one run:

- a plain read: one Python process reading every byte of every file of the workspace (graph, NPU dumps,
  golden tensors), warm page cache: the floor no comparison can beat;
- the least a comparison must do (benchmarks/many_ops_floor.py, in as many processes as `vc` uses): read
  every dump and golden, parse each dump's header, view each tensor, one line of text per tensor. No
  metrics, no summary: what `vc` does beyond it is ours to shrink, what the plain read does not do is not;
- `vc` cold: a fresh workspace cache (the graph is parsed and its plan written to temp/cache/plans);
- `vc` warm: the same command again (the graph's plan read from the cache, as every later vc and ac -c);
- `vc` in the shell: the second of two `vc` typed into one shell (`PrecisionTool >`, here reading them from
  its standard input), where users run it: Python's start-up and the tool's imports were paid by the first;
- with `--reference`, msaccucmp's `compare` on the same dump, golden folder and graph (as atc JSON): about
  18 minutes at 20,000 ops on 2 cores; the rows are checked identical.

Each is run `--repeat` times, alternating; medians count. The speed of a shared machine moves from minute
to minute, so each warm `vc` is also set against the plain read run just before it, and the median of those
round-by-round ratios is printed with its verdict beside the ratio of the medians. `--phases` also times
the phases of one comparison inside one process (graph, plan, compare on the local pool, summary) and
prints a profile of the worker's hottest functions: where the time goes.

With `--baseline CHECKOUT` the warm `vc` of another checkout of the tool (a git worktree of an earlier commit)
runs alternately with ours on the same files (in a workspace of its own that links to them, so that caches
of another format never make either parse again; before ours every other round): a change measured side by
side, not against a figure of another day (single runs on a shared 2-core machine move by 10-20 %).

Run: python3 benchmarks/bench_many_ops.py [--ops 20000] [--repeat 3] [--phases] [--baseline CHECKOUT]
                                          [--reference [PATH]]
"""

from __future__ import annotations

import argparse
import os
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
TARGET = 3.0  # vc within this many plain reads


def plain_read(root: Path) -> tuple[float, int, int]:
    """(seconds, files, bytes) to read every file under `root` in this process."""
    started = time.perf_counter()
    files = size = 0
    for dirpath, _, names in os.walk(root):
        for name in names:
            with open(os.path.join(dirpath, name), "rb") as handle:
                size += len(handle.read())
            files += 1
    return time.perf_counter() - started, files, size


def least_work(root: Path, env: dict[str, str]) -> float:
    """Wall seconds of many_ops_floor.py on `root`, start-up included (it runs as vc does: a process)."""
    started = time.perf_counter()
    proc = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "many_ops_floor.py"), str(root),
                           "--out", str(root.parent / "many_ops_floor.txt")], capture_output=True, text=True, env=env)
    seconds = time.perf_counter() - started
    if proc.returncode != 0:
        raise SystemExit(f"many_ops_floor.py failed ({proc.returncode}): {proc.stderr[-1500:]}")
    return seconds


def run_vc(root: Path, env: dict[str, str], cold: bool, cli: list[str] = CLI) -> float:
    if cold:
        shutil.rmtree(root / "temp" / "cache", ignore_errors=True)
    started = time.perf_counter()
    proc = subprocess.run([*cli, "--data", str(root), "vc"], capture_output=True, text=True, env=env)
    seconds = time.perf_counter() - started
    if proc.returncode != 0:
        raise SystemExit(f"vc failed ({proc.returncode}): {proc.stdout[-1500:]} {proc.stderr[-1500:]}")
    return seconds


def shell_vc(root: Path, env: dict[str, str]) -> float:
    """Wall seconds of a second `vc` in one shell, as users run it at the `PrecisionTool >` prompt: the real
    shell reads `vc` twice from its standard input; the time between the two runs' "comparison runs:" lines is
    the second one's (its imports were paid by the first, its plan read from the cache as a warm vc's)."""
    marks: list[float] = []
    lines: list[str] = []
    proc = subprocess.Popen([*CLI, "--data", str(root)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, env={**env, "PYTHONUNBUFFERED": "1"})
    assert proc.stdin is not None and proc.stdout is not None
    proc.stdin.write("vc\nvc\n")
    proc.stdin.close()
    for line in proc.stdout:
        if line.startswith("comparison runs:"):
            marks.append(time.perf_counter())
        lines = [*lines[-20:], line]
    if proc.wait() != 0 or len(marks) != 2:
        raise SystemExit(f"vc in the shell failed ({proc.returncode}, {len(marks)} runs): {''.join(lines)}")
    return marks[1] - marks[0]


def phases(root: Path) -> None:
    """One comparison's phases in this process, then the worker's hottest functions (cProfile, serial)."""
    import cProfile
    import pstats

    from precision_tool.analysis.compare.compare_runs import _selected, plan_run
    from precision_tool.analysis.compare.engine.compare_engine import finish_plan, start_plan
    from precision_tool.analysis.compare.plan_cache import graph_plans
    from precision_tool.analysis.compare.workspace_runs import workspace_specs
    from precision_tool.analysis.results.digest_cache import summarize_result_csv
    from precision_tool.analysis.results.results import RowDigest, summarize_digest
    from precision_tool.workspace import Workspace

    workspace = Workspace(root)
    shutil.rmtree(workspace.cache_dir, ignore_errors=True)
    clock = time.perf_counter
    started = clock()
    spec = workspace_specs(workspace, "phases", [])[0]
    graph_plans(spec.graph_path, workspace.cache_dir).side(spec.graph_name)
    graph_s = clock() - started
    started = clock()
    plan, golden = plan_run(spec, cache_dir=workspace.cache_dir)
    plan, columns, _ = _selected(spec, plan)
    plan_s = clock() - started
    out = Path(tempfile.mkdtemp()) / "result.csv"
    started = clock()
    digest = RowDigest()
    finish_plan(start_plan(plan, golden, out, workers=os.cpu_count() or 1, columns=columns), digest=digest)
    compare_s = clock() - started
    started = clock()
    summarize_digest(digest, out, 0.98)
    summary_s = clock() - started
    started = clock()
    summarize_result_csv(out, 0.98)
    read_s = clock() - started
    print(f"phases (one process, cold cache): graph + its plan {graph_s:.2f} s, plan with the dumps {plan_s:.2f} s, "
          f"compare ({os.cpu_count()} processes) {compare_s:.2f} s, summarise from the workers' digest "
          f"{summary_s:.2f} s (from the CSV read back, as vcs does: {read_s:.2f} s)")
    profile = cProfile.Profile()
    profile.enable()
    finish_plan(start_plan(plan, golden, out, workers=1, columns=columns))
    profile.disable()
    print("the worker's hottest functions (one process, under cProfile: times inflated):")
    pstats.Stats(profile, stream=sys.stdout).sort_stats("tottime").print_stats(12)


def reference(root: Path, msaccucmp: str, env: dict[str, str]) -> None:
    """msaccucmp on the same files (bench_report's run of it); its rows against ours."""
    import csv

    from bench_report import reference_run

    seconds = reference_run(msaccucmp, root, env)
    theirs = next((root / "reference_out").glob("result_*.csv"), None)
    if seconds is None or theirs is None:
        return  # reference_run said why
    ours = max((root / "temp" / "vector_compare").glob("*/result_*.csv"))

    def rows(path: Path) -> list[list[str]]:
        with open(path, newline="", encoding="utf-8") as handle:
            return [[c for i, c in enumerate(r) if i not in (2, 4)] for r in csv.reader(handle)]  # paths, address

    mine, refs = rows(ours), rows(theirs)
    same = sum(a == b for a, b in zip(mine, refs))
    print(f"msaccucmp {seconds:7.1f} s; rows identical {same - 1:,} of {len(refs) - 1:,} (ours {len(mine) - 1:,})")


def cli_env() -> dict[str, str]:
    """The environment the benchmarks run the CLI in (no user config, a wide plain terminal), after the
    package's bytecode is compiled as `pip install` does."""
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(ROOT / "precision_tool")], check=True,
                   stdout=subprocess.DEVNULL)
    env = {k: v for k, v in os.environ.items() if k not in ("PRECISION_TOOL_CONFIG", "PRECISION_DATA")}
    env.update({"COLUMNS": "200", "NO_COLOR": "1"})
    return env


def main() -> int:
    from big_workspace import make_workspace

    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--ops", type=int, default=20_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--phases", action="store_true", help="time one comparison's phases and profile a worker")
    parser.add_argument("--baseline", metavar="CHECKOUT",
                        help="also time the warm vc of another checkout of the tool (a git worktree of an earlier "
                             "commit), alternating with ours: a change measured side by side on a busy machine")
    parser.add_argument("--reference", nargs="?", const=os.environ.get("MSACCUCMP", "/tmp/msacc/msaccucmp"),
                        help="also run msaccucmp (PATH; default $MSACCUCMP or /tmp/msacc/msaccucmp)")
    args = parser.parse_args()
    env = cli_env()
    with tempfile.TemporaryDirectory() as temp:
        root = Path(temp) / "ws"
        started = time.perf_counter()
        make_workspace(root, ops=args.ops)
        built = time.perf_counter() - started
        read_s, files, size = plain_read(root)  # warms the page cache too
        print(f"data: {args.ops:,} ops, {files:,} files, {size / 1e6:.0f} MB, built in {built:.1f} s; "
              f"{os.cpu_count()} cores")
        baseline = None
        if args.baseline:
            package = Path(args.baseline).resolve() / "precision_tool"
            subprocess.run([sys.executable, "-m", "compileall", "-q", str(package)], check=True,
                           stdout=subprocess.DEVNULL)  # as ours is, so neither pays for compiling
            baseline = [sys.executable, str(package / "cli.py")]
            # its own temp/ (caches whose format differs would each make the other parse again), the same files
            baseline_root = Path(temp) / "baseline_ws"
            baseline_root.mkdir()
            for entry in root.iterdir():
                if entry.name != "temp":
                    (baseline_root / entry.name).symlink_to(entry)
            run_vc(baseline_root, env, cold=True, cli=baseline)  # its caches written once, untimed
        reads, floors, colds, warms, befores, shells, shell_reads = [], [], [], [], [], [], []
        for round_number in range(args.repeat):
            colds.append(run_vc(root, env, cold=True))
            # the baseline before ours every other round: right after the cold run (its cache files still being
            # written back) and later in the round are not the same moment of a busy machine
            baseline_first = baseline is not None and round_number % 2 == 1
            if baseline_first:
                befores.append(run_vc(baseline_root, env, cold=False, cli=baseline))
            reads.append(plain_read(root)[0])  # (just before the warm vc: the two are side by side in time)
            floors.append(least_work(root, env))
            warms.append(run_vc(root, env, cold=False))
            if baseline and not baseline_first:
                befores.append(run_vc(baseline_root, env, cold=False, cli=baseline))
            shell_reads.append(plain_read(root)[0])
            shells.append(shell_vc(root, env))
        floor = statistics.median(reads)
        rows = [("plain read", reads), ("least work", floors), ("vc, cold", colds), ("vc, warm", warms),
                ("vc, shell", shells)]
        if baseline:
            rows.append(("baseline", befores))  # (its warm vc, on its own caches)
        for label, times in rows:
            median = statistics.median(times)
            ratio = "" if times is reads else f"   {median / floor:4.1f}x the plain read" if times is floors else (
                f"   {median / floor:4.1f}x the plain read (target {TARGET:.0f}x: "
                f"{'meets' if median <= TARGET * floor else 'MISSES'}), "
                f"{median / statistics.median(floors):.1f}x the least work")
            print(f"{label:<11} median {median:6.2f} s  runs {', '.join(f'{t:.2f}' for t in times)}{ratio}")
        # the machine's speed moves from minute to minute: each warm vc against the plain read just before it
        pairs = [warm / read for warm, read in zip(warms, reads)]
        median = statistics.median(pairs)
        print(f"vc, warm / the plain read before it, round by round: median {median:.1f}x (target {TARGET:.0f}x: "
              f"{'meets' if median <= TARGET else 'MISSES'})  rounds {', '.join(f'{r:.1f}' for r in pairs)}")
        pairs = [shell / read for shell, read in zip(shells, shell_reads)]
        median = statistics.median(pairs)
        print(f"vc, shell / the plain read before it, round by round: median {median:.1f}x (target {TARGET:.0f}x: "
              f"{'meets' if median <= TARGET else 'MISSES'})  rounds {', '.join(f'{r:.1f}' for r in pairs)}")
        if baseline:
            print(f"baseline   {args.baseline}: warm vc {statistics.median(befores) / statistics.median(warms):.2f}x "
                  f"ours; round by round (median) "
                  f"{statistics.median([b / w for b, w in zip(befores, warms)]):.2f}x")
        if args.phases:
            phases(root)
        if args.reference:
            if Path(args.reference).exists():
                reference(root, args.reference, env)
            else:
                print(f"msaccucmp not found at {args.reference}; "
                      "build it with ../shared/tools/msaccucmp-anchor/setup.sh")
    return 0


if __name__ == "__main__":
    sys.exit(main())
