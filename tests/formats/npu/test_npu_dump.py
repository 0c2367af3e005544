"""Dump files: names, header-only reads, every data type round-tripped, and the bad-file corpus."""

from __future__ import annotations

import os
import struct
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from precision_tool.errors import FormatError
from precision_tool.formats.npu.dump_types import DataType, Format
from precision_tool.formats.npu.npu_dump import (
    DumpName, count_dump_tensors, dump_file_name, dump_name_of, parse_dump_name, read_dump_header, read_mapping,
    read_tensor,
)
from precision_tool.formats.npu.npu_dump_write import TensorSpec, write_dump

ELEMENT_TYPES = {
    DataType.FLOAT: np.float32, DataType.FLOAT16: np.float16, DataType.DOUBLE: np.float64,
    DataType.INT8: np.int8, DataType.UINT8: np.uint8, DataType.INT16: np.int16, DataType.UINT16: np.uint16,
    DataType.INT32: np.int32, DataType.INT64: np.int64, DataType.UINT32: np.uint32, DataType.UINT64: np.uint64,
    DataType.BOOL: np.bool_, DataType.COMPLEX64: np.complex64, DataType.COMPLEX128: np.complex128,
    DataType.QINT8: np.int8, DataType.QINT16: np.int16, DataType.QINT32: np.int32, DataType.QUINT8: np.uint8,
    DataType.QUINT16: np.uint16, DataType.DUAL_SUB_INT8: np.int8, DataType.DUAL_SUB_UINT8: np.uint8,
    DataType.RESOURCE: np.int64, DataType.UNDEFINED: np.int8,
    DataType.BF16: ml_dtypes.bfloat16, DataType.FLOAT8_E5M2: ml_dtypes.float8_e5m2,
    DataType.FLOAT8_E4M3FN: ml_dtypes.float8_e4m3fn, DataType.FLOAT8_E8M0: ml_dtypes.float8_e8m0fnu,
}


