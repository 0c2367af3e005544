"""The nano (TLV) dump variant: written by our writer, read into the same DumpFile/TensorHeader objects as the
protobuf variant, exact sizes enforced, bad files one line each, and `dc` / `ls dump` / `pt` on them."""

from __future__ import annotations

import dataclasses
import struct
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from precision_tool.errors import FormatError
from precision_tool.formats.npu.layouts import from_device, to_device
from precision_tool.formats.npu.nano_dump import NANO_MAGIC, PROTO_TO_NANO_TYPE
from precision_tool.formats.npu.dump_types import DataType, Format
from precision_tool.formats.npu.npu_dump import (
    TensorHeader, count_dump_tensors, dump_file_name, read_dump_header, read_tensor,
)
from precision_tool.formats.npu.npu_dump_write import TensorSpec, write_dump

NANO_TYPES = {
    DataType.FLOAT: np.float32, DataType.FLOAT16: np.float16, DataType.DOUBLE: np.float64,
    DataType.INT8: np.int8, DataType.UINT8: np.uint8, DataType.INT16: np.int16, DataType.UINT16: np.uint16,
    DataType.INT32: np.int32, DataType.INT64: np.int64, DataType.UINT32: np.uint32, DataType.UINT64: np.uint64,
    DataType.BOOL: np.bool_, DataType.COMPLEX64: np.complex64, DataType.COMPLEX128: np.complex128,
    DataType.QINT8: np.int8, DataType.QINT16: np.int16, DataType.QINT32: np.int32, DataType.QUINT8: np.uint8,
    DataType.QUINT16: np.uint16, DataType.DUAL_SUB_INT8: np.int8, DataType.DUAL_SUB_UINT8: np.uint8,
    DataType.RESOURCE: np.int64, DataType.UNDEFINED: np.int8, DataType.BF16: ml_dtypes.bfloat16,
}


