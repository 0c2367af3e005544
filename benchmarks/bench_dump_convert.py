"""`dc` against msaccucmp's `convert`, side by side, on 300 fp16 NC1HWC0 dumps (issue 3's speed target).

Each dump holds one input and one output of NCHW 16×20×28×28 stored as NC1HWC0 (~460 MB in all).
Runs `dc -f NCHW` vs `convert -f NCHW` (target ≥ 8×) and plain `dc` vs plain `convert` (target ≥ 2×),
each through its command line (best of --repeat runs), and checks that both wrote the same arrays. The
package's bytecode is compiled first, as `pip install` does. For `-f` it also times the write floor: a
bare Python process that only writes the same converted .npy files, held in memory, on 2 threads; no
converter can finish faster than that.

    python3 benchmarks/bench_dump_convert.py [--files 300] [--reference /tmp/msacc/msaccucmp]
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def make_dumps(folder: Path, count: int) -> None:
    import numpy as np

    from precision_tool.formats.npu.layouts import to_device
    from precision_tool.formats.npu.dump_types import Format
    from precision_tool.formats.npu.npu_dump import dump_file_name
    from precision_tool.formats.npu.npu_dump_write import TensorSpec, write_dump

    rng = np.random.default_rng(0)
    shape = (16, 20, 28, 28)
    base = rng.standard_normal(shape).astype(np.float16)
    for n in range(count):
        x = base + np.float16(n % 7)
        device = to_device(x, "NCHW", "NC1HWC0")
        spec = TensorSpec(device, format=Format.NC1HWC0, original_shape=shape)
        name = dump_file_name("Conv2D", f"net/conv{n}", n, 1, 1_700_000_000_000_000 + n)
        write_dump(folder / name, op_name=f"net/conv{n}", inputs=[spec], outputs=[spec])


def timed(command: list[str], env: dict[str, str] | None = None) -> float:
    """Wall time of one command, started with no dirty pages pending (so neither pays the other's writeback)."""
    os.sync()
    start = time.perf_counter()
    proc = subprocess.run(command, capture_output=True, text=True, env=env)
    elapsed = time.perf_counter() - start
    if proc.returncode not in (0,):
        raise SystemExit(f"{command[0]} failed ({proc.returncode}): {proc.stderr[-2000:]}{proc.stdout[-2000:]}")
    return elapsed


def same_arrays(ours: Path, theirs: Path) -> tuple[int, int]:
    import numpy as np

    names = sorted(p.name for p in theirs.glob("*.npy"))
    equal = sum(np.array_equal(np.load(ours / n), np.load(theirs / n)) for n in names if (ours / n).exists())
    return equal, len(names)


WRITE_FLOOR = """
import sys, os, numpy as np
from concurrent.futures import ThreadPoolExecutor
src, dst = sys.argv[1], sys.argv[2]
names = sorted(os.listdir(src))
arrays = [np.load(os.path.join(src, n)) for n in names]  # in memory before the clock that matters
os.mkdir(dst)
def write(i):
    np.save(os.path.join(dst, names[i]), arrays[i])
with ThreadPoolExecutor(2) as pool:
    list(pool.map(write, range(len(names))))
"""
"""The cost no converter avoids: start Python with numpy and write the converted files (here loaded first,
so the floor is generous: it includes reading them back)."""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--files", type=int, default=300, help="number of dump files (default 300)")
    parser.add_argument("--reference", default=os.environ.get("MSACCUCMP", "/tmp/msacc/msaccucmp"),
                        help="the msaccucmp wrapper (default $MSACCUCMP or /tmp/msacc/msaccucmp)")
    parser.add_argument("--repeat", type=int, default=3,
                        help="runs of each tool; the best time counts (the disk is shared and noisy)")
    args = parser.parse_args()
    env = {k: v for k, v in os.environ.items() if k != "OPENBLAS_CORETYPE"}
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(ROOT / "precision_tool")], check=True,
                   stdout=subprocess.DEVNULL)
    with tempfile.TemporaryDirectory(prefix="bench_dc_") as tmp:
        work = Path(tmp)
        dumps = work / "dumps"
        dumps.mkdir()
        make_dumps(dumps, args.files)
        size_mb = sum(p.stat().st_size for p in dumps.iterdir()) / 1e6
        print(f"{args.files} dumps, {size_mb:.0f} MB, fp16 NC1HWC0 16x20x28x28 (input + output)")
        cli = [sys.executable, str(ROOT / "precision_tool" / "cli.py"), "--data", str(work / "ws")]
        for label, fmt, target in (("-f NCHW", ["-f", "NCHW"], 8.0), ("plain", [], 2.0)):
            ours_times, ref_times = [], []
            for n in range(args.repeat):
                # Alternate the tools; fresh output folders (deleting files mid-run makes the disk busy with
                # discards), and each run starts with no dirty pages pending.
                ours_out, ref_out = work / f"ours{n}", work / f"ref{n}"
                ours_times.append(timed([*cli, "dc", str(dumps), *fmt, "-o", str(ours_out)], env))
                ref_times.append(timed([args.reference, "convert", "-d", str(dumps), *fmt, "-out", str(ref_out)], env))
            equal, total = same_arrays(ours_out, ref_out)
            ours, theirs = min(ours_times), min(ref_times)
            verdict = "meets" if theirs / ours >= target else "MISSES"
            print(f"{label:8s} ours {ours:6.2f} s   reference {theirs:6.2f} s   ratio {theirs / ours:5.1f}x "
                  f"(target {target:.0f}x: {verdict})   identical arrays {equal}/{total}   "
                  f"[all runs: ours {' '.join(f'{t:.2f}' for t in ours_times)}; "
                  f"reference {' '.join(f'{t:.2f}' for t in ref_times)}]")
            if fmt:  # converting: the floor is writing the converted files (plain dc copies with the kernel)
                floor = min(timed([sys.executable, "-c", WRITE_FLOOR, str(ours_out), str(work / f"floor{n}")], env)
                            for n in range(args.repeat))
                print(f"{'':8s} write floor {floor:5.2f} s (a Python process writing the same .npy files from "
                      f"memory, 2 threads): ours {ours / floor:.1f}x it; {target:.0f}x the reference needs "
                      f"{theirs / target:.2f} s")
            for n in range(args.repeat):
                for kind in ("ours", "ref", "floor"):
                    shutil.rmtree(work / f"{kind}{n}", ignore_errors=True)
            os.sync()
            time.sleep(2)


if __name__ == "__main__":
    main()
