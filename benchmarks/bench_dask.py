"""Whole-network comparison on the local pool vs a 2-worker Dask LocalCluster, side by side.

R "ranks" (folders), each 300 chained ops of small tensors (bench_compare.build: fp16 NPU dumps, float32
golden .npy, a graph JSON); every rank folder is compared (one run of R comparisons, as `vc` does for a
multi-device dump) (i) on the local process pool and (ii) through dask_executor on a LocalCluster of 2 worker
processes, 1 thread each, started once beforehand. Prints both times, the ratio, and whether every CSV is
byte-identical. Run: `python3 benchmarks/bench_dask.py [--ranks R] [--ops N] [--elements N]` (`--ranks 64`
for the issue's figure, about 3 minutes on 2 cores; the default 32 takes about half that).
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))


def _specs(ranks: list[tuple[Path, Path, Path]]) -> list:
    from precision_tool.analysis.compare import network_compare as nc

    return [nc.RunSpec(f"rank {r}", str(dump), f"result_rank{r}.csv", golden_dir=str(golden), graph_path=str(graph))
            for r, (dump, golden, graph) in enumerate(ranks)]


def _run(specs: list, out: Path, workers: int, executor=None) -> float:  # type: ignore[no-untyped-def]
    from precision_tool.analysis.compare import network_compare as nc

    out.mkdir()
    started = time.perf_counter()
    runs = nc.run_specs(specs, out, workers=workers, threshold=0.98, executor=executor)
    seconds = time.perf_counter() - started
    assert all(run.summary.complete for run in runs)
    return seconds


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--ranks", type=int, default=32)
    parser.add_argument("--ops", type=int, default=300)
    parser.add_argument("--elements", type=int, default=16384)
    parser.add_argument("--workers", type=int, default=2, help="Dask workers (and local pool processes)")
    args = parser.parse_args()
    from bench_compare import build
    from distributed import LocalCluster

    from precision_tool.analysis.compare.engine.dask_executor import connect

    with tempfile.TemporaryDirectory() as temp:
        root = Path(temp)
        started = time.perf_counter()
        ranks, nbytes = [], 0
        for r in range(args.ranks):
            dump, golden, graph, size = build(root / f"rank_{r}", args.ops, args.elements)
            ranks.append((dump, golden, graph))
            nbytes += size
        mb = nbytes / 1e6
        print(f"data: {args.ranks} ranks x {args.ops} ops of {args.elements} elements, {mb:.0f} MB of NPU dumps and "
              f"golden tensors; {os.cpu_count()} cores; written in {time.perf_counter() - started:.1f} s")
        specs = _specs(ranks)
        local_s = _run(specs, root / "local", args.workers)
        print(f"local pool ({args.workers} processes)  {local_s:7.2f} s  {mb / local_s:8.1f} MB/s")
        started = time.perf_counter()
        cluster = LocalCluster(n_workers=args.workers, threads_per_worker=1, processes=True, dashboard_address=":0",
                               silence_logs=40)
        try:
            with connect(cluster.scheduler_address) as executor:
                print(f"LocalCluster started in {time.perf_counter() - started:.1f} s ({executor.describe()})")
                dask_s = _run(specs, root / "dask", args.workers, executor)
        finally:
            cluster.close()
        print(f"Dask LocalCluster        {dask_s:7.2f} s  {mb / dask_s:8.1f} MB/s")
        print(f"ratio                    {dask_s / local_s:7.2f}x the local pool's time")
        names = sorted(p.name for p in (root / "local").glob("*.csv"))
        same = len(names) == args.ranks and all(
            (root / "local" / n).read_bytes() == (root / "dask" / n).read_bytes() for n in names)
        print("CSVs identical:", same)
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
