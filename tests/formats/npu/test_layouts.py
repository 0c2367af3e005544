"""Device layouts: to_device then from_device gives the original back, for every layout and odd sizes."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from precision_tool.formats.npu.layouts import LayoutError, UnsupportedConversion, from_device, to_device
from precision_tool.formats.npu.dump_types import Format

DTYPES = [np.float16, np.float32, np.int8, np.int32]
dims = st.integers(1, 7)
channels = st.sampled_from([1, 2, 15, 16, 17, 31, 32, 33, 40])  # around the C0 block edges (16 and 32)


def values(shape: tuple[int, ...], dtype: type) -> np.ndarray:
    return (np.arange(int(np.prod(shape))) % 101 + 1).astype(dtype).reshape(shape)


@settings(max_examples=40, deadline=None)
@given(n=dims, c=channels, h=dims, w=dims, dtype=st.sampled_from(DTYPES))
def test_nc1hwc0_round_trip(n: int, c: int, h: int, w: int, dtype: type) -> None:
    x = values((n, c, h, w), dtype)
    c0 = 32 if np.dtype(dtype).itemsize == 1 else 16
    device = to_device(x, "NCHW", "NC1HWC0")
    assert device.shape == (n, -(-c // c0), h, w, c0)
    assert not from_device(device, "NC1HWC0", "NCHW", ())[:, c:].any()  # the padding is zeros
    np.testing.assert_array_equal(from_device(device, Format.NC1HWC0, "NCHW", x.shape), x)
    np.testing.assert_array_equal(from_device(device, "NC1HWC0", "NHWC", x.shape), x.transpose(0, 2, 3, 1))
    np.testing.assert_array_equal(from_device(device, "NC1HWC0", "HWCN", x.shape), x.transpose(2, 3, 1, 0))
    from_nhwc = to_device(x.transpose(0, 2, 3, 1), "NHWC", "NC1HWC0")
    np.testing.assert_array_equal(from_nhwc, device)


@settings(max_examples=40, deadline=None)
@given(n=st.sampled_from([1, 5, 16, 17, 33]), c=channels, h=dims, w=dims, dtype=st.sampled_from(DTYPES))
def test_fractal_z_round_trip(n: int, c: int, h: int, w: int, dtype: type) -> None:
    x = values((n, c, h, w), dtype)
    c0 = 32 if np.dtype(dtype).itemsize == 1 else 16
    device = to_device(x, "NCHW", "FRACTAL_Z")
    assert device.shape == (-(-c // c0) * h * w, -(-n // 16), 16, c0)
    # small shapes can fit several readings (see test_undeterminable...), so the original layout is named here
    np.testing.assert_array_equal(from_device(device, Format.FRACTAL_Z, "NCHW", x.shape, original_format="NCHW"), x)
    hwcn = x.transpose(2, 3, 1, 0)
    np.testing.assert_array_equal(
        from_device(device, Format.FRACTAL_Z, "HWCN", hwcn.shape, original_format="HWCN"), hwcn)
    np.testing.assert_array_equal(to_device(hwcn, "HWCN", "FRACTAL_Z"), device)


@settings(max_examples=40, deadline=None)
@given(batch=st.lists(st.integers(1, 3), max_size=2), rows=st.integers(1, 40), cols=st.integers(1, 40),
       dtype=st.sampled_from(DTYPES))
def test_fractal_nz_round_trip(batch: list[int], rows: int, cols: int, dtype: type) -> None:
    shape = (*batch, rows, cols)
    x = values(shape, dtype)
    c0 = 32 if np.dtype(dtype).itemsize == 1 else 16
    device = to_device(x, "ND", "FRACTAL_NZ")
    assert device.shape == (*batch, -(-cols // c0), -(-rows // 16), 16, c0)
    # the defining index rule: ND[..., r, c] = NZ[..., c // C0, r // 16, r % 16, c % C0]
    r, c = rows - 1, cols - 1
    assert device[(*[0] * len(batch), c // c0, r // 16, r % 16, c % c0)] == x[(*[0] * len(batch), r, c)]
    np.testing.assert_array_equal(from_device(device, Format.FRACTAL_NZ, "ND", shape), x)


def test_fractal_nz_vector() -> None:
    x = values((20,), np.float16)
    device = to_device(x, "ND", "FRACTAL_NZ")
    np.testing.assert_array_equal(from_device(device, "FRACTAL_NZ", "ND", (20,)), x)


@settings(max_examples=30, deadline=None)
@given(n=dims, c=channels, d=dims, h=dims, w=dims)
def test_ndc1hwc0_round_trip(n: int, c: int, d: int, h: int, w: int) -> None:
    x = values((n, c, d, h, w), np.float16)
    device = to_device(x, "NCDHW", "NDC1HWC0")
    assert device.shape == (n, d, -(-c // 16), h, w, 16)
    np.testing.assert_array_equal(from_device(device, Format.NDC1HWC0, "NCDHW", x.shape), x)
    np.testing.assert_array_equal(from_device(device, Format.NDC1HWC0, "NDHWC", x.shape), x.transpose(0, 2, 3, 4, 1))


def test_plain_permutations() -> None:
    x = values((2, 3, 4, 5), np.float32)
    for dst, order in (("NHWC", (0, 2, 3, 1)), ("HWCN", (2, 3, 1, 0)), ("CHWN", (1, 2, 3, 0))):
        moved = from_device(x, Format.NCHW, dst)
        np.testing.assert_array_equal(moved, x.transpose(order))
        np.testing.assert_array_equal(from_device(moved, dst, "NCHW"), x)
    np.testing.assert_array_equal(from_device(x, Format.NCHW, "ND"), x)


def test_original_shape_in_nhwc_is_understood() -> None:
    x = values((2, 20, 5, 7), np.float16)
    device = to_device(x, "NCHW", "NC1HWC0")
    np.testing.assert_array_equal(from_device(device, "NC1HWC0", "NCHW", (2, 5, 7, 20)), x)


def test_without_original_shape_nc1hwc0_keeps_padding_but_fractal_z_refuses() -> None:
    x = values((1, 3, 2, 2), np.float16)
    assert from_device(to_device(x, "NCHW", "NC1HWC0"), "NC1HWC0", "NCHW", ()).shape == (1, 16, 2, 2)
    with pytest.raises(LayoutError, match="needs the original shape"):
        from_device(to_device(x, "NCHW", "FRACTAL_Z"), "FRACTAL_Z", "NCHW", ())


def test_undeterminable_conversions_are_refused() -> None:
    device = to_device(values((1, 20, 5, 7), np.float16), "NCHW", "NC1HWC0")
    with pytest.raises(LayoutError, match="does not fit"):
        from_device(device, "NC1HWC0", "NCHW", (3, 20, 5, 7))
    # FRACTAL_Z [16, 1, 16, 16] with original (16, 16, 1, 16): as NCHW it is H=1, W=16; as NHWC it is
    # H=16, W=1 -- both fit the device shape, so the tool refuses to pick one
    with pytest.raises(LayoutError, match="ambiguous"):
        from_device(np.zeros((16, 1, 16, 16), np.float16), "FRACTAL_Z", "NCHW", (16, 16, 1, 16))
    # ... unless the original shape's layout is known
    assert from_device(np.zeros((16, 1, 16, 16), np.float16), "FRACTAL_Z", "NCHW", (16, 16, 1, 16),
                       original_format="NCHW").shape == (16, 16, 1, 16)
    with pytest.raises(LayoutError, match="group convolution"):
        from_device(to_device(values((16, 16, 1, 1), np.float16), "NCHW", "FRACTAL_Z"), "FRACTAL_Z", "NCHW",
                    (16, 16, 1, 1), sub_format=2)
    with pytest.raises(UnsupportedConversion):
        from_device(values((4, 4), np.float16), "ND", "NCHW")
    with pytest.raises(UnsupportedConversion):
        from_device(np.zeros((1, 1, 16, 16), np.float16), "FRACTAL_NZ", "NCHW", (16, 16))



def test_real_conv_weights_need_no_layout_hint() -> None:
    hwcn = values((3, 3, 64, 128), np.float16)
    device = to_device(hwcn, "HWCN", "FRACTAL_Z")
    np.testing.assert_array_equal(from_device(device, "FRACTAL_Z", "HWCN", hwcn.shape), hwcn)
    np.testing.assert_array_equal(from_device(device, "FRACTAL_Z", "NCHW", hwcn.shape), hwcn.transpose(3, 2, 0, 1))
