"""A workspace dumped over two steps, made from the demo's real files (tests of `vc --step all`).

The demo's run with both problems fixed (`demo --fixed`, npu/debug_2: every output meets the threshold)
becomes npu/debug_0 holding dump iteration 0; iteration 1 is the same dump with every tensor from
`FIRST_BAD` on changed (the op's inputs kept), so step 1 diverges first and at that op. The golden side is
tf/dump/step_0/ and step_1/ (docs/steps.md), copies of the demo's golden tensors.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
FIRST_BAD = "conv2_Conv2D"
"""The dump-name field of the op from which iteration 1's tensors are changed."""
FIRST_BAD_GRAPH_NAME = "conv2/Conv2D"


def build(demo: Path, target: Path) -> Path:
    """Copy `demo` to `target` and turn it into the two-step workspace described above."""
    shutil.copytree(demo, target, symlinks=True)
    shutil.rmtree(target / "temp", ignore_errors=True)  # the demo's results: not of this workspace's dump
    proc = subprocess.run([sys.executable, str(ROOT / "precision_tool" / "cli.py"), "demo", "--fixed", str(target)],
                          capture_output=True, text=True, cwd=ROOT, timeout=900)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    npu = target / "npu"
    shutil.rmtree(npu / "debug_0")
    shutil.rmtree(npu / "debug_1")
    (npu / "debug_2").rename(npu / "debug_0")
    first = next((npu / "debug_0" / "dump").glob("*/0/*/1/0"))
    second = first.parent / "1"
    shutil.copytree(first, second)
    change_from(second, FIRST_BAD)
    golden = target / "tf" / "dump"
    for step in (0, 1):
        (golden / f"step_{step}").mkdir()
        for npy in golden.glob("*.npy"):
            shutil.copy2(npy, golden / f"step_{step}" / npy.name)
    for npy in golden.glob("*.npy"):
        npy.unlink()  # golden per step only: the flat files would be a third, unnamed step
    shutil.rmtree(target / "temp", ignore_errors=True)
    return target


def change_from(folder: Path, first_bad: str) -> None:
    """Rewrite the dump files of `folder` from the op `first_bad` on (in dump order): every tensor gets a
    large deterministic change, except the inputs of `first_bad` itself."""
    import numpy as np

    from precision_tool.formats.npu.npu_dump import parse_dump_name, read_dump_header, read_tensor
    from precision_tool.formats.npu.npu_dump_write import TensorSpec, write_dump

    files = sorted(folder.iterdir(), key=lambda p: int(p.name.rsplit(".", 1)[1]))
    names = [parse_dump_name(p.name).op_name for p in files]  # type: ignore[union-attr]
    start = names.index(first_bad)
    rng = np.random.default_rng(7)
    for position, path in enumerate(files[start:]):
        dump = read_dump_header(path)

        def spec(header, change: bool) -> TensorSpec:  # type: ignore[no-untyped-def]
            array = read_tensor(dump, header)
            if change and array.dtype.kind == "f" and array.size:
                noise = rng.standard_normal(array.shape).astype(np.float64)
                wide = array.astype(np.float64)
                finite = wide[np.isfinite(wide)]
                scale = float(finite.std()) if finite.size else 1.0
                array = (-wide + noise * (0.1 * scale + 1e-3)).astype(array.dtype)  # cosine near -1
            return TensorSpec(array, format=header.raw_format, original_shape=header.original_shape,
                              data_type=header.data_type, origin_name=header.origin_name,
                              origin_output_index=header.origin_output_index, address=header.address,
                              sub_format=header.sub_format)

        inputs = [spec(h, change=position > 0) for h in dump.inputs]
        outputs = [spec(h, change=True) for h in dump.outputs]
        write_dump(path, op_name=dump.op_name, inputs=inputs, outputs=outputs, dump_time_us=dump.dump_time,
                   version=dump.version)
