"""Parse a generated 20,000-op Build graph with ours and with google.protobuf.text_format; then a warm
start from the workspace cache. Prints times and ratios.

    python3 benchmarks/bench_graph_parse.py [--ops 20000] [--light]
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

from precision_tool.formats.ge_graph import load_graph, write_graph_text  # noqa: E402
from precision_tool.formats.ge_proto import model_def_class  # noqa: E402
from precision_tool.formats.ge_synthetic import synthetic_build_model  # noqa: E402


def fresh_process(code: str) -> float:
    """Seconds a fresh python takes to run `code` (cold: imports included)."""
    started = time.perf_counter()
    subprocess.run([sys.executable, "-c", code], check=True, cwd=ROOT)
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--ops", type=int, default=20_000, help="ops in the generated graph")
    parser.add_argument("--light", action="store_true", help="fewer attributes per op (smaller file)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as temp:
        root = Path(temp) / "precision_data"
        path = root / "npu" / "debug_0" / "graph" / "ge_proto_00000094_graph_1_Build.txt"
        write_graph_text(synthetic_build_model(args.ops, light=args.light), path)
        size_mb = path.stat().st_size / 1e6
        print(f"graph: {args.ops} ops, {size_mb:.1f} MB")

        cold = fresh_process(f"import sys; sys.path.insert(0, {str(ROOT)!r});"
                             f"from precision_tool.formats.ge_graph import load_graph; load_graph({str(path)!r})")
        started = time.perf_counter()
        ours = load_graph(path)
        warm_ours = time.perf_counter() - started
        print(f"ours   load_graph (fresh process, cold):  {cold:8.2f} s")
        print(f"ours   load_graph (in process):           {warm_ours:8.2f} s")

        from google.protobuf import text_format

        text = path.read_text()
        started = time.perf_counter()
        message = text_format.Parse(text, model_def_class()())
        reference = time.perf_counter() - started
        print(f"google.protobuf.text_format.Parse:        {reference:8.2f} s  ({len(message.graph[0].op)} ops)")
        print(f"ratio protobuf / ours (in process):       {reference / warm_ours:8.1f}x")
        assert len(ours.graphs[0].ops) == len(message.graph[0].op)

        cli = [sys.executable, str(ROOT / "precision_tool" / "cli.py"), "--data", str(root)]
        env = {**os.environ, "NO_COLOR": "1"}
        started = time.perf_counter()
        subprocess.run(cli + ["ls", "-n", "layer7/Add_"], check=True, env=env, capture_output=True)
        first = time.perf_counter() - started
        started = time.perf_counter()
        subprocess.run(cli + ["ls", "-n", "layer7/Add_"], check=True, env=env, capture_output=True)
        second = time.perf_counter() - started
        started = time.perf_counter()
        subprocess.run(cli + ["ni", ours.graphs[0].ops[len(ours.graphs[0].ops) // 2].name], check=True, env=env,
                       capture_output=True)
        ni_time = time.perf_counter() - started
        started = time.perf_counter()
        subprocess.run(cli + ["help"], check=True, env=env, capture_output=True)
        start_up = time.perf_counter() - started
        print(f"`ls -n` first run (parse + write cache):  {first:8.2f} s")
        print(f"`ls -n` later run (from cache):           {second:8.2f} s")
        print(f"`ni NAME` later run (one op block):       {ni_time:8.2f} s")
        print(f"start-up without graphs (`help`):         {start_up:8.2f} s")


if __name__ == "__main__":
    main()
