"""Whole-network comparison, ours vs msaccucmp and vs a plain read of the same files, side by side
(targets, issue 28: >= 25x faster than msaccucmp, within 5x the plain read).

300 chained ops; each NPU dump holds one fp16 input and one fp16 output of 262,144 elements; float32
golden .npy files; a graph JSON. Each tool runs --repeat times (alternating; medians reported): `vc`
(whole command), msaccucmp's `compare`, and a plain read (every byte of every dump and golden file read
into memory by as many processes as `vc` uses, warm cache: the floor of any comparison of these files).
It also prints the two floors under any `vc` of these files, which the plain read does not count: starting
Python with numpy, and the ten metrics' arithmetic on the distinct pairs (an op's input is the previous
op's output, measured once), in memory, shared by the processes.
The package's bytecode is compiled first, as `pip install` does (msaccucmp's was, by its own install):
without it every start of `vc` compiles ~100 modules again when PYTHONDONTWRITEBYTECODE is set.
Run: `python3 benchmarks/bench_compare.py [--ops N] [--repeat 3] [--reference PATH]` (the reference
defaults to $MSACCUCMP or /tmp/msacc/msaccucmp, as built by the anchor script).
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def build(root: Path, ops: int, elements: int) -> tuple[Path, Path, Path, int]:
    import numpy as np

    from precision_tool.formats.ge import ge_graph as g
    from precision_tool.formats.tf.golden import golden_file_name
    from precision_tool.formats.npu.dump_types import Format
    from precision_tool.formats.npu.npu_dump import dump_file_name
    from precision_tool.formats.npu.npu_dump_write import TensorSpec, write_dump

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


def _read_files(paths: list[str]) -> int:
    buffer = bytearray(1 << 22)
    total = 0
    for path in paths:
        with open(path, "rb", buffering=0) as handle:
            while n := handle.readinto(buffer):
                total += n
    return total


def plain_read(folders: list[Path], workers: int) -> float:
    """Seconds to read every byte of every file under `folders` with `workers` forked processes (cat-like)."""
    import multiprocessing

    files = sorted(str(p) for folder in folders for p in folder.rglob("*") if p.is_file())
    started = time.perf_counter()
    if workers <= 1:
        _read_files(files)
    else:
        with multiprocessing.get_context("fork").Pool(workers) as pool:
            sum(pool.map(_read_files, [files[k::workers] for k in range(workers)]))
    return time.perf_counter() - started


def floors(dump_dir: Path, workers: int, env: dict[str, str], sample: int = 20) -> tuple[float, float]:
    """(start-up, arithmetic) seconds: `python3 -c "import numpy"` (median of 3), and compare_arrays on
    `sample` output pairs already in memory, scaled to every op's output and divided among `workers`."""
    import numpy as np

    from precision_tool.analysis.results.metrics import compare_arrays
    from precision_tool.analysis.results.metrics_sweeps import keep_freed_memory
    from precision_tool.formats.npu.npu_dump import read_dump_header, read_tensor

    starts = []
    for _ in range(3):
        started = time.perf_counter()
        subprocess.run([sys.executable, "-c", "import numpy"], check=True, env=env)
        starts.append(time.perf_counter() - started)
    keep_freed_memory()  # as vc's workers do
    dumps = sorted(dump_dir.iterdir())
    pairs = []
    for path in dumps[:sample]:
        dump = read_dump_header(path)
        npu = read_tensor(dump, dump.outputs[0]).reshape(-1)
        pairs.append((npu, (npu.astype(np.float32) * np.float32(1.001)).astype(np.float32)))
    started = time.perf_counter()
    for npu, golden in pairs:
        compare_arrays(npu, golden)
    per_pair = (time.perf_counter() - started) / len(pairs)
    return statistics.median(starts), per_pair * len(dumps) / workers


