"""`ls dump` on a workspace of 20,000 NPU dump files: headers only, target about one second.

The reference (msaccucmp) has no listing command, so there is nothing to run side by side; the script
times ours, cold-ish (first run) and warm (second run), against the issue's target.

    python3 benchmarks/bench_ls_dump.py [--files 20000]
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


def make_workspace(root: Path, count: int) -> Path:
    import numpy as np

    from precision_tool.formats.npu.layouts import to_device
    from precision_tool.formats.npu.dump_types import Format
    from precision_tool.formats.npu.npu_dump import dump_file_name
    from precision_tool.formats.npu.npu_dump_write import TensorSpec, write_dump

    folder = root / "npu" / "debug_0" / "dump" / "20240613143502" / "0" / "ge_default_20240613143502_1" / "1" / "0"
    x = np.ones((1, 20, 8, 8), dtype=np.float16)
    spec = TensorSpec(to_device(x, "NCHW", "NC1HWC0"), format=Format.NC1HWC0, original_shape=x.shape)
    template = folder / "template"
    write_dump(template, op_name="net/conv", inputs=[spec, spec], outputs=[spec])
    data = template.read_bytes()
    template.unlink()
    for n in range(count):
        name = dump_file_name("Conv2D", f"net/block{n // 100}/conv{n % 100}", n, 1, 1_718_260_502_000_000 + n)
        (folder / name).write_bytes(data)
    return folder


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--files", type=int, default=20000, help="number of dump files (default 20000)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench_ls_") as tmp:
        root = Path(tmp) / "precision_data"
        folder = make_workspace(root, args.files)
        env = {**os.environ, "COLUMNS": "200", "NO_COLOR": "1"}
        command = [sys.executable, str(ROOT / "precision_tool" / "cli.py"), "--data", str(root), "ls", "dump"]
        times = []
        for _ in range(2):
            start = time.perf_counter()
            proc = subprocess.run(command, capture_output=True, text=True, env=env)
            times.append(time.perf_counter() - start)
            if proc.returncode != 0:
                raise SystemExit(proc.stderr[-2000:])
        rows = proc.stdout.count("\n")
        print(f"ls dump of {args.files} files in {folder.relative_to(root)}: first run {times[0]:.2f} s, "
              f"second run {times[1]:.2f} s ({rows} lines printed; target about 1 s; the reference has no listing)")

if __name__ == "__main__":
    main()
