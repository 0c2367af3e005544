"""Builders of hostile inputs at scale (issue 28, item 4), shared by tests/hostile/test_big_inputs.py (small
sizes) and benchmarks/bench_hostile_big.py (the real ones): sparse dumps and .npy files of any size (holes,
no disk used), a tfdbg v1 record whose tensor TensorFlow refuses, and an NPU dump whose header length is 0.
"""

from __future__ import annotations

import struct
from pathlib import Path

T0_US = 1_718_260_502_000_000
FLOAT16, ND, NC1HWC0 = 2, 2, 3  # dump data type and formats (formats.md §2.3)


def sparse_dump(folder: Path, op: str, elements: int, *, data_type: int = FLOAT16, fmt: int = ND,
                shape: tuple[int, ...] | None = None, original_shape: tuple[int, ...] | None = None,
                op_type: str = "Relu", task: int = 999) -> Path:
    """An NPU dump of one output of `elements` values (2 bytes each: float16), its data a hole of the file."""
    from precision_tool.formats.npu.dump_proto import dump_data_class
    from precision_tool.formats.npu.npu_dump import dump_file_name

    message = dump_data_class()()
    message.version, message.op_name, message.dump_time = "2.0", op, T0_US
    output = message.output.add()
    output.data_type, output.format, output.size = data_type, fmt, elements * 2
    output.shape.dim.extend(shape or (elements,))
    output.original_shape.dim.extend(original_shape or shape or (elements,))
    header = message.SerializeToString()
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / dump_file_name(op_type, op, task, 0, T0_US + task)
    with open(path, "wb") as handle:
        handle.write(struct.pack("<Q", len(header)) + header)
        handle.truncate(8 + len(header) + elements * 2)
    return path


def sparse_npy(path: Path, elements: int) -> Path:
    """A float32 .npy of `elements` zeros, its data a hole of the file."""
    from precision_tool.analysis.dumps.decode import npy_header

    header = npy_header("<f4", (elements,))
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "wb") as handle:
        handle.write(header)
        handle.truncate(len(header) + elements * 4)
    return path


def zero_header_dump(folder: Path, trailing: int = 1580) -> Path:
    """An NPU dump whose 8-byte header length is 0, followed by `trailing` bytes nothing explains."""
    from precision_tool.formats.npu.npu_dump import dump_file_name

    folder.mkdir(parents=True, exist_ok=True)
    path = folder / dump_file_name("Relu", "net/zero/Relu", 7, 0, T0_US + 7)
    path.write_bytes(struct.pack("<Q", 0) + bytes(range(256)) * (trailing // 256) + b"\x01" * (trailing % 256))
    return path


def tfdbg_overfull_record(run_dir: Path) -> tuple[Path, Path]:
    """A tfdbg v1 run holding a good float32 [3] record (`good/Relu:0`) and a float32 [3] record that lists 5
    float_val values (`bad/Relu:0`), which TensorFlow refuses; (good file, bad file)."""
    from precision_tool.formats.tf.tf_protos import message_class

    device = run_dir / "_tfdbg_device_,job_localhost,replica_0,task_0,device_CPU_0"
    written = []
    for node, values in (("good/Relu", [1.0, 2.0, 3.0]), ("bad/Relu", [1.0, 2.0, 3.0, 4.0, 5.0])):
        event = message_class("Event")()
        event.wall_time = T0_US / 1e6
        value = event.summary.value.add()
        value.tag = node
        value.node_name = f"{node}:0:DebugIdentity"
        value.tensor.dtype = 1  # DT_FLOAT
        value.tensor.tensor_shape.dim.add().size = 3
        value.tensor.float_val.extend(values)
        folder = device / node.rsplit("/", 1)[0]
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / f"{node.rsplit('/', 1)[1]}_0_DebugIdentity_{T0_US}"
        path.write_bytes(event.SerializeToString())
        written.append(path)
    return written[0], written[1]
