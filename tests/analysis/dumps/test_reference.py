"""Cross-check with the reference: msaccucmp's `convert` on files our writer wrote must give our arrays.

Run with MSACCUCMP=/tmp/msacc/msaccucmp to reuse a built reference; otherwise the `reference_tool`
fixture builds it. Names must match too: `{dumpfile}.{input|output}.{idx}.npy`, and with -f
`{dumpfile}.{input|output}.{idx}.{d0}x{d1}...npy`.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest

from precision_tool.analysis.dumps.decode import decode_dumps
from precision_tool.formats.npu.layouts import to_device
from precision_tool.formats.npu.dump_types import DataType, Format
from precision_tool.formats.npu.npu_dump import dump_file_name, read_mapping
from precision_tool.formats.npu.npu_dump_write import TensorSpec, write_dump

pytestmark = pytest.mark.reference


def fp8_values(dtype: type, count: int, nan_codes: tuple[int, ...]) -> np.ndarray:
    """Every fp8 bit pattern except the NaN/Inf codes where the reference's decoder differs from ml_dtypes."""
    codes = np.array([c for c in range(256) if c not in nan_codes][:count], dtype=np.uint8)
    return codes.view(dtype)


def plain_arrays(rng: np.random.Generator) -> dict[str, np.ndarray]:
    """One small array of every plain numpy dtype the reference reads (same draws for both variants)."""
    return {
        "f32": rng.standard_normal((3, 5)).astype(np.float32), "f16": rng.standard_normal((4, 4)).astype(np.float16),
        "f64": rng.standard_normal((7,)), "i8": rng.integers(-128, 127, (2, 9), dtype=np.int8),
        "u8": rng.integers(0, 255, (9,), dtype=np.uint8), "i16": rng.integers(-999, 999, (3, 3), dtype=np.int16),
        "u16": rng.integers(0, 9999, (5,), dtype=np.uint16), "i32": rng.integers(-9999, 9999, (2, 3, 4), dtype=np.int32),
        "i64": rng.integers(-9999, 9999, (6,), dtype=np.int64), "u32": rng.integers(0, 9999, (6,), dtype=np.uint32),
        "u64": rng.integers(0, 9999, (6,), dtype=np.uint64), "bool": rng.integers(0, 2, (8,)).astype(bool),
        "c64": (rng.standard_normal(4) + 1j * rng.standard_normal(4)).astype(np.complex64),
        "c128": rng.standard_normal(4) + 1j * rng.standard_normal(4),
    }


def write_corpus(folder: Path) -> dict[str, list[str]]:
    """Dumps of every dtype the reference reads, and of every device layout; returns name → -f targets."""
    rng = np.random.default_rng(7)
    stamp = iter(range(1_718_260_502_000_000, 1_718_260_502_100_000))
    targets: dict[str, list[str]] = {}

    def dump(op: str, inputs: list[TensorSpec], outputs: list[TensorSpec], formats: list[str]) -> None:
        name = dump_file_name("Op", op, len(targets) + 1, 1, next(stamp))
        write_dump(folder / name, op_name=op, inputs=inputs, outputs=outputs)
        targets[name] = formats

    plain = plain_arrays(rng)
    for label, array in plain.items():
        dump(f"plain/{label}", [TensorSpec(array)], [TensorSpec(array[::-1].copy())], [])
    dump("ext/bf16", [], [TensorSpec(rng.standard_normal((3, 4)).astype(ml_dtypes.bfloat16))], [])
    dump("ext/uint1", [], [TensorSpec(rng.integers(0, 2, (4, 8)).astype(np.uint8), data_type=DataType.UINT1)], [])
    dump("ext/e4m3", [], [TensorSpec(fp8_values(ml_dtypes.float8_e4m3fn, 200, (0x7F, 0xFF)).reshape(10, 20))], [])
    dump("ext/e5m2", [], [TensorSpec(fp8_values(ml_dtypes.float8_e5m2, 200, tuple(range(0x7C, 0x80)) +
                                                tuple(range(0xFC, 0x100))).reshape(20, 10))], [])
    for dtype, c in ((np.float16, 20), (np.float32, 3), (np.int8, 40)):
        x = rng.standard_normal((2, c, 5, 7)).astype(dtype) if dtype != np.int8 else \
            rng.integers(-100, 100, (2, c, 5, 7), dtype=np.int8)
        spec = TensorSpec(to_device(x, "NCHW", "NC1HWC0"), format=Format.NC1HWC0, original_shape=x.shape)
        dump(f"nc1hwc0/{np.dtype(dtype).name}", [spec], [spec], ["NCHW"])
        nhwc = x.transpose(0, 2, 3, 1)
        dump(f"nhwc/{np.dtype(dtype).name}", [], [TensorSpec(spec.array, format=Format.NC1HWC0,
                                                            original_shape=nhwc.shape)], ["NHWC"])
    w = rng.standard_normal((40, 20, 3, 3)).astype(np.float16)
    dump("fractal_z/w", [TensorSpec(to_device(w, "NCHW", "FRACTAL_Z"), format=Format.FRACTAL_Z,
                                    original_shape=w.shape)], [], ["NCHW"])
    m = rng.standard_normal((2, 33, 47)).astype(np.float16)
    dump("fractal_nz/m", [], [TensorSpec(to_device(m, "ND", "FRACTAL_NZ"), format=Format.FRACTAL_NZ,
                                         original_shape=m.shape)], ["ND"])
    v = rng.standard_normal((2, 20, 3, 4, 5)).astype(np.float16)
    dump("ndc1hwc0/v", [], [TensorSpec(to_device(v, "NCDHW", "NDC1HWC0"), format=Format.NDC1HWC0,
                                       original_shape=v.shape)], ["NCDHW"])
    return targets


