"""Every everyday command on a network of many ops, against what it must at least read (issue 28 item 2).

Builds benchmarks/big_workspace.py's workspace (default 20,000 ops), runs `vc` once so a result exists,
then times each command as a user types it (`python3 precision_tool/cli.py --data WS ...`, start-up
included) beside its reading floor: a fresh Python process that only reads the files the command must
read (start-up included too), warm page cache. Commands:

- `ac -c`: every section after a fresh comparison; floor: every file of the workspace (as vc);
- `vcs`: the newest result CSV;
- `ls -n NAME`: the graph index cache (temp/cache/graphs); the first `ls` parses the graph instead;
- `ni OP`: the graph index cache, the op's block of the graph, the result CSV, the op's dump and goldens;
- `ls dump`: the header of every dump file (its first 4 KB);
- `report`: the result CSVs and the files of the outputs it reads again (at most REPORT_TENSOR_LIMIT).

Each command and floor runs `--repeat` times, alternating; medians count, and the ratio is printed
against the target (2x). Where a command does more than read (ac -c compares; report draws), the line
says so. A second line under each says where a miss comes from: the tool's own start-up (a process that
only imports what every one-shot command loads: the shell, rich and numpy), which no command can skip
and a bare reading process does not pay, and what the command spends beyond it, against the floor's own
time beyond a bare `python3 -c pass`.

Run: python3 benchmarks/bench_commands.py [--ops 20000] [--repeat 3]
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
sys.path.insert(0, str(ROOT / "benchmarks"))

CLI = [sys.executable, str(ROOT / "precision_tool" / "cli.py")]
TARGET = 2.0
STARTUP = f"import sys; sys.path.insert(0, {str(ROOT)!r}); import precision_tool.shell.main, rich.console, numpy"
"""What every one-shot command imports before it reads anything (bench_startup.py times the shell's prompt)."""
READER = """
import os, sys
for path in sys.argv[2:]:
    if os.path.isdir(path):
        for folder, _, names in os.walk(path):
            for name in names:
                with open(os.path.join(folder, name), "rb") as handle:
                    handle.read(int(sys.argv[1]) or -1)
    else:
        with open(path, "rb") as handle:
            handle.read(int(sys.argv[1]) or -1)
"""


def timed(command: list[str], env: dict[str, str]) -> float:
    started = time.perf_counter()
    proc = subprocess.run(command, capture_output=True, text=True, env=env)
    seconds = time.perf_counter() - started
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(command[2:])} failed ({proc.returncode}): "
                         f"{proc.stdout[-1500:]} {proc.stderr[-800:]}")
    return seconds


def floor(paths: list[Path], env: dict[str, str], head: int = 0) -> list[str]:
    """The command that reads `paths` (files, or folders whole); `head`: only the first bytes of each file."""
    return [sys.executable, "-c", READER, str(head), *map(str, paths)]


def main() -> int:
    from bench_many_ops import cli_env
    from big_workspace import make_workspace

    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--ops", type=int, default=20_000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    env = cli_env()
    with tempfile.TemporaryDirectory() as temp:
        root = Path(temp) / "ws"
        facts = make_workspace(root, ops=args.ops)
        ws = ["--data", str(root)]
        timed([*CLI, *ws, "vc"], env)
        timed([*CLI, *ws, "ls", "-t", "Relu"], env)  # the graph index cache, as any later ls finds it
        graph = next((root / "npu" / "debug_0" / "graph").glob("*_Build.txt"))
        dumps = root / "npu" / "debug_0" / "dump"
        golden = root / "tf" / "dump"
        first = facts["first_divergent"]
        csv = max((root / "temp" / "vector_compare").glob("*/result_*.csv"))
        caches = root / "temp" / "cache"
        op_files = [p for p in dumps.rglob("*") if p.is_file() and first.replace("/", "_") in p.name]
        op_goldens = [p for p in golden.iterdir() if p.name.startswith(first.replace("/", "_") + ".")]
        name = first.rsplit("/", 2)[0]
        cases = [
            ("ac -c", ["ac", "-c"], floor([graph, dumps, golden], env), "also compares every tensor: vc's floor"),
            ("vcs", ["vcs"], floor([csv], env), ""),
            (f"ls -n {name}", ["ls", "-n", name], floor([caches / "graphs"], env), ""),
            (f"ni {first}", ["ni", first], floor([caches / "graphs", csv, *op_files, *op_goldens], env),
             "reads the op's block of the graph too"),
            ("ls dump", ["ls", "dump"], floor([dumps], env, head=4096), ""),
            ("report", ["report"], floor([csv, dumps, golden], env),
             "reads up to REPORT_TENSOR_LIMIT outputs again and draws the page: floor is every tensor"),
        ]
        print(f"data: {args.ops:,} ops in {root}; {os.cpu_count()} cores; {args.repeat} runs each, medians")
        bare = statistics.median(timed([sys.executable, "-c", "pass"], env) for _ in range(args.repeat))
        startup = statistics.median(timed([sys.executable, "-c", STARTUP], env) for _ in range(args.repeat))
        print(f"start-up: a bare python3 {bare:.2f} s; the tool's imports every command pays {startup:.2f} s")
        for label, command, floor_command, note in cases:
            ours, floors = [], []
            for _ in range(args.repeat):
                floors.append(timed(floor_command, env))
                ours.append(timed([*CLI, *ws, *command], env))
            mine, base = statistics.median(ours), statistics.median(floors)
            verdict = "meets" if mine <= TARGET * base else "MISSES"
            print(f"{label:<42} {mine:6.2f} s   floor {base:5.2f} s   {mine / base:5.1f}x (target {TARGET:.0f}x: "
                  f"{verdict})" + (f"   [{note}]" if note else ""))
            if mine > TARGET * base:
                work, reading = mine - startup, max(base - bare, 0.001)
                print(f"{'':<42}   of which start-up {startup:.2f} s; beyond it {work:5.2f} s against the floor's "
                      f"{reading:.2f} s of reading ({work / reading:.1f}x)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
