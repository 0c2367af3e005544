"""The least work any comparison written in Python must do on a workspace of many small ops (issue 28).

bench_many_ops.py runs this as its own process, side by side with `vc` and the plain read: its wall time is
a floor under `vc` that the plain read is not, because a comparison cannot stop at reading bytes. Here, in
as many forked processes as `vc` uses, batches of 256 neighbouring dumps, as `vc` hands them out:

- every NPU dump is opened, read whole and closed, and its header parsed with the tool's own DumpData
  class (protobuf's C parser); each input and output gets its fields read, a numpy view of its bytes and
  one line of text (what a result row is built from);
- every golden .npy is read whole and viewed as numpy;
- the lines come back to the parent, which writes them to one file.

Nothing else: no matching, no conversion of layouts, no metrics, no summary, no cache, no check of what the
files claim. Whatever `vc` does beyond this (the ten metrics, the exact CSV, the summary) comes on top.
Interpreter start-up and the imports this needs (numpy, protobuf) are counted, as they are for `vc`.

Run: python3 benchmarks/many_ops_floor.py WORKSPACE [--workers N]   (prints its own wall time)
"""

from __future__ import annotations

import time

STARTED = time.perf_counter()

import argparse  # noqa: E402  (after the clock starts: imports are part of the floor)
import os  # noqa: E402
import struct  # noqa: E402
import sys  # noqa: E402
from multiprocessing import get_context  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Any, Callable  # noqa: E402

import numpy as np  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from precision_tool.formats.npu.dump_proto import dump_data_class  # noqa: E402

BATCH = 256
_FILES: list[str] = []
"""The dumps, then the goldens: inherited by the forked workers, as vc's plan is."""


def _dump_lines(path: str, parse: Callable[[bytes], Any]) -> list[str]:
    fd = os.open(path, os.O_RDONLY)
    try:
        data = os.read(fd, os.fstat(fd).st_size)
    finally:
        os.close(fd)
    length = struct.unpack_from("<Q", data)[0]
    header = parse(data[8:8 + length])
    offset = 8 + length
    lines = []
    for kind, tensors in (("input", header.input), ("output", header.output)):
        for index, tensor in enumerate(tensors):
            size = tensor.size
            values = np.frombuffer(data, np.uint8, size, offset)
            offset += size
            lines.append(f"{header.op_name},{kind}:{index},{tensor.data_type},{tensor.format},"
                         f"{tuple(tensor.shape.dim)},{tensor.address},{values.size}\r\n")
    return lines


def _golden(path: str) -> None:
    with open(path, "rb", buffering=0) as handle:
        data = handle.read()
    length = struct.unpack_from("<H", data, 8)[0]  # .npy version 1: the header's length
    np.frombuffer(data, np.uint8, -1, 10 + length)


def _batch(span: tuple[int, int]) -> str:
    parse = dump_data_class().FromString
    lines: list[str] = []
    for path in _FILES[span[0]:span[1]]:
        if path.endswith(".npy"):
            _golden(path)
        else:
            lines.extend(_dump_lines(path, parse))
    return "".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("workspace", type=Path)
    parser.add_argument("--workers", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--out", type=Path, help="where the lines go (default: a file beside the workspace)")
    args = parser.parse_args()
    dumps, goldens = [], []
    for folder, into in ((args.workspace / "npu", dumps), (args.workspace / "tf", goldens)):
        for dirpath, _, names in os.walk(folder):
            into.extend(os.path.join(dirpath, name) for name in names
                        if (name.endswith(".npy") if into is goldens else "." in name and "_graph_" not in name))
    dumps.sort()
    _FILES.extend(dumps + goldens)
    spans = [(start, min(start + BATCH, len(_FILES))) for start in range(0, len(_FILES), BATCH)]
    out = args.out or args.workspace.parent / "many_ops_floor.txt"
    with get_context("fork").Pool(args.workers) as pool, open(out, "w", encoding="utf-8", newline="") as handle:
        rows = 0
        for text in pool.imap(_batch, spans):
            handle.write(text)
            rows += text.count("\n")
    print(f"floor: {len(dumps):,} dumps ({rows:,} tensors) and {len(goldens):,} goldens in {args.workers} "
          f"processes: {time.perf_counter() - STARTED:.3f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