def run_reference(tool: Path, source: Path, out: Path, fmt: str | None) -> None:
    command = [str(tool), "convert", "-d", str(source), "-out", str(out)] + (["-f", fmt] if fmt else [])
    proc = subprocess.run(command, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]


def assert_same(ours: Path, theirs: Path, expected_names: set[str]) -> None:
    their_names = {p.name for p in theirs.glob("*.npy")}
    assert their_names == expected_names
    for name in sorted(their_names):
        mine, reference = np.load(ours / name), np.load(theirs / name)
        if "ext_e4m3" in name or "ext_e5m2" in name:
            # fp8 widens to float32 here, to float64 in the reference: the values must still be equal
            assert (mine.dtype, reference.dtype) == (np.float32, np.float64), name
        else:
            assert mine.dtype == reference.dtype, name
        assert mine.shape == reference.shape, name
        np.testing.assert_array_equal(mine, reference, err_msg=name)


@pytest.fixture(scope="module")
def corpus(tmp_path_factory) -> tuple[Path, dict[str, list[str]]]:
    folder = tmp_path_factory.mktemp("reference_corpus")
    return folder, write_corpus(folder)


def test_plain_convert_matches_reference(reference_tool: Path, corpus, tmp_path: Path) -> None:
    folder, targets = corpus
    run_reference(reference_tool, folder, tmp_path / "ref", None)
    report = decode_dumps(sorted(folder.iterdir()), tmp_path / "ours")
    assert report.ok and not report.unconverted
    ours = {p.name for p in report.written}
    assert_same(tmp_path / "ours", tmp_path / "ref", ours)


@pytest.mark.parametrize("fmt", ["NCHW", "NHWC", "ND", "NCDHW"])
def test_format_convert_matches_reference(reference_tool: Path, corpus, tmp_path: Path, fmt: str) -> None:
    folder, targets = corpus
    files = sorted(folder / name for name, formats in targets.items() if fmt in formats)
    assert files
    source = tmp_path / "src"
    source.mkdir()
    for path in files:
        (source / path.name).symlink_to(path)
    run_reference(reference_tool, source, tmp_path / "ref", fmt)
    report = decode_dumps(files, tmp_path / "ours", target_format=fmt)
    assert report.ok and not report.unconverted
    assert_same(tmp_path / "ours", tmp_path / "ref", {p.name for p in report.written})


def test_hwcn_from_nc1hwc0_is_right_where_the_reference_is_not(reference_tool: Path, tmp_path: Path) -> None:
    """NC1HWC0 with an NCHW original shape, -f HWCN: the reference slices wrongly and says nothing."""
    x = np.arange(2 * 20 * 5 * 7, dtype=np.float32).reshape(2, 20, 5, 7)
    source = tmp_path / "src"
    name = dump_file_name("Conv2D", "conv", 1, 1, 1_718_260_502_000_000)
    write_dump(source / name, op_name="conv", inputs=[], outputs=[
        TensorSpec(to_device(x, "NCHW", "NC1HWC0"), format=Format.NC1HWC0, original_shape=x.shape)])
    report = decode_dumps([source / name], tmp_path / "ours", target_format="HWCN")
    ours = np.load(report.written[0])
    np.testing.assert_array_equal(ours, x.transpose(2, 3, 1, 0))
    run_reference(reference_tool, source, tmp_path / "ref", "HWCN")
    theirs = [np.load(p) for p in (tmp_path / "ref").glob("*.npy")]
    assert all(t.shape != ours.shape or not np.array_equal(t, ours) for t in theirs)


# --- nano (TLV) dumps, HIFLOAT8, over-long names --------------------------------------------------------
NANO_PLAIN = ("f32", "f16", "f64", "i8", "u8", "i16", "u16", "i32", "i64", "u32", "u64", "bool", "c64", "c128")


