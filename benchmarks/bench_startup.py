"""Time from starting the shell to the `PrecisionTool >` prompt, in a real pseudo-terminal.

Run: python3 benchmarks/bench_startup.py [--runs N]
Side by side: a bare `python3 -c pass` (the floor) and `import tensorflow` (what the original pays at
start, since it imports TensorFlow through its config module).
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

import pexpect

ROOT = Path(__file__).resolve().parents[1]


def time_prompt(data: Path) -> float:
    env = {**os.environ, "NO_COLOR": "1", "TERM": "xterm", "PROMPT_TOOLKIT_NO_CPR": "1",
           "PRECISION_TOOL_HISTORY": str(data / "history")}
    start = time.perf_counter()
    child = pexpect.spawn(sys.executable, [str(ROOT / "precision_tool" / "cli.py"), "--data", str(data)],
                          env=env, encoding="utf-8", timeout=30)
    child.expect_exact("PrecisionTool >")
    elapsed = time.perf_counter() - start
    child.sendcontrol("d")
    child.expect(pexpect.EOF)
    return elapsed


def time_command(args: list[str]) -> float:
    start = time.perf_counter()
    subprocess.run(args, check=True, capture_output=True)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=5)
    opts = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        data = Path(tmp)
        prompt = [time_prompt(data) for _ in range(opts.runs)]
    floor = [time_command([sys.executable, "-c", "pass"]) for _ in range(opts.runs)]
    tf = [time_command([sys.executable, "-c", "import tensorflow"]) for _ in range(2)]
    p, f, t = statistics.median(prompt), statistics.median(floor), statistics.median(tf)
    print(f"python3 -c pass            {f:6.3f} s")
    print(f"PrecisionTool > appears    {p:6.3f} s   (median of {opts.runs})")
    print(f"import tensorflow          {t:6.3f} s   (the original's start-up floor)")
    print(f"ratio import-tensorflow / ours: {t / p:.1f}x")


if __name__ == "__main__":
    main()
