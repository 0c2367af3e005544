"""Replay speed: what one op costs, and what sharing one TensorFlow child between N ops saves.

Builds the demo workspace (or takes one with --data), then measures, side by side in one run:
  tf start    `python3 -c "import tensorflow"`: the floor of any replay in a fresh process
  one op      `replay bn2/FusedBatchNormV3` end to end (shell start, plan, child, verdict, fixes)
  N shared    every compute op of debug_0 in one call (one child for all of them)
  N apart     the same ops one child each (what replaying them one by one costs), from a sample of
              --sample ops, extrapolated to N and said so
The ratio "N apart / N shared" is what sharing the child buys. No reference tool replays ops (the original
declares `ni -c` and never wires it up), so the comparison is against our own one-op-per-process run.
usage: python3 benchmarks/bench_replay.py [--data WS] [--runs 3] [--sample 6]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def _timed(args: list[str]) -> float:
    start = time.perf_counter()
    subprocess.run(args, check=True, capture_output=True, cwd=ROOT)
    return time.perf_counter() - start


def _replay_in_process(data: Path, names: list[str], folder: Path) -> tuple[float, dict[str, float], int]:
    from precision_tool.analysis.graphs.graph_index import GraphIndex
    from precision_tool.analysis.replay.replay import replay_ops
    from precision_tool.config import Settings
    from precision_tool.workspace import Workspace

    index = GraphIndex(Workspace(data))
    index.load()
    entries = [e for e in index.entries() if e.debug_id == 0 and e.name in names]
    start = time.perf_counter()
    run = replay_ops(index, entries, folder, Settings())
    return time.perf_counter() - start, run.seconds, sum(v.verdict == "cannot replay" for v in run.verdicts)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, help="a demo workspace (default: build one in a temp folder)")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--sample", type=int, default=6, help="ops timed one child each")
    args = parser.parse_args()
    cli = [sys.executable, str(ROOT / "precision_tool" / "cli.py")]
    with tempfile.TemporaryDirectory() as tmp:
        data = args.data
        if data is None:
            data = Path(tmp) / "demo"
            print("building the demo workspace ...", flush=True)
            subprocess.run([*cli, "demo", str(data), "--no-check"], check=True, capture_output=True, cwd=ROOT)
            subprocess.run([*cli, "--data", str(data), "tf_dump"], check=True, capture_output=True, cwd=ROOT)
        from precision_tool.analysis.graphs.graph_index import GraphIndex
        from precision_tool.workspace import Workspace

        index = GraphIndex(Workspace(data))
        index.load()
        names = [e.name for e in index.entries() if e.debug_id == 0 and e.type not in ("Data", "Variable", "Const")]
        tf_start = [_timed([sys.executable, "-c", "import tensorflow"]) for _ in range(args.runs)]
        one_op = [_timed([*cli, "--data", str(data), "replay", "bn2/FusedBatchNormV3", "-q"]) for _ in range(args.runs)]
        shared = []
        for run in range(args.runs):
            seconds, parts, failed = _replay_in_process(data, names, Path(tmp) / f"shared{run}")
            shared.append(seconds)
        from precision_tool.analysis.replay.replay_plan import NATIVE_TYPES

        # inserted Cast/TransData ops replay without TensorFlow: the one-child-each sample leaves them out
        tf_ops = [e.name for e in index.entries() if e.debug_id == 0 and e.name in names and e.type not in NATIVE_TYPES]
        sample = tf_ops[:: max(1, len(tf_ops) // args.sample)][: args.sample]
        apart = [_replay_in_process(data, [name], Path(tmp) / f"apart{n}")[0] for n, name in enumerate(sample)]
    per_op_apart = statistics.median(apart)
    n = len(names)
    print(f"ops replayed: {n} (every compute op of the demo's debug_0); cannot replay: {failed}")
    print(f"tf start (import tensorflow)      median {statistics.median(tf_start):6.2f} s  runs {_fmt(tf_start)}")
    print(f"one op, `replay` end to end        median {statistics.median(one_op):6.2f} s  runs {_fmt(one_op)}")
    print(f"{n} ops, one shared child          median {statistics.median(shared):6.2f} s  runs {_fmt(shared)}"
          f"  (last run: plan {parts['plan']:.2f} s, TensorFlow child {parts['child']:.2f} s, "
          f"verdicts and fixes {parts['judge']:.2f} s)")
    print(f"{n} ops, one child each ({len(tf_ops)} need TensorFlow; {len(sample)} timed, extrapolated)  "
          f"{per_op_apart * len(tf_ops):6.1f} s ({per_op_apart:.2f} s per op)")
    print(f"sharing the child: {per_op_apart * len(tf_ops) / statistics.median(shared):.1f}x faster than one child "
          f"per op; "
          f"a shared op costs {(statistics.median(shared) - per_op_apart) / max(1, n - 1) * 1000:.0f} ms after the first")
    return 0


def _fmt(values: list[float]) -> str:
    return ", ".join(f"{v:.2f}" for v in values)


if __name__ == "__main__":
    sys.exit(main())
