"""`ls dump` on a workspace of 20,000 NPU dump files: headers only, target about one second.

The reference has no listing command (msaccucmp reads whole files); for scale the script also times
reading the same files completely, which is what a tool without header-only reads must do.

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

    from precision_tool.formats.layouts import to_device
    from precision_tool.formats.npu_dump import Format, TensorSpec, dump_file_name, write_dump

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
        subprocess.run(command, capture_output=True, env=env)  # warm the page cache for both measurements
        start = time.perf_counter()
        proc = subprocess.run(command, capture_output=True, text=True, env=env)
        ours = time.perf_counter() - start
        if proc.returncode != 0:
            raise SystemExit(proc.stderr[-2000:])
        rows = proc.stdout.count("\n")
        start = time.perf_counter()
        total = 0
        for path in folder.iterdir():
            total += len(path.read_bytes())
        whole = time.perf_counter() - start
        print(f"ls dump of {args.files} files: {ours:.2f} s ({rows} lines printed; target ~1 s)")
        print(f"reading the same files whole (what a tool without header-only reads must do, before any parsing): "
              f"{whole:.2f} s for {total / 1e6:.0f} MB; ratio {whole / ours:.1f}x")


if __name__ == "__main__":
    main()
