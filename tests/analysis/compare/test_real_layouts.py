"""Layouts as real graphs pair them: ND (or NCHW on a 1-D bias) against an NCHW origin, and an NC1HWC0
tensor whose original shape is shorter than NCHW ([1000] for the fc bias of a real ResNet-50)."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import numpy as np
import pytest

from precision_tool.formats.npu.layouts import LayoutError, expanded_shape, from_device, is_kept_as_dumped
from tests.tools import real_dumps


@pytest.mark.parametrize("fmt, ndim, kept", [
    ("ND", 1, True), ("ND", 4, True), ("NCHW", 1, True), ("NCHW", 3, True), ("NHWC", 2, True),
    ("HWCN", 1, True), ("NCHW", 4, False), ("NHWC", 4, False), ("NCDHW", 5, False), ("NCDHW", 1, True),
    ("NC1HWC0", 5, False), ("FRACTAL_Z", 4, False), ("FRACTAL_NZ", 4, False),
])
def test_what_is_compared_as_dumped(fmt: str, ndim: int, kept: bool) -> None:
    assert is_kept_as_dumped(fmt, ndim) is kept


@pytest.mark.parametrize("shape, layout, expected", [
    ((1000,), "NCHW", (1, 1000, 1, 1)), ((64, 7), "NCHW", (1, 64, 7, 1)), ((3, 5, 7), "NCHW", (1, 3, 5, 7)),
    ((1000,), "NHWC", (1, 1, 1, 1000)), ((5, 7), "NHWC", (1, 1, 5, 7)), ((8,), "HWCN", (1, 1, 1, 8)),
    ((2, 3, 4, 5), "NCHW", (2, 3, 4, 5)), ((16,), "NCDHW", (1, 16, 1, 1, 1)), ((), "NCHW", None),
    ((1, 2, 3, 4, 5), "NCHW", None), ((4,), "ND", None),
])
def test_short_original_shapes_expand_as_ge_does(shape, layout, expected) -> None:  # type: ignore[no-untyped-def]
    assert expanded_shape(shape, layout) == expected


def test_nc1hwc0_with_a_1d_original_shape_cuts_the_channel_padding() -> None:
    bias = np.arange(1000, dtype=np.float16)
    device = real_dumps.pack(bias, "NC1HWC0", (1, 63, 1, 1, 16))
    out = from_device(device, "NC1HWC0", "NCHW", (1000,))
    assert out.shape == (1, 1000, 1, 1) and np.array_equal(out.reshape(-1), bias)
    assert np.array_equal(from_device(device, "NC1HWC0", "NHWC", (1000,)).reshape(-1), bias)
    # the same with the origin layout named
    assert from_device(device, "NC1HWC0", "NCHW", (1000,), original_format="NCHW").shape == (1, 1000, 1, 1)
    # a shape that cannot be the channels of this tensor is refused, not guessed
    with pytest.raises(LayoutError):
        from_device(device, "NC1HWC0", "NCHW", (2000,))


def test_nc1hwc0_c04_is_nc1hwc0_with_c0_4() -> None:
    x = np.random.default_rng(0).standard_normal((1, 3, 5, 5)).astype(np.float16)
    device = real_dumps.pack(x, "NC1HWC0_C04", (1, 1, 5, 5, 4))
    assert np.array_equal(from_device(device, "NC1HWC0_C04", "NCHW", (1, 3, 5, 5)), x)


def test_fractal_z_weights_never_read_a_short_original_shape() -> None:
    """Weights [1000, 2048] must be given as 4-D; expanding them as a feature map would be a guess."""
    w = np.zeros((128, 63, 16, 16), np.float16)
    with pytest.raises(LayoutError):
        from_device(w, "FRACTAL_Z", "NCHW", (1000, 2048))


@pytest.mark.reference
def test_dc_nchw_on_the_real_fc_bias_agrees_with_msaccucmp_convert_minus_its_padding(
        tmp_path: Path, reference_tool: Path, cli) -> None:  # type: ignore[no-untyped-def]
    """ResNet-50's trans_TransData_165: NC1HWC0 [1,63,1,1,16], original shape [1000], origin NCHW.
    msaccucmp writes 1x1008x1x1 (eight zero channels kept); dc writes 1x1000x1x1 and says so."""
    pb2 = real_dumps.compile_proto(tmp_path / "proto")
    case = real_dumps.graph_case(pb2, tmp_path / "precision_data", real_dumps.RESNET_GRAPH,
                                 ("trans_Cast_163", "trans_Reshape_164", "trans_TransData_165"))
    dump = next(case.dump_dir.glob("TransData.trans_TransData_165.*"))
    result = cli("dc", str(dump), "-f", "NCHW", "-o", str(tmp_path / "ours"), data=case.root)
    assert result.status == 0, result.out + result.err
    # the cut padding is said on screen, not only in the file name
    assert re.search(rf"^{re.escape(dump.name)} output:0: .*\[1000\] read as NCHW \[1, 1000, 1, 1\]", result.out, re.M)
    ours = np.load(tmp_path / "ours" / f"{dump.name}.output.0.1x1000x1x1.npy")
    proc = subprocess.run([str(reference_tool), "convert", "-d", str(dump), "-f", "NCHW", "-out",
                           str(tmp_path / "ref")], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout[-2000:]
    ref = np.load(tmp_path / "ref" / f"{dump.name}.output.0.1x1008x1x1.npy")
    assert ref.dtype == ours.dtype == np.float16
    assert np.array_equal(ours, ref[:, :1000]) and not ref[:, 1000:].any()
    golden = np.load(next(case.golden_dir.glob("PlaceHolder108.0.*.npy")))
    assert np.array_equal(ours.reshape(-1), golden.astype(np.float16))
    # the input (NCHW [1,1000,1,1] already) is written as msaccucmp writes it
    assert np.array_equal(np.load(tmp_path / "ours" / f"{dump.name}.input.0.1x1000x1x1.npy"),
                          np.load(tmp_path / "ref" / f"{dump.name}.input.0.1x1000x1x1.npy"))
    from precision_tool.analysis.dumps.decode import decode_dumps

    report = decode_dumps([dump], tmp_path / "again", target_format="NCHW")
    assert report.ok and len(report.written) == 2
    assert [(n.label, "[1000] read as NCHW [1, 1000, 1, 1]" in n.message) for n in report.notes] == [("output:0", True)]