def _runs(times: list[float]) -> str:
    return f"median {statistics.median(times):6.2f} s  runs {', '.join(f'{t:.2f}' for t in times)}"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--ops", type=int, default=300)
    parser.add_argument("--elements", type=int, default=262144)
    parser.add_argument("--repeat", type=int, default=3, help="runs of each tool, alternating (medians count)")
    parser.add_argument("--reference", default=os.environ.get("MSACCUCMP", "/tmp/msacc/msaccucmp"))
    args = parser.parse_args()
    env = {k: v for k, v in os.environ.items() if k not in ("OPENBLAS_CORETYPE", "PRECISION_TOOL_CONFIG")}
    workers = os.cpu_count() or 1  # vc's default pool
    have_reference = Path(args.reference).exists()
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(ROOT / "precision_tool")], check=True,
                   stdout=subprocess.DEVNULL)
    with tempfile.TemporaryDirectory() as temp:
        root = Path(temp)
        dump_dir, golden_dir, graph, nbytes = build(root, args.ops, args.elements)
        mb = nbytes / 1e6
        print(f"data: {args.ops} ops, {mb:.0f} MB of NPU dumps and golden tensors; {os.cpu_count()} cores, "
              f"{workers} processes")
        plain_read([dump_dir, golden_dir], workers)  # warm the page cache
        ours_t: list[float] = []
        ref_t: list[float] = []
        read_t: list[float] = []
        for n in range(args.repeat):
            read_t.append(plain_read([dump_dir, golden_dir], workers))
            started = time.perf_counter()
            ours = subprocess.run([sys.executable, str(ROOT / "precision_tool" / "cli.py"), "--data",
                                   str(root / f"pd{n}"), "vc", "-lt", str(dump_dir), "-rt", str(golden_dir), "-g",
                                   str(graph), "--backend", "native"], capture_output=True, text=True, env=env)
            ours_t.append(time.perf_counter() - started)
            if ours.returncode != 0:
                print(ours.stdout, ours.stderr)
                return 1
            if have_reference:
                out = root / f"ref{n}"
                out.mkdir()
                started = time.perf_counter()
                ref = subprocess.run([args.reference, "compare", "-m", str(dump_dir), "-g", str(golden_dir), "-f",
                                      str(graph), "-out", str(out)], capture_output=True, text=True, env=env)
                ref_t.append(time.perf_counter() - started)
                if ref.returncode not in (0, 2):  # 2: a Data op has no dump (always, in NPU-vs-golden runs)
                    print(ref.stdout[-2000:], ref.stderr[-2000:])
                    return 1
        ours_s, read_s = statistics.median(ours_t), statistics.median(read_t)
        print(f"plain read {_runs(read_t)}  {mb / read_s:8.1f} MB/s")
        print(f"ours       {_runs(ours_t)}  {mb / ours_s:8.1f} MB/s  (whole `vc` command, start-up included)")
        if not have_reference:
            print(f"ratio      ours / plain read {ours_s / read_s:.1f}x")
            print(f"reference not found at {args.reference}; build it with ../shared/tools/msaccucmp-anchor/setup.sh")
            return 0
        ref_s = statistics.median(ref_t)
        print(f"msaccucmp  {_runs(ref_t)}  {mb / ref_s:8.1f} MB/s")
        verdict = "meets" if ref_s / ours_s >= 25 else "MISSES"
        read_verdict = "meets" if ours_s / read_s <= 5 else "MISSES"
        print(f"ratio      msaccucmp / ours {ref_s / ours_s:.1f}x (target >= 25x: {verdict});   "
              f"ours / plain read {ours_s / read_s:.1f}x (target <= 5x: {read_verdict});   "
              f"msaccucmp / plain read {ref_s / read_s:.0f}x")
        start_s, arithmetic_s = floors(dump_dir, workers, env)
        print(f"floors     start-up (python3 -c 'import numpy') {start_s:.2f} s + the metrics' arithmetic "
              f"({args.ops} distinct pairs in memory, {workers} processes) {arithmetic_s:.2f} s = "
              f"{start_s + arithmetic_s:.2f} s = {(start_s + arithmetic_s) / read_s:.1f}x the plain read;   "
              f"ours {ours_s / (start_s + arithmetic_s):.2f}x these floors")
        strip = lambda text: text.replace(str(root), "")  # noqa: E731
        same = all(
            strip(next((root / f"pd{n}" / "temp" / "vector_compare").glob("*/result_*.csv")).read_text())
            == strip(next((root / f"ref{n}").glob("result_*.csv")).read_text())
            for n in range(args.repeat)
        )
        print("CSVs identical (paths aside):", same)
    return 0


if __name__ == "__main__":
    sys.exit(main())
