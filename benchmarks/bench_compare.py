"""Whole-network comparison, ours vs msaccucmp, side by side (issue 6 target: ≥ 10× faster).

300 chained ops; each NPU dump holds one fp16 input and one fp16 output of 262,144 elements; float32
golden .npy files; a graph JSON. Run: `python3 benchmarks/bench_compare.py [--ops N] [--reference PATH]`
(the reference defaults to $MSACCUCMP or /tmp/msacc/msaccucmp, as built by the anchor script).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def build(root: Path, ops: int, elements: int) -> tuple[Path, Path, Path, int]:
    import numpy as np

    from precision_tool.formats import ge_graph as g
    from precision_tool.formats.golden import golden_file_name
    from precision_tool.formats.dump_types import Format
    from precision_tool.formats.npu_dump import dump_file_name
    from precision_tool.formats.npu_dump_write import TensorSpec, write_dump

    rng = np.random.default_rng(0)
    dump_dir = root / "npu" / "dump"
    golden_dir = root / "golden"
    dump_dir.mkdir(parents=True)
    golden_dir.mkdir(parents=True)
    desc = g.TensorDesc(dtype="DT_FLOAT16", layout="ND", shape=(elements,), attrs={"origin_format": "ND"})
    graph_ops = [g.Op(name="input", type="Data", id=0, output_descs=[desc])]
    start = rng.standard_normal(elements).astype(np.float32)
    np.save(golden_dir / golden_file_name("input", 0, 1_700_000_000_000_000), start)
    previous, previous_npu = "input", start.astype(np.float16)
    nbytes = start.nbytes
    for k in range(ops):
        name = f"layer{k}/add"
        y = rng.standard_normal(elements).astype(np.float32)
        np.save(golden_dir / golden_file_name(name, 0, 1_700_000_000_000_001 + k), y)
        out = (y + rng.standard_normal(elements).astype(np.float32) * 1e-2).astype(np.float16)
        write_dump(dump_dir / dump_file_name("Add", name, k, 0, 1_700_000_000_000_001 + k), op_name=name,
                   inputs=[TensorSpec(previous_npu, Format.ND, (elements,))],
                   outputs=[TensorSpec(out, Format.ND, (elements,))])
        graph_ops.append(g.Op(name=name, type="Add", id=k + 1, inputs=[f"{previous}:0"], output_descs=[desc],
                              attrs={"_datadump_original_op_names": g.attr_list_str([name])}))
        previous, previous_npu = name, out
        nbytes += y.nbytes + 2 * out.nbytes
    graph = root / "graph_Build.json"
    g.write_graph_json(g.Model(path=graph, name="m", graphs=[g.Graph(name="g", ops=graph_ops)]), graph)
    return dump_dir, golden_dir, graph, nbytes


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--ops", type=int, default=300)
    parser.add_argument("--elements", type=int, default=262144)
    parser.add_argument("--reference", default=os.environ.get("MSACCUCMP", "/tmp/msacc/msaccucmp"))
    args = parser.parse_args()
    env = {k: v for k, v in os.environ.items() if k not in ("OPENBLAS_CORETYPE", "PRECISION_TOOL_CONFIG")}
    with tempfile.TemporaryDirectory() as temp:
        root = Path(temp)
        dump_dir, golden_dir, graph, nbytes = build(root, args.ops, args.elements)
        mb = nbytes / 1e6
        print(f"data: {args.ops} ops, {mb:.0f} MB of NPU dumps and golden tensors; {os.cpu_count()} cores")
        started = time.perf_counter()
        ours = subprocess.run([sys.executable, str(ROOT / "precision_tool" / "cli.py"), "--data", str(root / "pd"),
                               "vc", "-lt", str(dump_dir), "-rt", str(golden_dir), "-g", str(graph),
                               "--backend", "native"], capture_output=True, text=True, env=env)
        ours_s = time.perf_counter() - started
        if ours.returncode != 0:
            print(ours.stdout, ours.stderr)
            return 1
        print(f"ours      {ours_s:7.2f} s  {mb / ours_s:8.1f} MB/s  (exit {ours.returncode})")
        if not Path(args.reference).exists():
            print(f"reference not found at {args.reference}; build it with ../shared/tools/msaccucmp-anchor/setup.sh")
            return 0
        out = root / "ref"
        out.mkdir()
        started = time.perf_counter()
        ref = subprocess.run([args.reference, "compare", "-m", str(dump_dir), "-g", str(golden_dir), "-f",
                              str(graph), "-out", str(out)], capture_output=True, text=True, env=env)
        ref_s = time.perf_counter() - started
        print(f"msaccucmp {ref_s:7.2f} s  {mb / ref_s:8.1f} MB/s  (exit {ref.returncode}; 2 = a Data op has no dump)")
        print(f"ratio     {ref_s / ours_s:7.1f}x faster (target >= 10x)")
        ours_csv = next((root / "pd" / "temp" / "vector_compare").glob("*/result_*.csv")).read_text()
        ref_csv = next(out.glob("result_*.csv")).read_text()
        strip = lambda text: text.replace(str(root), "")  # noqa: E731
        print("CSVs identical (paths aside):", strip(ours_csv) == strip(ref_csv))
    return 0


if __name__ == "__main__":
    sys.exit(main())
