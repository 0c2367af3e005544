"""HIFLOAT8 decoded by hand, FLOAT6/FLOAT4 refused clearly, over-long decoded names hashed into mapping.csv,
and mapping.csv-numbered dump files shown under their real names."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

from precision_tool.analysis.dumps.decode import decode_dumps, record_mapping, short_file_name
from precision_tool.errors import FormatError
from precision_tool.formats.npu.hifloat8 import decode_hifloat8, encode_hifloat8, hifloat8_table
from precision_tool.formats.npu.layouts import to_device
from precision_tool.formats.npu.dump_types import DataType, Format
from precision_tool.formats.npu.npu_dump import dump_file_name, read_dump_header, read_mapping, read_tensor
from precision_tool.formats.npu.npu_dump_write import TensorSpec, write_dump

STAMP = 1_718_260_502_000_000


def flat(text: str) -> str:
    """Panel text without borders, line breaks or spaces (long names wrap across lines)."""
    return "".join(line.strip(" │╭╮╰╯─") for line in text.splitlines()).replace(" ", "")


# --- HIFLOAT8 ------------------------------------------------------------------------------------------
@pytest.mark.parametrize("code, value", [
    (0x00, 0.0), (0x01, 2.0 ** -22), (0x07, 2.0 ** -16),  # denormals: 2^(M-23)
    (0x08, 1.0), (0x0F, 1.875),  # dot 0001: E = 0, 3 mantissa bits
    (0x10, 2.0), (0x18, 0.5),  # dot 001: E = +1 / -1 (CANN's numeric_limits: 0x18 is 0.5)
    (0x20, 4.0), (0x3F, 2.0 ** -3 * 1.875),  # dot 01: E in +-[2, 3]
    (0x40, 16.0), (0x5F, 2.0 ** -7 * 1.75),  # dot 10: E in +-[4, 7]
    (0x60, 256.0), (0x6E, 32768.0), (0x7F, 2.0 ** -15 * 1.5),  # dot 11: E in +-[8, 15]
    (0x6F, math.inf), (0xEF, -math.inf), (0x88, -1.0), (0xEE, -32768.0),
])
def test_hifloat8_codes_mean_what_the_definition_says(code: int, value: float) -> None:
    assert decode_hifloat8(np.array([code], np.uint8))[0] == np.float32(value)


def test_hifloat8_table_is_a_sign_magnitude_code_with_one_nan() -> None:
    table = hifloat8_table()
    assert np.isnan(table[0x80]) and np.isnan(table).sum() == 1
    finite = table[np.isfinite(table)]
    assert len(set(finite.tolist())) == len(finite) == 253  # every finite code a distinct value
    np.testing.assert_array_equal(table[0x81:0x100][table[0x81:0x100] != -np.inf], -table[0x01:0x80][table[0x01:0x80] != np.inf])
    codes = np.array([c for c in range(256) if c != 0x80], np.uint8)
    np.testing.assert_array_equal(encode_hifloat8(table[codes]), codes)  # the writer inverts the table


def test_hifloat8_rounds_real_values_to_the_nearest_code() -> None:
    values = np.array([1.1, 1.05, -3.3, 100.0, 40000.0, 50000.0, 1e-9, np.nan])
    decoded = decode_hifloat8(encode_hifloat8(values))
    np.testing.assert_array_equal(decoded[:7], np.float32([1.125, 1.0, -3.25, 96.0, 32768.0, np.inf, 0.0]))
    assert np.isnan(decoded[7])


def test_hifloat8_dumps_decode_with_dc_and_pt(cli, tmp_path: Path) -> None:
    x = np.random.default_rng(4).standard_normal((2, 20, 3, 3)).astype(np.float32) * 8
    codes = encode_hifloat8(x)  # uint8 codes: the device layout gets C0 = 32, as for every 1-byte type
    path = tmp_path / "dumps" / dump_file_name("Cast", "q/hif8", 1, 1, STAMP)
    write_dump(path, op_name="q/hif8", inputs=[], outputs=[
        TensorSpec(to_device(codes, "NCHW", "NC1HWC0"), format=Format.NC1HWC0, original_shape=x.shape,
                   data_type=DataType.HIFLOAT8)])
    dump = read_dump_header(path)
    assert dump.outputs[0].size == 2 * 1 * 3 * 3 * 32  # one byte per element, C0 = 32 for 1-byte types
    expected = decode_hifloat8(codes)
    result = cli("dc", str(path), "-f", "NCHW", "-o", str(tmp_path / "out"), data=tmp_path / "ws")
    assert result.status == 0, result.out + result.err
    saved = np.load(tmp_path / "out" / f"{path.name}.output.0.2x20x3x3.npy")
    assert saved.dtype == np.float32
    np.testing.assert_array_equal(saved, expected)
    shown = cli("pt", f"{path}:output:0", data=tmp_path / "ws")
    assert shown.status == 0 and "float32" in shown.out and "NCHW" in shown.out


@pytest.mark.parametrize("data_type", [DataType.FLOAT6_E3M2, DataType.FLOAT6_E2M3, DataType.FLOAT4_E2M1,
                                       DataType.FLOAT4_E1M2])
def test_float6_and_float4_are_refused_with_the_reason(raw_dump, tmp_path: Path, data_type: int) -> None:
    path = raw_dump(tmp_path / "Op.fp4.1.1.1", data_type=data_type, shape=(8,), size=8)
    dump = read_dump_header(path)
    with pytest.raises(FormatError) as info:
        read_tensor(dump, dump.outputs[0])
    message = str(info.value)
    assert str(path) in message and DataType(data_type).name in message and "packs these sub-byte" in message
    report = decode_dumps([path], tmp_path / "out")
    assert not report.ok and not list((tmp_path / "out").glob("*.npy"))


# --- over-long decoded names ------------------------------------------------------------------------------
def long_dump(folder: Path, length: int = 250) -> tuple[Path, np.ndarray]:
    """A dump whose own name fits (length characters) but whose decoded names do not."""
    stem = dump_file_name("MatMul", "m", 1, 1, STAMP)
    op_name = "net/" + "x" * (length - len(stem) + 1 - 4)
    path = folder / dump_file_name("MatMul", op_name, 1, 1, STAMP)
    assert len(path.name) == length
    m = np.arange(3 * 33 * 47, dtype=np.float16).reshape(3, 33, 47)
    write_dump(path, op_name=op_name, inputs=[TensorSpec(m[0])], outputs=[
        TensorSpec(to_device(m, "ND", "FRACTAL_NZ"), format=Format.FRACTAL_NZ, original_shape=m.shape)])
    return path, m


def test_long_decoded_names_become_hashed_files_listed_in_mapping_csv(tmp_path: Path) -> None:
    path, m = long_dump(tmp_path / "dumps")
    out = tmp_path / "out"
    (out).mkdir()
    (out / "mapping.csv").write_text("older.npy,Some.earlier.1.1.1.output.0.npy\n")
    report = decode_dumps([path], out)
    assert report.ok and len(report.written) == 2 and len(report.renamed) == 2
    mapping = read_mapping(out)
    assert mapping["older.npy"] == "Some.earlier.1.1.1.output.0.npy"  # earlier rows are kept
    for written in report.written:
        real = mapping[written.name]
        assert real.startswith(path.name) and len(real) >= 255 and len(written.name) == 36
        assert written.name == short_file_name(real, ".npy")
    by_real = {mapping[w.name]: np.load(w) for w in report.written}
    np.testing.assert_array_equal(by_real[f"{path.name}.input.0.npy"], m[0])
    again = decode_dumps([path], out, target_format="ND")  # a second run adds rows, never duplicates
    assert again.ok
    rows = (out / "mapping.csv").read_text().splitlines()
    assert len(rows) == len(set(rows)) == 1 + 2 + 2
    np.testing.assert_array_equal(np.load(out / short_file_name(f"{path.name}.output.0.3x33x47.npy", ".npy")), m)
    assert not list(out.glob(".*"))  # no temp files left


def test_record_mapping_refuses_a_damaged_mapping_file(tmp_path: Path) -> None:
    (tmp_path / "mapping.csv").write_text("a,b,c\n")
    with pytest.raises(FormatError, match="mapping.csv: line 1"):
        record_mapping(tmp_path, [("x.npy", "y")])
    assert (tmp_path / "mapping.csv").read_text() == "a,b,c\n"


def test_dc_says_where_the_long_names_went(cli, tmp_path: Path) -> None:
    path, _ = long_dump(tmp_path / "dumps")
    result = cli("dc", str(path), "-o", str(tmp_path / "out"), data=tmp_path / "ws")
    assert result.status == 0, result.out + result.err
    assert "2 decoded name(s) reached 255 characters" in result.out and "mapping.csv" in result.out
    assert len(read_mapping(tmp_path / "out")) == 2


def test_pt_shows_the_real_name_of_a_hashed_npy(cli, tmp_path: Path) -> None:
    path, m = long_dump(tmp_path / "dumps")
    report = decode_dumps([path], tmp_path / "out")
    hashed = next(w for w in report.written if read_mapping(tmp_path / "out")[w.name].endswith("input.0.npy"))
    shown = cli("pt", str(hashed), "-c", data=tmp_path / "ws")
    assert shown.status == 0, shown.out + shown.err
    assert f"{path.name}.input.0.npy" in flat(shown.out)
    assert hashed.with_suffix(".txt").is_file()


# --- numbered dump files (mapping.csv in the dump folder) ----------------------------------------------
def test_dc_and_pt_on_a_numbered_dump_use_its_real_name(cli, tmp_path: Path) -> None:
    root = tmp_path / "precision_data"
    folder = root / "npu/debug_0/dump/20240613143502/0/ge_default_1/1/0"
    folder.mkdir(parents=True)
    real = dump_file_name("Relu", "net/relu", 7, 1, STAMP)
    x = np.linspace(-1, 1, 24, dtype=np.float32).reshape(2, 3, 4)
    write_dump(folder / "1234567", op_name="net/relu", inputs=[], outputs=[TensorSpec(x)])
    (folder / "mapping.csv").write_text(f"1234567,{real}\n")
    assert read_dump_header(folder / "1234567").real_name == real
    decoded = cli("dc", str(folder / "1234567"), "-o", str(tmp_path / "out"), data=root)
    assert decoded.status == 0, decoded.out + decoded.err
    np.testing.assert_array_equal(np.load(tmp_path / "out" / f"{real}.output.0.npy"), x)
    shown = cli("pt", f"{folder / '1234567'}:output:0", "-c", data=root)
    assert shown.status == 0 and f"mapping.csv:{real}" in flat(shown.out)
    assert (root / "temp/decode/dump_decode" / f"{real}.output.0.txt").is_file()
    by_real_name = cli("pt", f"{real}:output:0", data=root)  # the real name finds the numbered file
    assert by_real_name.status == 0 and "net/relu output:0" in by_real_name.out
    listing = cli("ls", "dump", data=root)
    assert "net_relu" in listing.out
