"""The full hostile-file corpus through the commands that read each kind; figures per kind and per outcome.

usage: python3 benchmarks/hostile_corpus.py [--count 1000] [--kinds npu_dump,...] [--every 1] [--vc-every 20]
                                            [--seeds DIR] [--work DIR] [--list-bad N]

Kinds: the dump-side kinds of tests/hostile/corpus.py (NPU dumps, nano dumps, Opdebug records, golden .npy,
tfdbg v1 and v2 files; the tfdbg seeds come from a real TensorFlow run, cached in --seeds). With --others,
the corpora other modules define (tests/analysis/graphs/hostile_graphs.py, tests/real/hostile_fusion.py,
tests/analysis/compare/stats/hostile_stats.py) then run through their own runners and oracles, when present.
Exit status 1 when any run ended badly (TRACEBACK, HANG, MEMORY, SILENT, UNNAMED).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.hostile import corpus, harness

# Other kinds' corpora (written by other modules, with their own oracles): run as they are, when present.
OTHER_RUNNERS = (
    ("tests/analysis/graphs/hostile_graphs.py", ["-m", "tests.analysis.graphs.hostile_graphs", "--all", "--count", "{count}"]),
    ("tests/real/hostile_fusion.py", ["tests/real/hostile_fusion.py", "--count", "{count}", "--cli", "40"]),
    ("tests/analysis/compare/stats/hostile_stats.py", ["-m", "tests.analysis.compare.stats.hostile_stats", "--count", "{count}"]),
)


def _run_others(count: int) -> int:
    """Each other corpus present in the checkout, through its own runner; its exit status (0 = clean)."""
    import subprocess

    worst = 0
    for module, argv in OTHER_RUNNERS:
        if not (ROOT / module).is_file():
            continue
        print(f"\n=== {module} (its own runner and oracle)", flush=True)
        done = subprocess.run([sys.executable, *(a.format(count=count) for a in argv)], cwd=ROOT, check=False)
        worst = max(worst, done.returncode)
    return worst


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--count", type=int, default=1000, help="mutated files per kind (default 1000)")
    parser.add_argument("--kinds", default=",".join(corpus.KINDS), help="comma-separated kinds (default: all ours)")
    parser.add_argument("--every", type=int, default=1, help="run every N-th file only (default 1: all)")
    parser.add_argument("--vc-every", type=int, default=20,
                        help="also run vc on every N-th .npy and ni on every N-th dump, in a demo workspace with "
                             "one of its files replaced by the case (0: never)")
    parser.add_argument("--seeds", default=str(Path(tempfile.gettempdir()) / "precision_tool_hostile_seeds"),
                        help="folder caching the TensorFlow seed runs")
    parser.add_argument("--work", default=None, help="scratch folder (default: a temp folder)")
    parser.add_argument("--timeout", type=float, default=30.0, help="seconds per run before it counts as a hang")
    parser.add_argument("--others", action="store_true",
                        help="then run the other kinds' corpora (GE graphs, atc JSON, fusion_result.json, statistics "
                             "CSVs) through their own runners, when their modules exist")
    parser.add_argument("--list-bad", type=int, default=40, help="list this many bad runs (distinct reasons)")
    args = parser.parse_args()

    kinds = [k for k in args.kinds.split(",") if k]
    ours = [k for k in kinds if k in corpus.KINDS]
    seeds = Path(args.seeds)
    if any(k.startswith("tfdbg") for k in ours):
        print(f"TF seeds in {seeds} ...", flush=True)
        corpus.make_tf_seeds(seeds)
    work = Path(args.work) if args.work else Path(tempfile.mkdtemp(prefix="hostile_"))
    work.mkdir(parents=True, exist_ok=True)
    vc_ws = None
    if {"golden_npy", "npu_dump", "nano_dump"} & set(ours) and args.vc_every:
        import subprocess

        vc_ws = work / "demo"
        subprocess.run([sys.executable, "-m", "precision_tool", "demo", str(vc_ws)], cwd=ROOT, check=True,
                       capture_output=True)
    started = time.monotonic()
    done = {"n": 0}

    def tick(kind: str, n: int) -> None:
        done["n"] += 1
        if done["n"] % 200 == 0:
            print(f"  {kind}: {n + 1} files, {time.monotonic() - started:.0f} s", flush=True)

    verdicts = harness.run_corpus(ours, work, seeds, args.count, every=args.every, vc_workspace=vc_ws,
                                  vc_every=args.vc_every, timeout=args.timeout, progress=tick)
    seconds = time.monotonic() - started

    table = harness.summarize(verdicts)
    columns = ("files", "runs", *harness.BAD)
    runs_per_kind: dict[str, int] = {}
    for v in verdicts:
        runs_per_kind[v.kind] = runs_per_kind.get(v.kind, 0) + 1
    print(f"\n{'kind':<12}" + "".join(f"{c:>11}" for c in columns))
    totals = dict.fromkeys(columns, 0)
    for kind, row in table.items():
        row = dict(row, runs=runs_per_kind.get(kind, 0))
        print(f"{kind:<12}" + "".join(f"{row.get(c, 0):>11}" for c in columns))
        for c in columns:
            totals[c] += row.get(c, 0)
    print(f"{'all':<12}" + "".join(f"{totals[c]:>11}" for c in columns))
    per_command: dict[tuple[str, str], int] = {}
    for v in verdicts:
        if v.outcome != "RESULT":
            per_command[(v.command, v.outcome)] = per_command.get((v.command, v.outcome), 0) + 1
    if per_command:
        print("\nbad runs per command: " + ", ".join(f"{c} {o} {n}" for (c, o), n in sorted(per_command.items())))
    seen = set()
    shown = 0
    for v in verdicts:
        key = (v.kind, v.command, v.outcome, v.detail[:50])
        if v.outcome == "RESULT" or key in seen or shown >= args.list_bad:
            continue
        seen.add(key)
        shown += 1
        print(f"  {v.case} [{v.command}] {v.outcome}: {v.detail[:200]}")
    print(f"\n{len(verdicts)} runs in {seconds:.0f} s")
    others = _run_others(args.count) if args.others else 0
    return 1 if others or any(v.outcome != "RESULT" for v in verdicts) else 0


if __name__ == "__main__":
    sys.exit(main())
