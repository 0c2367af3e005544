"""A multi-device job's dump through the real `vc`: the local pool vs a 2-worker Dask LocalCluster, and msaccucmp.

Generates a data-parallel workspace (rank_workspace.py: R ranks × ~N ops of E-element fp16 tensors, one
golden folder per rank, one rank's gradient corrupted), then runs `precision-tool --data WS vc` (every rank
against its golden, then the rank summary) twice: on the local process pool, and with `--scheduler` on a
LocalCluster of 2 worker processes started beforehand. Checks both name the planted rank and op and that
their CSVs are byte-identical; then runs msaccucmp on K of the ranks (one `compare` per rank folder, as a
user of the reference must) and scales its time to R ranks. Run: `python3 benchmarks/bench_ranks.py
[--ranks 64] [--ops 300] [--elements 16384] [--reference-ranks 4]`.
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
sys.path.insert(0, str(ROOT / "benchmarks"))


def _vc(workspace: Path, *extra: str) -> tuple[float, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("PRECISION_TOOL_CONFIG", "PRECISION_DATA")}
    env.update(COLUMNS="200", NO_COLOR="1")
    started = time.perf_counter()
    proc = subprocess.run([sys.executable, str(ROOT / "precision_tool" / "cli.py"), "--data", str(workspace), "vc",
                           "--backend", "native", *extra], capture_output=True, text=True, env=env)
    seconds = time.perf_counter() - started
    if proc.returncode != 0:
        raise SystemExit(f"vc {' '.join(extra)} failed (exit {proc.returncode}):\n{proc.stdout[-2000:]}{proc.stderr[-2000:]}")
    return seconds, " ".join(proc.stdout.split())


def _csvs(folder: Path) -> dict[str, bytes]:
    return {p.name.split("_", 2)[-1]: p.read_bytes() for p in folder.glob("result_*.csv")}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--ranks", type=int, default=64)
    parser.add_argument("--ops", type=int, default=300)
    parser.add_argument("--elements", type=int, default=16384)
    parser.add_argument("--workers", type=int, default=2, help="Dask workers, 1 thread each")
    parser.add_argument("--reference", default=os.environ.get("MSACCUCMP", "/tmp/msacc/msaccucmp"))
    parser.add_argument("--reference-ranks", type=int, default=4, metavar="K",
                        help="ranks msaccucmp compares (its time is scaled to all ranks); 0 skips it")
    args = parser.parse_args()
    # the package's bytecode, as `pip install` compiles it (else every `vc` start compiles ~100 modules again
    # when PYTHONDONTWRITEBYTECODE is set)
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(ROOT / "precision_tool")], check=True,
                   stdout=subprocess.DEVNULL)
    from distributed import LocalCluster
    from rank_workspace import GRAPH_NAME, REFERENCE_GRAPH, make_rank_workspace

    with tempfile.TemporaryDirectory() as temp:
        ws = Path(temp) / "precision_data"
        planted = make_rank_workspace(ws, ranks=args.ranks, ops=args.ops, elements=args.elements)
        nbytes = sum(p.stat().st_size for p in ws.rglob("*") if p.is_file())
        mb = nbytes / 1e6
        print(f"data: {args.ranks} ranks x {planted.ops} ops of {args.elements} elements, {mb:.0f} MB of NPU dumps and "
              f"golden tensors, written in {planted.seconds:.1f} s; {os.cpu_count()} cores")
        expected = f"rank {planted.fault_rank} went wrong first: the output of"
        local_s, local_out = _vc(ws)
        local = _csvs(sorted((ws / "temp" / "vector_compare").iterdir())[-1])
        print(f"ours, local pool            {local_s:7.1f} s  {mb / local_s:7.1f} MB/s  names rank {planted.fault_rank}: "
              f"{expected in local_out and planted.fault_op in local_out}")
        started = time.perf_counter()
        cluster = LocalCluster(n_workers=args.workers, threads_per_worker=1, processes=True, dashboard_address=":0",
                               silence_logs=40)
        try:
            print(f"LocalCluster of {args.workers} workers started in {time.perf_counter() - started:.1f} s")
            dask_s, dask_out = _vc(ws, "--scheduler", cluster.scheduler_address)
        finally:
            cluster.close()
        dask = _csvs(sorted((ws / "temp" / "vector_compare").iterdir())[-1])
        print(f"ours, Dask LocalCluster     {dask_s:7.1f} s  {mb / dask_s:7.1f} MB/s  names rank {planted.fault_rank}: "
              f"{expected in dask_out and planted.fault_op in dask_out}")
        print(f"CSVs identical (local pool vs Dask, {len(local)} CSVs): {local == dask and len(local) == args.ranks}")
        if args.reference_ranks and Path(args.reference).exists():
            dump_root = next((ws / "npu" / "debug_0" / "dump").iterdir())
            k = min(args.reference_ranks, args.ranks)
            started = time.perf_counter()
            for rank in range(k):
                out = Path(temp) / f"ref{rank}"
                out.mkdir()
                subprocess.run([args.reference, "compare", "-m", str(dump_root / str(rank) / GRAPH_NAME / "1" / "0"),
                                "-g", str(ws / "tf" / "dump" / f"rank_{rank}"), "-f", str(ws / REFERENCE_GRAPH),
                                "-out", str(out)], capture_output=True, text=True)
            per_rank = (time.perf_counter() - started) / k
            ref_s = per_rank * args.ranks
            same = all(next((Path(temp) / f"ref{r}").glob("result_*.csv")).read_bytes().decode().replace(str(ws), "")
                       == local[f"rank{r}.csv"].decode().replace(str(ws), "") for r in range(k))
            print(f"msaccucmp, one rank at a time {per_rank:5.1f} s per rank (measured on {k}) → {ref_s:7.1f} s for "
                  f"{args.ranks} ranks; its CSVs identical to ours: {same}")
            print(f"ratio: local pool {ref_s / local_s:5.1f}x, Dask LocalCluster {ref_s / dask_s:5.1f}x faster than msaccucmp")
        print(f"ratio: Dask LocalCluster takes {dask_s / local_s:4.2f}x the local pool's time on this one machine")
    return 0


if __name__ == "__main__":
    sys.exit(main())
