"""Writing Ascend NPU dump files as the runtime does (protobuf or nano/TLV layout, formats.md §2.2), for the
demo, tests and benchmarks; reading them is npu_dump.py."""

from __future__ import annotations

import os
import struct
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Sequence

from precision_tool.atomic import write_atomic
from precision_tool.formats.npu.dump_types import _ML_DTYPES, DataType, Format, numpy_dtype_of

if TYPE_CHECKING:
    import numpy as np


@dataclass
class TensorSpec:
    """One tensor to write: `array` in device layout (its shape is the dump shape)."""

    array: "np.ndarray"
    format: int = Format.ND
    original_shape: tuple[int, ...] | None = None
    data_type: int | None = None  # None: derived from array.dtype
    origin_name: str | None = None
    origin_output_index: int | None = None
    address: int = 0
    sub_format: int = 0


def data_type_for(dtype: "np.dtype[Any]") -> int:
    """The DataType a numpy dtype is written as (int8 → INT8, bfloat16 → BF16, ...)."""
    import numpy as np

    dtype = np.dtype(dtype)
    name = dtype.name
    for table in (_ML_DTYPES,):
        for number, type_name in table.items():
            if type_name == name:
                return int(number)
    preferred = {
        "float32": DataType.FLOAT, "float16": DataType.FLOAT16, "int8": DataType.INT8, "uint8": DataType.UINT8,
        "int16": DataType.INT16, "uint16": DataType.UINT16, "int32": DataType.INT32, "int64": DataType.INT64,
        "uint32": DataType.UINT32, "uint64": DataType.UINT64, "bool": DataType.BOOL, "float64": DataType.DOUBLE,
        "complex64": DataType.COMPLEX64, "complex128": DataType.COMPLEX128,
    }
    if name not in preferred:
        raise ValueError(f"numpy dtype {name} has no NPU dump data type")
    return int(preferred[name])


def _encode(spec: TensorSpec) -> tuple[int, bytes, tuple[int, ...]]:
    import numpy as np

    array = np.asarray(spec.array)
    data_type = data_type_for(array.dtype) if spec.data_type is None else int(spec.data_type)
    if data_type == DataType.UINT1:
        bits = np.ascontiguousarray(array, dtype=np.uint8).reshape(-1)
        if bits.size and int(bits.max()) > 1:
            raise ValueError("UINT1 tensors hold only 0 and 1")
        return data_type, np.packbits(bits).tobytes(), array.shape
    if data_type == DataType.COMPLEX32:
        pairs = np.ascontiguousarray(array, dtype=np.complex64).view(np.float32).astype(np.float16)
        return data_type, pairs.tobytes(), array.shape
    if data_type == DataType.HIFLOAT8:
        from precision_tool.formats.npu.hifloat8 import encode_hifloat8

        # uint8 arrays are taken as HiF8 codes as they are; anything else is rounded to HiF8
        codes = np.ascontiguousarray(array) if array.dtype == np.uint8 else encode_hifloat8(array)
        return data_type, codes.tobytes(), array.shape
    dtype = numpy_dtype_of(data_type)
    return data_type, np.ascontiguousarray(array, dtype=dtype).tobytes(), array.shape


def write_dump(
    path: str | os.PathLike[str],
    *,
    op_name: str,
    inputs: Sequence[TensorSpec],
    outputs: Sequence[TensorSpec],
    dump_time_us: int = 0,
    version: str = "2.0",
    variant: str = "protobuf",
) -> None:
    """Write a dump file as the NPU runtime does (atomic: a temp name, then os.replace).

    `variant="nano"` writes the TLV layout instead (formats.md §2.2; no dump time or op name in it:
    readers take both from the file name, so name the file with `dump_file_name`).
    """
    if variant == "nano":
        _write_nano(Path(path), inputs, outputs)
        return
    if variant != "protobuf":
        raise ValueError(f"unknown dump variant {variant!r} (protobuf or nano)")
    from precision_tool.formats.npu.dump_proto import dump_data_class

    message = dump_data_class()()
    message.version = version
    message.dump_time = dump_time_us
    message.op_name = op_name
    blocks: list[bytes] = []
    for spec in inputs:
        data_type, data, shape = _encode(spec)
        item = message.input.add()
        _fill(item, spec, data_type, shape, len(data))
        blocks.append(data)
    for spec in outputs:
        data_type, data, shape = _encode(spec)
        item = message.output.add()
        _fill(item, spec, data_type, shape, len(data))
        if spec.origin_name is not None or spec.origin_output_index is not None:
            item.original_op.name = spec.origin_name or ""
            item.original_op.output_index = spec.origin_output_index or 0
            item.original_op.data_type = data_type
            item.original_op.format = int(spec.format) & 0xFF
        blocks.append(data)
    header = message.SerializeToString()
    path = Path(path)
    write_atomic(path, [struct.pack("<Q", len(header)), header, *blocks])


def _fill(item: Any, spec: TensorSpec, data_type: int, shape: tuple[int, ...], size: int) -> None:
    item.data_type = data_type
    item.format = int(spec.format)
    item.shape.dim.extend(int(d) for d in shape)
    if spec.original_shape is not None:
        item.original_shape.dim.extend(int(d) for d in spec.original_shape)
    item.size = size
    item.address = spec.address
    item.sub_format = spec.sub_format


def _write_nano(path: Path, inputs: Sequence[TensorSpec], outputs: Sequence[TensorSpec]) -> None:
    from precision_tool.formats.npu.nano_dump import NanoTensorSpec, encode_nano_header

    blocks: list[bytes] = []
    described: dict[str, list[NanoTensorSpec]] = {"input": [], "output": []}
    for kind, specs in (("input", inputs), ("output", outputs)):
        for spec in specs:
            data_type, data, shape = _encode(spec)
            described[kind].append(NanoTensorSpec(
                data_type, int(spec.format), tuple(int(d) for d in shape),
                None if spec.original_shape is None else tuple(int(d) for d in spec.original_shape),
                len(data), spec.address, spec.origin_name if kind == "output" else None,
                spec.origin_output_index if kind == "output" else None,
            ))
            blocks.append(data)
    header = encode_nano_header(described["input"], described["output"])
    write_atomic(path, [struct.pack("<Q", len(header)), header, *blocks])
