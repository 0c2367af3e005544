"""One pair of 2 GB tensors (float32 NPU dump vs float32 golden .npy) compared with peak memory < 1 GB.

Our engine streams tensors too large for one leaf of numpy's summation tree straight from the files,
three sweeps, 16 MB at a time; results are bit-identical to an in-memory computation. The files are
written chunk by chunk, so generating them needs little memory too. `--reference` also runs msaccucmp
(it loads both tensors whole: expect several GB and minutes). Run: `python3 benchmarks/bench_compare_big.py`.
"""

from __future__ import annotations

import argparse
import os
import resource
import struct
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
CHUNK = 1 << 24


def write_pair(root: Path, count: int) -> tuple[Path, Path, Path]:
    import numpy as np

    from precision_tool.formats.ge import ge_graph as g
    from precision_tool.formats.npu.dump_proto import dump_data_class
    from precision_tool.formats.tf.golden import golden_file_name
    from precision_tool.formats.npu.dump_types import DataType, Format
    from precision_tool.formats.npu.npu_dump import dump_file_name

    dump_dir, golden_dir = root / "dump", root / "golden"
    dump_dir.mkdir()
    golden_dir.mkdir()
    message = dump_data_class()()
    message.op_name = "big/op"
    item = message.output.add()
    item.data_type = DataType.FLOAT
    item.format = Format.ND
    item.shape.dim.append(count)
    item.size = 4 * count
    header = message.SerializeToString()
    golden = np.lib.format.open_memmap(golden_dir / golden_file_name("big/op", 0, 1_700_000_000_000_000),
                                       mode="w+", dtype=np.float32, shape=(count,))
    rng = np.random.default_rng(0)
    with open(dump_dir / dump_file_name("Abs", "big/op", 1, 0, 1_700_000_000_000_000), "wb") as handle:
        handle.write(struct.pack("<Q", len(header)) + header)
        for start in range(0, count, CHUNK):
            y = rng.standard_normal(min(CHUNK, count - start), dtype=np.float32)
            golden[start:start + y.size] = y
            handle.write((y + np.float32(1e-3) * rng.standard_normal(y.size, dtype=np.float32)).tobytes())
    golden.flush()
    del golden
    desc = g.TensorDesc(dtype="DT_FLOAT", layout="ND", shape=(count,), attrs={"origin_format": "ND"})
    graph = root / "graph_Build.json"
    g.write_graph_json(g.Model(path=graph, name="m", graphs=[g.Graph(name="g", ops=[
        g.Op(name="big/op", type="Abs", id=0, output_descs=[desc],
             attrs={"_datadump_original_op_names": g.attr_list_str(["big/op"])})])]), graph)
    return dump_dir, golden_dir, graph


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--gb", type=float, default=2.0, help="size of each tensor in GB (default 2)")
    parser.add_argument("--reference", action="store_true", help="also run msaccucmp on the pair")
    parser.add_argument("--write", metavar="DIR", help=argparse.SUPPRESS)
    args = parser.parse_args()
    count = int(args.gb * 1e9) // 4
    if args.write:
        write_pair(Path(args.write), count)
        return 0
    env = {k: v for k, v in os.environ.items() if k not in ("OPENBLAS_CORETYPE", "PRECISION_TOOL_CONFIG")}
    with tempfile.TemporaryDirectory(dir=os.environ.get("BENCH_TMP")) as temp:
        root = Path(temp)
        # written by a child process: a child's peak RSS counts what it inherits from its parent at fork,
        # so the measuring process must stay small
        subprocess.run([sys.executable, __file__, "--gb", str(args.gb), "--write", str(root)], check=True, env=env)
        dump_dir, golden_dir, graph = root / "dump", root / "golden", root / "graph_Build.json"
        print(f"pair of {count * 4 / 1e9:.2f} GB float32 tensors ({count} elements each)")
        started = time.perf_counter()
        with open(root / "vc.log", "w") as log:
            proc = subprocess.Popen([sys.executable, str(ROOT / "precision_tool" / "cli.py"), "--data",
                                     str(root / "pd"), "vc", "-lt", str(dump_dir), "-rt", str(golden_dir), "-g",
                                     str(graph), "-j", "1", "--backend", "native"],
                                    stdout=log, stderr=subprocess.STDOUT, env=env)
            _, status, usage = os.wait4(proc.pid, 0)  # this child's own peak, not the writer's
        elapsed = time.perf_counter() - started
        peak_mb = usage.ru_maxrss / 1024
        if os.waitstatus_to_exitcode(status) != 0:
            print((root / "vc.log").read_text())
            return 1
        row = next((root / "pd" / "temp" / "vector_compare").glob("*/result_*.csv")).read_text().splitlines()[1]
        print(f"ours      {elapsed:7.1f} s  {2 * count * 4 / 1e6 / elapsed:7.1f} MB/s  peak RSS {peak_mb:.0f} MB "
              f"(target < 1024 MB): {'OK' if peak_mb < 1024 else 'OVER'}")
        print("row:", row)
        if args.reference:
            out = root / "ref"
            out.mkdir()
            ref_tool = os.environ.get("MSACCUCMP", "/tmp/msacc/msaccucmp")
            started = time.perf_counter()
            ref = subprocess.run([ref_tool, "compare", "-m", str(dump_dir), "-g", str(golden_dir), "-f", str(graph),
                                  "-out", str(out)], capture_output=True, text=True, env=env)
            ref_s = time.perf_counter() - started
            ref_peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
            rows = [p.read_text().splitlines()[1] for p in out.glob("result_*.csv")]
            print(f"msaccucmp {ref_s:7.1f} s  peak RSS {ref_peak:.0f} MB (exit {ref.returncode})")
            print("row:", rows[0] if rows else "no CSV")
    return 0


if __name__ == "__main__":
    sys.exit(main())
