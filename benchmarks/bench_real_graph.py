"""Whole-network comparison of a real compiled graph, ours vs msaccucmp, side by side.

The graph is hicann/ge's ResNet-50 after UB fusion (tests/fixtures/real/ge_graph, written by GE). Every op
whose inputs and outputs can be given a value gets an NPU dump written with Ascend's own dump proto
(tests/tools/AclDumpMsg.proto, compiled with protoc; never our writer), in the graph's real device layouts
(NC1HWC0, NC1HWC0_C04, FRACTAL_Z, FRACTAL_Z_C04, ND), and golden .npy files for the original ops.
Both tools compare the same folders through the same graph (msaccucmp gets it as atc JSON); the script
prints both times, the ratio, and how many rows of the two CSVs are identical.

Run: `python3 benchmarks/bench_real_graph.py [--reference PATH] [--workers N]`
(the reference defaults to $MSACCUCMP, else the anchor build in ~/.cache/precision_tool/msaccucmp-anchor).
"""

from __future__ import annotations

import argparse
import csv
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def _rows(path: Path) -> list[list[str]]:
    with open(path, newline="") as handle:
        return list(csv.reader(handle))


def build(root: Path) -> tuple[object, int]:
    """The case (dumps, goldens, graph, graph JSON) for every op of the graph that can be dumped."""
    from precision_tool.formats.ge.ge_graph import load_graph
    from tests.tools import real_dumps

    pb2 = real_dumps.compile_proto(root / "proto")
    graph = load_graph(real_dumps.RESNET_GRAPH).graphs[0]
    sample = []
    for op in graph.ops:
        if op.type in ("Data", "Const", "Constant", "NetOutput") or not op.output_descs:
            continue
        if all(d.dtype in real_dumps._NUMPY for d in [*op.input_descs, *op.output_descs]):
            sample.append(op.name)
    case = real_dumps.graph_case(pb2, root / "precision_data", real_dumps.RESNET_GRAPH, sample)
    return case, len(sample)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reference", default=os.environ.get("MSACCUCMP") or str(
        Path.home() / ".cache" / "precision_tool" / "msaccucmp-anchor" / "msaccucmp"))
    parser.add_argument("--workers", type=int, default=None, help="vc -j (default: vc's own)")
    args = parser.parse_args()
    reference = Path(args.reference)
    if not reference.exists():
        print(f"no msaccucmp at {reference}; build it with ../shared/tools/msaccucmp-anchor/setup.sh DIR "
              "and pass --reference DIR/msaccucmp", file=sys.stderr)
        return 1
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        started = time.perf_counter()
        case, ops = build(work)
        print(f"built dumps of {ops} ops of {case.graph.name} in {time.perf_counter() - started:.1f} s")

        out = work / "ref"
        out.mkdir()
        started = time.perf_counter()
        subprocess.run([str(reference), "compare", "-m", str(case.dump_dir), "-g", str(case.golden_dir),
                        "-f", str(case.graph_json), "-out", str(out)], capture_output=True, text=True, timeout=3600)
        theirs_s = time.perf_counter() - started
        ref_csv = sorted(out.glob("result_*.csv"))
        if not ref_csv:
            print("msaccucmp wrote no CSV", file=sys.stderr)
            return 1

        command = [sys.executable, str(ROOT / "precision_tool" / "cli.py"), "--data", str(case.root), "vc",
                   "--backend", "native", "-lt", str(case.dump_dir), "-rt", str(case.golden_dir),
                   "-g", str(case.graph)]
        if args.workers:
            command += ["-j", str(args.workers)]
        started = time.perf_counter()
        proc = subprocess.run(command, capture_output=True, text=True, timeout=3600)
        ours_s = time.perf_counter() - started
        ours_csv = sorted((case.root / "temp" / "vector_compare").glob("*/result_*.csv"))
        if proc.returncode != 0 or not ours_csv:
            print(f"vc failed (exit {proc.returncode}): {proc.stdout[-2000:]}{proc.stderr[-2000:]}", file=sys.stderr)
            return 1

        ref, ours = _rows(ref_csv[-1]), _rows(ours_csv[-1])
        same = sum(1 for a, b in zip(ref[1:], ours[1:]) if a == b)
        compared = sum(1 for row in ours[1:] if row[9] not in ("NaN", ""))
        print(f"rows: msaccucmp {len(ref) - 1}, ours {len(ours) - 1}; identical {same}; "
              f"with a cosine {compared}")
        for a, b in zip(ref[1:], ours[1:]):
            if a != b:
                cells = [i for i, (x, y) in enumerate(zip(a, b)) if x != y]
                print(f"  differs: {a[7]} in {', '.join(ref[0][i] for i in cells)}: msaccucmp "
                      f"{[a[i][:80] for i in cells]}, ours {[b[i][:80] for i in cells]}")
        print(f"msaccucmp {theirs_s:.1f} s, ours {ours_s:.1f} s (whole command, start-up included): "
              f"{theirs_s / ours_s:.1f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
