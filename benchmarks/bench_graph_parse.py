"""Parse a generated 20,000-op Build graph (~69 MB) with ours and with google.protobuf.text_format,
then time the one-shot CLI: the first `ls` on a fresh workspace (parse + cache write) and later
`ls`/`ni` runs from the cache. Prints times and the ratio.

    python3 benchmarks/bench_graph_parse.py [--ops 20000] [--light] [--repeat 3] [--skip-protobuf]

Cold times run in fresh processes (imports included); each is repeated and reported as best and
median, because other work on a 2-core machine shifts single runs by half a second.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Callable

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from precision_tool.formats.ge.ge_graph import write_graph_text  # noqa: E402
from precision_tool.formats.ge.ge_proto import model_def_class  # noqa: E402
from precision_tool.formats.ge.ge_synthetic import synthetic_build_model  # noqa: E402


def timed_runs(command: list[str], repeat: int, before: Callable[[], object] | None = None) -> list[float]:
    """Wall seconds of `repeat` runs of a command (each in a fresh process)."""
    env = {**os.environ, "NO_COLOR": "1", "COLUMNS": "200"}
    times = []
    for _ in range(repeat):
        if before is not None:
            before()
        started = time.perf_counter()
        subprocess.run(command, check=True, cwd=ROOT, env=env, stdout=subprocess.DEVNULL)
        times.append(time.perf_counter() - started)
    return times


def show(label: str, times: list[float]) -> float:
    best, median = min(times), statistics.median(times)
    print(f"{label:<48} best {best:6.2f} s   median {median:6.2f} s   ({len(times)} runs)")
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--ops", type=int, default=20_000, help="ops in the generated graph")
    parser.add_argument("--light", action="store_true", help="fewer attributes per op (smaller file)")
    parser.add_argument("--repeat", type=int, default=3, help="runs of each timed command")
    parser.add_argument("--skip-protobuf", action="store_true", help="do not run protobuf's slow parser")
    args = parser.parse_args()
    print(f"load average: {os.getloadavg()[0]:.2f} (1 min), cores: {len(os.sched_getaffinity(0))}")
    with tempfile.TemporaryDirectory() as temp:
        root = Path(temp) / "precision_data"
        path = root / "npu" / "debug_0" / "graph" / "ge_proto_00000094_graph_1_Build.txt"
        model = synthetic_build_model(args.ops, light=args.light)
        write_graph_text(model, path)
        print(f"graph: {args.ops} ops, {path.stat().st_size / 1e6:.1f} MB")
        python = [sys.executable, "-c"]
        load = (f"import sys; sys.path.insert(0, {str(ROOT)!r}); {{}}"
                f"from precision_tool.formats.ge.ge_graph import load_graph; load_graph({str(path)!r})")
        ours = show("ours: load_graph, fresh process (cold)", timed_runs(python + [load.format("")], args.repeat))
        one = ("import precision_tool.formats.ge.ge_text as t; t.PARALLEL_MIN_CHARS = 1 << 62; ")
        show("ours: the same in one process (no helper)", timed_runs(python + [load.format(one)], 1))

        if not args.skip_protobuf:
            from google.protobuf import text_format

            text = path.read_text()
            started = time.perf_counter()
            message = text_format.Parse(text, model_def_class()())
            reference = time.perf_counter() - started
            assert len(message.graph[0].op) == args.ops
            print(f"{'google.protobuf.text_format.Parse (in process)':<48}      {reference:6.2f} s")
            print(f"{'ratio protobuf / ours (cold, best)':<48}      {reference / ours:6.1f}x")
            del message, text

        cli = [sys.executable, str(ROOT / "precision_tool" / "cli.py"), "--data", str(root)]
        name = model.graphs[0].ops[len(model.graphs[0].ops) // 2].name
        cache = root / "temp"
        show("first `ls -n layer7/Add_` (parse + write cache)",
             timed_runs(cli + ["ls", "-n", "layer7/Add_"], args.repeat,
                        before=lambda: shutil.rmtree(cache, ignore_errors=True)))
        show("later `ls -n layer7/Add_` (from cache)", timed_runs(cli + ["ls", "-n", "layer7/Add_"], args.repeat))
        show("later `ls` (all ops listed, from cache)", timed_runs(cli + ["ls"], args.repeat))
        show("later `ni NAME` (cache + one op block)", timed_runs(cli + ["ni", name], args.repeat))
        show("start-up without graphs (`help`)", timed_runs(cli + ["help"], args.repeat))


if __name__ == "__main__":
    main()