def write_nano_corpus(folder: Path) -> dict[str, list[str]]:
    """Nano dumps of every type the reference maps from nano numbers, and of the device layouts."""
    rng = np.random.default_rng(11)
    stamp = iter(range(1_718_260_503_000_000, 1_718_260_503_100_000))
    targets: dict[str, list[str]] = {}

    def dump(op: str, inputs: list[TensorSpec], outputs: list[TensorSpec], formats: list[str]) -> None:
        name = dump_file_name("Op", op, len(targets) + 1, 1, next(stamp))
        write_dump(folder / name, op_name=op, inputs=inputs, outputs=outputs, variant="nano")
        targets[name] = formats

    arrays = plain_arrays(rng)
    assert tuple(arrays) == NANO_PLAIN
    for label, array in arrays.items():
        dump(f"nano/{label}", [TensorSpec(array)], [TensorSpec(array[::-1].copy(), origin_name=f"nano/{label}",
                                                               origin_output_index=0)], [])
    dump("nano/bf16", [], [TensorSpec(rng.standard_normal((3, 4)).astype(ml_dtypes.bfloat16))], [])
    x = rng.standard_normal((2, 20, 5, 7)).astype(np.float16)
    spec = TensorSpec(to_device(x, "NCHW", "NC1HWC0"), format=Format.NC1HWC0, original_shape=x.shape)
    w = rng.standard_normal((40, 20, 3, 3)).astype(np.float32)
    dump("nano/conv", [spec, TensorSpec(to_device(w, "NCHW", "FRACTAL_Z"), format=Format.FRACTAL_Z,
                                        original_shape=w.shape)], [spec], ["NCHW"])
    m = rng.standard_normal((2, 33, 47)).astype(np.float16)
    dump("nano/matmul", [], [TensorSpec(to_device(m, "ND", "FRACTAL_NZ"), format=Format.FRACTAL_NZ,
                                        original_shape=m.shape)], ["ND"])
    return targets


@pytest.mark.parametrize("fmt", [None, "NCHW", "ND"])
def test_nano_dumps_convert_like_the_reference(reference_tool: Path, tmp_path: Path, fmt: str | None) -> None:
    folder = tmp_path / "nano"
    folder.mkdir()
    targets = write_nano_corpus(folder)
    files = sorted(folder / name for name, formats in targets.items() if fmt is None or fmt in formats)
    source = folder if fmt is None else tmp_path / "src"
    if fmt is not None:
        source.mkdir()
        for path in files:
            (source / path.name).symlink_to(path)
    run_reference(reference_tool, source, tmp_path / "ref", fmt)
    report = decode_dumps(files, tmp_path / "ours", target_format=fmt)
    assert report.ok and not report.unconverted and len(report.written) >= len(files)
    assert_same(tmp_path / "ours", tmp_path / "ref", {p.name for p in report.written})


def test_hifloat8_agrees_with_the_reference_except_where_its_decoder_breaks_the_definition(
        reference_tool: Path, tmp_path: Path) -> None:
    """The reference decodes dot 0001 / 001 codes with the wrong field widths and 0xEF as +inf; all else agrees."""
    codes = np.arange(256, dtype=np.uint8).reshape(16, 16)
    name = dump_file_name("Cast", "hif8", 1, 1, 1_718_260_502_000_000)
    write_dump(tmp_path / "src" / name, op_name="hif8", inputs=[],
               outputs=[TensorSpec(codes, data_type=DataType.HIFLOAT8)])
    run_reference(reference_tool, tmp_path / "src", tmp_path / "ref", None)
    theirs = np.load(tmp_path / "ref" / f"{name}.output.0.npy").reshape(-1)
    report = decode_dumps([tmp_path / "src" / name], tmp_path / "ours")
    ours = np.load(report.written[0])
    assert ours.shape == (16, 16) and ours.dtype == np.float32
    ours = ours.reshape(-1).astype(np.float64)
    same = (ours == theirs) | (np.isnan(ours) & np.isnan(theirs))
    differing = {int(c) for c in np.flatnonzero(~same)}
    assert differing == set(range(0x08, 0x20)) | set(range(0x88, 0xA0)) | {0xEF}
    assert ours[0x18] == 0.5 and ours[0xEF] == -np.inf  # CANN's numeric_limits: 0x18 is 0.5; sign | 0x6F is inf


def test_long_decoded_names_get_the_reference_hashed_names_and_mapping_rows(reference_tool: Path,
                                                                            tmp_path: Path) -> None:
    stem = dump_file_name("MatMul", "m", 1, 1, 1_718_260_502_000_000)
    op_name = "net/" + "y" * (250 - len(stem) - 3)
    source = tmp_path / "src"
    m = np.arange(3 * 33 * 47, dtype=np.float32).reshape(3, 33, 47)
    write_dump(source / dump_file_name("MatMul", op_name, 1, 1, 1_718_260_502_000_000), op_name=op_name,
               inputs=[TensorSpec(m[0])], outputs=[TensorSpec(m)])
    run_reference(reference_tool, source, tmp_path / "ref", None)
    report = decode_dumps(sorted(source.iterdir()), tmp_path / "ours")
    assert report.ok and len(report.renamed) == 2
    assert_same(tmp_path / "ours", tmp_path / "ref", {p.name for p in report.written})
    assert read_mapping(tmp_path / "ours") == read_mapping(tmp_path / "ref")
