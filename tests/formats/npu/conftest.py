"""Fixtures for the NPU dump format tests: dump files written by our writer from real arrays (a conv
op's dump, a raw one with any header, a corpus of damaged files); the dump command tests in
tests/analysis/dumps/ use them too."""

from __future__ import annotations

import struct
from pathlib import Path
from typing import Callable

import numpy as np
import pytest

from precision_tool.formats.npu.dump_proto import dump_data_class
from precision_tool.formats.npu.layouts import to_device
from precision_tool.formats.npu.dump_types import Format
from precision_tool.formats.npu.npu_dump import dump_file_name
from precision_tool.formats.npu.npu_dump_write import TensorSpec, write_dump

DUMP_SUBDIR = Path("npu/debug_0/dump/20240613143502/0/ge_default_20240613143502_1/1/0")


def write_conv_dump(folder: Path, op_name: str, *, task_id: int = 1, stream_id: int = 1,
              timestamp_us: int = 1_718_260_502_000_000, op_type: str = "Conv2D", seed: int = 0,
              channels: int = 20) -> Path:
    """A dump of a conv-like op: an NC1HWC0 fp16 input and output, and an FRACTAL_Z weight input."""
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((2, channels, 5, 7)).astype(np.float16)
    w = rng.standard_normal((6, channels, 3, 3)).astype(np.float16)
    y = np.maximum(x, 0)
    path = folder / dump_file_name(op_type, op_name, task_id, stream_id, timestamp_us)
    write_dump(
        path, op_name=op_name, dump_time_us=timestamp_us,
        inputs=[TensorSpec(to_device(x, "NCHW", "NC1HWC0"), format=Format.NC1HWC0, original_shape=x.shape),
                TensorSpec(to_device(w, "NCHW", "FRACTAL_Z"), format=Format.FRACTAL_Z, original_shape=w.shape)],
        outputs=[TensorSpec(to_device(y, "NCHW", "NC1HWC0"), format=Format.NC1HWC0, original_shape=y.shape,
                            origin_name=op_name, origin_output_index=0)],
    )
    return path


def write_raw_dump(path: Path, *, data_type: int = 1, fmt: int = 2, shape: tuple[int, ...] = (4,), size: int = 16,
             payload: bytes | None = None, header_length: int | None = None) -> Path:
    """A dump built field by field, for files our writer would refuse to write (the bad-file corpus)."""
    message = dump_data_class()()
    message.op_name = "bad/op"
    item = message.output.add()
    item.data_type = data_type
    item.format = fmt
    item.shape.dim.extend(shape)
    item.size = size
    header = message.SerializeToString()
    body = payload if payload is not None else bytes(size)
    length = len(header) if header_length is None else header_length
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(struct.pack("<Q", length) + header + body)
    return path


@pytest.fixture
def conv_dump() -> Callable[..., Path]:
    """conv_dump(folder, op_name, task_id=, stream_id=, timestamp_us=, op_type=, seed=, channels=) -> path."""
    return write_conv_dump


@pytest.fixture
def raw_dump() -> Callable[..., Path]:
    """raw_dump(path, data_type=, fmt=, shape=, size=, payload=, header_length=) -> path (may be malformed)."""
    return write_raw_dump


def _bad_files(folder: Path) -> dict[str, tuple[Path, str]]:
    """Each bad file, with a fragment of the one-line message that must name it."""
    folder.mkdir(parents=True, exist_ok=True)
    files: dict[str, tuple[Path, str]] = {}
    empty = folder / "Add.empty.1.1.1"
    empty.write_bytes(b"")
    files["empty"] = (empty, "empty")
    short = folder / "Add.short.1.1.2"
    short.write_bytes(b"\x01\x02\x03")
    files["short"] = (short, "shorter than the 8-byte header length")
    past = write_raw_dump(folder / "Add.past.1.1.3", header_length=10_000)
    files["header past end"] = (past, "runs past the end")
    garbage = folder / "Add.garbage.1.1.4"
    garbage.write_bytes(struct.pack("<Q", 12) + b"\xff" * 12 + b"\x00" * 4)
    files["garbage header"] = (garbage, "not a valid DumpData")
    truncated = write_raw_dump(folder / "Add.trunc.1.1.5", size=64, payload=bytes(10))
    files["sizes do not add up"] = (truncated, "truncated")
    files["unknown dtype"] = (write_raw_dump(folder / "Add.dtype.1.1.6", data_type=99), "unknown data type number 99")
    files["unknown format"] = (write_raw_dump(folder / "Add.fmt.1.1.7", fmt=77), "unknown format number 77")
    files["shape bigger than block"] = (write_raw_dump(folder / "Add.shape.1.1.8", shape=(100,), size=16),
                                        "needs 400 bytes but the block holds 16")
    return files


@pytest.fixture
def bad_corpus() -> Callable[[Path], dict[str, tuple[Path, str]]]:
    """bad_corpus(folder) writes one file per kind of damage: {case: (path, message fragment)}."""
    return _bad_files
