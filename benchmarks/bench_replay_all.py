"""`replay --all` speed: every compute op of a network replayed on its own NPU inputs, ranked.

Builds the demo workspace (or takes one with --data: a `demo --model bert` workspace is the real-size case),
then measures, side by side in one run, through the CLI as a user runs it:
  tf start    `python3 -c "import tensorflow"`: what every replay process pays once
  pool        `replay --all -j W` (W TensorFlow children at once; default: the cores)
  one child   `replay --all -j 1` (every op in one TensorFlow child, as `replay OP ...` runs them)
and prints ops replayed, seconds per op, the pool's plan / TensorFlow / judge split and the ratio
"one child / pool". No reference tool replays every op of a TensorFlow network (msit's opcheck, which did
for TF 2.6, was removed from msit in 2026), so the comparison is with our own single child; a process per op
would cost "tf start" per op, which the last line extrapolates.
usage: python3 benchmarks/bench_replay_all.py [--data WS] [-j W] [--skip-single]
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _cli(data: Path, *args: str) -> tuple[float, str]:
    env = dict(os.environ, COLUMNS="200", NO_COLOR="1")
    start = time.perf_counter()
    proc = subprocess.run([sys.executable, str(ROOT / "precision_tool" / "cli.py"), "--data", str(data), *args],
                          capture_output=True, text=True, cwd=ROOT, env=env)
    seconds = time.perf_counter() - start
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(args)} failed (exit {proc.returncode}):\n{proc.stdout[-2000:]}{proc.stderr[-2000:]}")
    return seconds, proc.stdout


def _summary(out: str) -> tuple[int, int, str]:
    match = re.search(r"replay --all \(npu/debug_\d+\): (\d+) of (\d+) compute ops replayed .* by (.+?) in [\d.]+ s",
                      out)
    if not match:
        raise SystemExit(f"no replay --all summary in the output:\n{out[:2000]}")
    return int(match.group(1)), int(match.group(2)), match.group(3)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, help="a workspace (default: build the demo in a temp folder)")
    parser.add_argument("-j", type=int, default=os.cpu_count() or 2, help="the pool's processes (default: cores)")
    parser.add_argument("--skip-single", action="store_true", help="time the pool only (a big network's single "
                                                                     "child takes long)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench_replay_all_") as tmp:
        data = args.data
        if data is None:
            data = Path(tmp) / "demo"
            print("building the demo workspace ...", flush=True)
            subprocess.run([sys.executable, str(ROOT / "precision_tool" / "cli.py"), "demo", str(data)],
                           check=True, capture_output=True, cwd=ROOT)
        else:  # replays write fix/ and temp/replay/: work on a copy
            copy = Path(tmp) / "ws"
            shutil.copytree(data, copy, symlinks=True, ignore=shutil.ignore_patterns("temp"))
            data = copy
        start = time.perf_counter()
        subprocess.run([sys.executable, "-c", "import tensorflow"], check=True, capture_output=True)
        tf_start = time.perf_counter() - start
        pool_s, pool_out = _cli(data, "replay", "--all", "-j", str(args.j), "-l", "3")
        replayed, total, where = _summary(pool_out)
        print(f"ops: {total} compute ops, {replayed} replayed ({total - replayed} cannot replay)")
        print(f"tf start (import tensorflow)   {tf_start:8.2f} s")
        print(f"pool   replay --all -j {args.j:<2}       {pool_s:8.2f} s  ({where}; {pool_s / max(1, total) * 1000:.0f} ms per op)")
        if not args.skip_single:
            single_s, _ = _cli(data, "replay", "--all", "-j", "1", "-l", "3")
            print(f"one child replay --all -j 1      {single_s:8.2f} s  ({single_s / max(1, total) * 1000:.0f} ms per op)")
            print(f"ratio one child / pool: {single_s / pool_s:.2f}x")
        print(f"a process per op (tf start x {total}, extrapolated): {tf_start * total:,.0f} s = "
              f"{tf_start * total / pool_s:.0f}x the pool")
    return 0


if __name__ == "__main__":
    sys.exit(main())