def sample(dtype: type, shape: tuple[int, ...], seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    if np.dtype(dtype).kind in "iu":
        info = np.iinfo(dtype)
        return rng.integers(max(info.min, -1000), min(info.max, 1000), shape, endpoint=True).astype(dtype)
    if dtype == np.bool_:
        return rng.integers(0, 2, shape).astype(bool)
    if np.dtype(dtype).kind == "c":
        return (rng.standard_normal(shape) + 1j * rng.standard_normal(shape)).astype(dtype)
    return rng.standard_normal(shape).astype(dtype)


def write_both(folder: Path, stem: str, inputs: list[TensorSpec], outputs: list[TensorSpec]) -> tuple[Path, Path]:
    """The same tensors as a protobuf dump and as a nano dump (one folder each, same file name)."""
    name = dump_file_name("Conv2D", stem, 4, 1, 1_718_260_502_000_123)
    (folder / "pb").mkdir(parents=True, exist_ok=True)
    (folder / "nano").mkdir(parents=True, exist_ok=True)
    write_dump(folder / "pb" / name, op_name=stem.replace("/", "_"), inputs=inputs, outputs=outputs,
               dump_time_us=1_718_260_502_000_123)
    write_dump(folder / "nano" / name, op_name=stem, inputs=inputs, outputs=outputs, variant="nano")
    return folder / "pb" / name, folder / "nano" / name


def comparable(tensor: TensorHeader) -> TensorHeader:
    return dataclasses.replace(tensor, offset=0)


def test_nano_files_start_with_the_magic_and_fill_the_file_exactly(tmp_path: Path) -> None:
    x = sample(np.float16, (3, 4), 0)
    _, nano = write_both(tmp_path, "op", [TensorSpec(x)], [TensorSpec(x * 2)])
    raw = nano.read_bytes()
    (header_length,) = struct.unpack_from("<Q", raw, 0)
    assert struct.unpack_from("<I", raw, 8)[0] == NANO_MAGIC
    assert len(raw) == 8 + header_length + 2 * x.nbytes
    assert raw[-x.nbytes:] == (x * 2).tobytes()


@pytest.mark.parametrize("data_type", sorted(NANO_TYPES), ids=lambda t: DataType(t).name)
def test_every_nano_type_reads_as_the_protobuf_variant_does(tmp_path: Path, data_type: int) -> None:
    dtype = NANO_TYPES[data_type]
    a, b = sample(dtype, (2, 3, 5), 1), sample(dtype, (7,), 2)
    pb, nano = write_both(tmp_path, "net/op", [TensorSpec(a, data_type=data_type)],
                          [TensorSpec(b, data_type=data_type, origin_name="net/op", origin_output_index=1)])
    pb_dump, nano_dump = read_dump_header(pb), read_dump_header(nano)
    assert [comparable(t) for t in nano_dump.tensors] == [comparable(t) for t in pb_dump.tensors]
    assert (nano_dump.op_name, nano_dump.dump_time, nano_dump.name) == ("net_op", 1_718_260_502_000_123, pb_dump.name)
    assert nano_dump.version.startswith("nano")
    for mine, theirs in zip(nano_dump.tensors, pb_dump.tensors):
        got = read_tensor(nano_dump, mine)
        assert got.dtype == read_tensor(pb_dump, theirs).dtype
        np.testing.assert_array_equal(got, read_tensor(pb_dump, theirs))
    assert count_dump_tensors(nano) == (1, 1)


def test_uint1_round_trips_in_nano_files(tmp_path: Path) -> None:
    bits = sample(np.uint8, (3, 11), 3) % 2
    _, nano = write_both(tmp_path, "bits", [], [TensorSpec(bits, data_type=DataType.UINT1)])
    dump = read_dump_header(nano)
    assert dump.outputs[0].size == (33 + 7) // 8
    np.testing.assert_array_equal(read_tensor(dump, dump.outputs[0]), bits)


@settings(max_examples=25, deadline=None)
@given(n=st.integers(1, 3), c=st.integers(1, 40), h=st.integers(1, 6), w=st.integers(1, 6))
def test_device_layouts_round_trip_through_nano_files(tmp_path_factory, n: int, c: int, h: int, w: int) -> None:
    folder = tmp_path_factory.mktemp("nano_layouts")
    x = sample(np.float16, (n, c, h, w), n * c)
    k = sample(np.float32, (c + 3, c, 3, 2), c)
    m = sample(np.float16, (n, h * 7, w * 5), h)
    name = folder / dump_file_name("Conv2D", "conv", 1, 1, 1_718_260_502_000_000)
    write_dump(name, op_name="conv", variant="nano", inputs=[
        TensorSpec(to_device(x, "NCHW", "NC1HWC0"), format=Format.NC1HWC0, original_shape=x.shape),
        TensorSpec(to_device(k, "NCHW", "FRACTAL_Z"), format=Format.FRACTAL_Z, original_shape=k.shape),
    ], outputs=[TensorSpec(to_device(m, "ND", "FRACTAL_NZ"), format=Format.FRACTAL_NZ, original_shape=m.shape)])
    dump = read_dump_header(name)
    back = [from_device(read_tensor(dump, t), t.format, target, t.original_shape, original_format=target)
            for t, target in zip(dump.tensors, ("NCHW", "NCHW", "ND"))]
    for got, want in zip(back, (x, k, m)):
        np.testing.assert_array_equal(got, want)


def test_writer_refuses_types_nano_dumps_cannot_carry(tmp_path: Path) -> None:
    assert DataType.FLOAT8_E4M3FN not in PROTO_TO_NANO_TYPE
    with pytest.raises(ValueError, match="no nano dump number"):
        write_dump(tmp_path / "Op.x.1.1.1", op_name="x", inputs=[], variant="nano",
                   outputs=[TensorSpec(np.zeros(4, dtype=ml_dtypes.float8_e4m3fn))])
    assert not list(tmp_path.iterdir())


def nano_bytes(body_fix=None, *, tail: bytes = b"", data_type: int = 0, size: int = 16,
               items: bytes | None = None) -> bytes:
    """A one-output nano file built field by field (for damage our writer would not produce)."""
    if items is None:
        items = struct.pack("<II", 0, 8) + struct.pack("<Q", 4)
    record = struct.pack("<iiiiiiQQQI", data_type, 2, 0, 0, data_type, 2, 0, 0, size, len(items)) + items
    outputs = struct.pack("<I", 1) + record
    header = struct.pack("<II", NANO_MAGIC, 1) + struct.pack("<II", 5, len(outputs)) + outputs
    if body_fix:
        header = body_fix(header)
    return struct.pack("<Q", len(header)) + header + bytes(16) + tail


BAD_NANO = {
    "trailing bytes": (nano_bytes(tail=b"\0" * 4), "has 4 bytes after the last block"),
    "truncated": (nano_bytes(size=64), "is truncated"),
    "TLV past the header": (nano_bytes(lambda h: h[:12] + struct.pack("<I", 999) + h[16:]),
                            "claims 999 bytes"),
    "record cut short": (nano_bytes(lambda h: h[:12] + struct.pack("<I", len(h) - 36) + h[16:-20]),
                         "ends inside output 0"),
    "unknown nano type": (nano_bytes(data_type=77), "unknown nano data type number 77"),
    "int4": (nano_bytes(data_type=29), "nano data type 29 (INT4)"),
    "odd shape item": (nano_bytes(items=struct.pack("<II", 0, 5) + bytes(5)), "whole number of u64"),
    "item past its list": (nano_bytes(items=struct.pack("<II", 0, 64) + bytes(8)), "past the end of its list"),
}


@pytest.mark.parametrize("case", sorted(BAD_NANO))
def test_bad_nano_files_are_one_line_naming_the_file(tmp_path: Path, case: str) -> None:
    raw, fragment = BAD_NANO[case]
    path = tmp_path / "Add.bad.1.1.1718260502000000"
    path.write_bytes(raw)
    with pytest.raises(FormatError) as info:
        read_dump_header(path)
    message = str(info.value)
    assert str(path) in message and fragment in message and "\n" not in message


def test_good_nano_builder_reads(tmp_path: Path) -> None:
    """The hand-built file of the bad-file corpus is valid before it is damaged."""
    path = tmp_path / "Add.good.1.1.1718260502000000"
    path.write_bytes(nano_bytes())
    dump = read_dump_header(path)
    assert (dump.outputs[0].shape, dump.outputs[0].data_type) == ((4,), DataType.FLOAT)
    np.testing.assert_array_equal(read_tensor(dump, dump.outputs[0]), np.zeros(4, np.float32))


def test_dc_ls_and_pt_on_nano_dumps(cli, tmp_path: Path) -> None:
    root = tmp_path / "precision_data"
    folder = root / "npu/debug_0/dump/20240613143502/0/ge_default_1/1/0"
    folder.mkdir(parents=True)
    x = sample(np.float16, (2, 20, 5, 7), 5)
    good = folder / dump_file_name("Relu", "net/relu", 3, 1, 1_718_260_502_000_000)
    write_dump(good, op_name="net/relu", variant="nano", inputs=[], outputs=[
        TensorSpec(to_device(x, "NCHW", "NC1HWC0"), format=Format.NC1HWC0, original_shape=x.shape)])
    bad = folder / "Relu.broken.4.1.1718260502000001"
    bad.write_bytes(nano_bytes(tail=b"\0"))
    listing = cli("ls", "dump", data=root)
    assert listing.status == 1 and "net_relu" in listing.out  # the bad file makes `ls dump` fail
    assert f"{bad}:" in listing.out and "ls dump: 1 dump file(s) could not be read" in listing.out
    decoded = cli("dc", str(folder), "-f", "NCHW", "-o", str(tmp_path / "out"), data=root)
    assert decoded.status == 1
    assert f"{bad}: nano (TLV) dump" in decoded.out + decoded.err
    np.testing.assert_array_equal(np.load(tmp_path / "out" / f"{good.name}.output.0.2x20x5x7.npy"), x)
    shown = cli("pt", f"{good}:output:0", data=root)
    assert shown.status == 0 and "net_relu output:0" in shown.out and "[2, 20, 5, 7]" in shown.out.replace("(", "[").replace(")", "]")