def sample(data_type: int, shape: tuple[int, ...], seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    if data_type == DataType.UINT1:
        return rng.integers(0, 2, size=shape).astype(np.uint8)
    if data_type == DataType.COMPLEX32:
        parts = rng.standard_normal(shape + (2,)).astype(np.float16).astype(np.float32)
        return (parts[..., 0] + 1j * parts[..., 1]).astype(np.complex64)
    dtype = np.dtype(ELEMENT_TYPES[data_type])
    if dtype == np.bool_:
        return rng.integers(0, 2, size=shape).astype(bool)
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        return rng.integers(info.min, info.max, size=shape, dtype=dtype, endpoint=True)
    if dtype.kind == "c":
        return (rng.standard_normal(shape) + 1j * rng.standard_normal(shape)).astype(dtype)
    if data_type == DataType.FLOAT8_E8M0:
        return (2.0 ** rng.integers(-20, 20, size=shape)).astype(dtype)
    return (rng.standard_normal(shape) * 3).astype(dtype)


ALL_WRITABLE = sorted(set(ELEMENT_TYPES) | {DataType.UINT1, DataType.COMPLEX32})


@pytest.mark.parametrize("data_type", ALL_WRITABLE, ids=lambda d: DataType(d).name)
@settings(max_examples=8, deadline=None)
@given(shape=st.lists(st.integers(1, 9), min_size=1, max_size=4).map(tuple), seed=st.integers(0, 2**16))
def test_every_data_type_round_trips(tmp_path_factory, data_type: int, shape: tuple[int, ...], seed: int) -> None:
    folder = tmp_path_factory.mktemp("rt")
    array = sample(data_type, shape, seed)
    path = folder / dump_file_name("Op", "a/b.c", 3, 1, 1_700_000_000_000_000)
    write_dump(path, op_name="a/b.c", inputs=[TensorSpec(array, data_type=data_type)],
               outputs=[TensorSpec(array[..., ::-1].copy(), data_type=data_type, format=Format.NCHW,
                                   origin_name="orig", origin_output_index=2)])
    dump = read_dump_header(path)
    assert dump.op_name == "a/b.c"
    assert [t.data_type for t in dump.tensors] == [data_type, data_type]
    assert dump.outputs[0].format == Format.NCHW
    assert (dump.outputs[0].origin_name, dump.outputs[0].origin_output_index) == ("orig", 2)
    got_in, got_out = read_tensor(dump, dump.inputs[0]), read_tensor(dump, dump.outputs[0])
    assert got_in.shape == shape
    if data_type not in (DataType.UINT1, DataType.COMPLEX32):
        assert got_in.dtype == np.dtype(ELEMENT_TYPES[data_type])
    np.testing.assert_array_equal(got_in.view(np.uint8) if got_in.dtype.itemsize == 1 and data_type in (
        DataType.FLOAT8_E5M2, DataType.FLOAT8_E4M3FN, DataType.FLOAT8_E8M0) else got_in,
        array.view(np.uint8) if array.dtype.itemsize == 1 and data_type in (
            DataType.FLOAT8_E5M2, DataType.FLOAT8_E4M3FN, DataType.FLOAT8_E8M0) else array)
    np.testing.assert_array_equal(got_out.astype(np.float64) if got_out.dtype.kind == "V" else got_out,
                                  array[..., ::-1])
    assert dump.inputs[0].offset + dump.inputs[0].size == dump.outputs[0].offset
    assert dump.outputs[0].offset + dump.outputs[0].size == os.path.getsize(path)


def test_uint1_is_bit_packed_msb_first(tmp_path: Path) -> None:
    bits = np.array([1, 0, 0, 0, 0, 0, 0, 1, 1, 1], dtype=np.uint8)
    path = tmp_path / "Op.x.1.1.1"
    write_dump(path, op_name="x", inputs=[], outputs=[TensorSpec(bits, data_type=DataType.UINT1)])
    dump = read_dump_header(path)
    assert dump.outputs[0].size == 2
    with open(path, "rb") as handle:
        handle.seek(dump.outputs[0].offset)
        assert handle.read(2) == bytes([0b10000001, 0b11000000])
    np.testing.assert_array_equal(read_tensor(dump, dump.outputs[0]), bits)


def test_header_read_touches_no_tensor_data(tmp_path: Path) -> None:
    """A 2 GiB sparse dump: reading its header is instant and allocates nothing of that size."""
    small = np.zeros((4,), np.float32)
    path = tmp_path / "Big.op.1.1.1"
    write_dump(path, op_name="op", inputs=[], outputs=[TensorSpec(small)])
    from precision_tool.formats.npu.dump_proto import dump_data_class

    data = path.read_bytes()
    (length,) = struct.unpack_from("<Q", data)
    message = dump_data_class().FromString(data[8:8 + length])
    message.output[0].shape.dim[:] = [1 << 29]
    message.output[0].size = 1 << 31
    header = message.SerializeToString()
    with open(path, "wb") as handle:
        handle.write(struct.pack("<Q", len(header)) + header)
        handle.truncate(8 + len(header) + (1 << 31))
    dump = read_dump_header(path)
    assert dump.outputs[0].shape == (1 << 29,)
    assert count_dump_tensors(path) == (0, 1)


def test_empty_shape_means_size_and_undefined_is_int8(tmp_path: Path, raw_dump) -> None:
    path = raw_dump(tmp_path / "Op.x.1.1.1", data_type=DataType.UNDEFINED, shape=(), size=6,
                    payload=bytes([1, 2, 3, 250, 5, 6]))
    dump = read_dump_header(path)
    np.testing.assert_array_equal(read_tensor(dump, dump.outputs[0]), np.array([1, 2, 3, -6, 5, 6], np.int8))
    path = raw_dump(tmp_path / "Op.y.1.1.1", data_type=DataType.FLOAT, shape=(), size=8,
                    payload=np.array([1.5, 2.5], np.float32).tobytes())
    dump = read_dump_header(path)
    np.testing.assert_array_equal(read_tensor(dump, dump.outputs[0]), [1.5, 2.5])


def test_format_high_bits_are_masked_and_trailing_bytes_warned(tmp_path: Path, raw_dump) -> None:
    path = raw_dump(tmp_path / "Op.x.1.1.1", fmt=(4 << 8) | Format.NC1HWC0, shape=(1, 1, 1, 1, 4), size=16,
                    payload=bytes(16) + b"junk")
    dump = read_dump_header(path)
    assert dump.outputs[0].format == Format.NC1HWC0
    assert dump.warnings == ("4 bytes after the last data block are ignored",)


# --- names --------------------------------------------------------------------------------------
def test_name_variants() -> None:
    assert parse_dump_name("Conv2D.net_conv1.12.3.1718260502123456") == DumpName(
        "Conv2D", "net_conv1", 12, 3, 1718260502123456)
    assert parse_dump_name("Conv2D.net_conv1.12.1718260502123456") == DumpName(
        "Conv2D", "net_conv1", 12, None, 1718260502123456)
    ffts = parse_dump_name("MatMul.net_mm.7.2.1718260502123456.4.5.6.0")
    assert ffts == DumpName("MatMul", "net_mm", 7, 2, 1718260502123456, (4, 5, 6, 0))
    assert (ffts.task_type, ffts.context_id, ffts.thread_id) == (4, 5, 6)
    opdebug = parse_dump_name("Opdebug.Node_OpDebug.12.3.1718260502123456")
    assert opdebug is not None and opdebug.is_opdebug
    for not_a_dump in ("mapping.csv", "x.npy", "Conv2D.a.b.c.d", "Conv2D.a.1.2.3.4", "12345", ".a.1.2", "A.b.1.²"):
        assert parse_dump_name(not_a_dump) is None


def test_file_name_replaces_slash_and_dot() -> None:
    assert dump_file_name("Add", "scope/add.1", 4, 0, 17) == "Add.scope_add_1.4.0.17"


def test_mapping_csv_resolves_numbered_names(tmp_path: Path) -> None:
    (tmp_path / "mapping.csv").write_text("1234567,Conv2D.a_very_long_name.5.1.1718260502000000\n")
    assert read_mapping(tmp_path) == {"1234567": "Conv2D.a_very_long_name.5.1.1718260502000000"}
    name = dump_name_of(tmp_path / "1234567")
    assert name is not None and (name.op_name, name.task_id) == ("a_very_long_name", 5)
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "mapping.csv").write_text("1,2,3\n")
    with pytest.raises(FormatError, match="mapping.csv: line 1"):
        read_mapping(tmp_path / "sub")


# --- the bad-file corpus --------------------------------------------------------------------------
@pytest.mark.parametrize("case", ["empty", "short", "header past end", "garbage header", "sizes do not add up",
                                  "unknown dtype", "unknown format", "shape bigger than block"])
def test_bad_files_raise_one_line_naming_the_file(tmp_path: Path, bad_corpus, case: str) -> None:
    path, fragment = bad_corpus(tmp_path)[case]
    with pytest.raises(FormatError) as info:
        dump = read_dump_header(path)
        for tensor in dump.tensors:
            read_tensor(dump, tensor)
    message = str(info.value)
    assert message.startswith(str(path) + ": ")
    assert fragment in message
    assert "\n" not in message
