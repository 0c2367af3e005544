"""The full hostile-file corpus through the commands that read each kind; figures per kind and per outcome.

usage: python3 benchmarks/hostile_corpus.py [--count 1000] [--kinds npu_dump,...] [--every 1] [--vc-every 20]
                                            [--seeds DIR] [--work DIR] [--list-bad N]

Kinds: the dump-side kinds of tests/hostile/corpus.py (NPU dumps, nano dumps, Opdebug records, golden .npy,
tfdbg v1 and v2 files; the tfdbg seeds come from a real TensorFlow run, cached in --seeds) and, when their
generators exist, the graph / JSON / statistics kinds other modules define (tests/graphs/hostile_graphs.py,
tests/stats/hostile_stats.py: each module's KINDS, generate(kind, count) and runs(case, ws) are used).
Exit status 1 when any run ended badly (TRACEBACK, HANG, MEMORY, SILENT, UNNAMED).
"""

from __future__ import annotations

import argparse
import importlib
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.hostile import corpus, harness

OTHER_GENERATORS = ("tests.graphs.hostile_graphs", "tests.real.hostile_real", "tests.stats.hostile_stats")


def _other_modules() -> list:
    found = []
    for name in OTHER_GENERATORS:
        if not (ROOT / (name.replace(".", "/") + ".py")).is_file():
            continue
        try:
            module = importlib.import_module(name)
        except Exception as exc:
            print(f"(skipping {name}: {type(exc).__name__}: {exc})")
            continue
        if all(hasattr(module, attr) for attr in ("KINDS", "generate", "runs")):
            found.append(module)
        else:
            print(f"(skipping {name}: it lacks KINDS, generate(kind, count) or runs(case, ws))")
    return found


def _run_other(module, kinds, work: Path, count: int, every: int, timeout: float) -> list[harness.Verdict]:
    """Other kinds: the module lays each case into a workspace and says which argv to run."""
    import shutil

    verdicts = []
    worker = harness.Worker(timeout=timeout)
    try:
        for kind in kinds:
            for n, case in enumerate(module.generate(kind, count)):
                if n % every:
                    continue
                ws = Path(tempfile.mkdtemp(prefix="case_", dir=work))
                try:
                    path, argvs = module.runs(case, ws)
                    for label, argv in argvs:
                        run = harness.Run(label, argv)
                        crash, rc, out, err = worker.run(argv)
                        outcome, detail = harness.classify(run, {Path(path).name, str(path)}, crash, rc, out, err)
                        verdicts.append(harness.Verdict(getattr(case, "name", f"{kind}-{n}"), kind, label, outcome,
                                                        detail))
                finally:
                    shutil.rmtree(ws, ignore_errors=True)
    finally:
        worker.close()
    return verdicts


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
    for module in _other_modules():
        theirs = [k for k in module.KINDS if k in kinds or args.kinds == ",".join(corpus.KINDS)]
        verdicts += _run_other(module, theirs, work, args.count, args.every, args.timeout)
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
    return 1 if any(v.outcome != "RESULT" for v in verdicts) else 0


if __name__ == "__main__":
    sys.exit(main())
