"""Recipes (engine/tensor_recipes.py) give each small tensor exactly what reading and converting it alone
gives: the same values, in the same order and shape, for every device layout, data type and host layout
the comparison converts between, padding included; and no recipe where the general way must speak."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from precision_tool.analysis.compare.engine.golden_layout import to_golden_layout
from precision_tool.analysis.compare.engine.tensor_recipes import RECIPE_ELEMENTS, Recipes
from precision_tool.analysis.compare.matching import GoldenRef, TensorMatch
from precision_tool.formats.npu.dump_types import DataType, Format, format_name
from precision_tool.formats.npu.layouts import to_device
from precision_tool.formats.npu.npu_dump import TensorHeader

DTYPES = {DataType.FLOAT16: np.float16, DataType.FLOAT: np.float32, DataType.INT8: np.int8,
          DataType.INT32: np.int32, DataType.UINT8: np.uint8}

# (device format, host layout, host shape): padded channels (20 of 32), rows (5 of 16), 5-D blocks
CASES = [
    (Format.NC1HWC0, "NCHW", (2, 20, 3, 3)),
    (Format.NC1HWC0, "NHWC", (2, 3, 3, 20)),
    (Format.FRACTAL_Z, "NCHW", (18, 20, 3, 3)),
    (Format.FRACTAL_Z, "HWCN", (3, 3, 20, 18)),
    (Format.FRACTAL_NZ, "ND", (5, 40)),
    (Format.NDC1HWC0, "NCDHW", (1, 20, 2, 3, 3)),
    (Format.ND, "ND", (7, 9)),
    (Format.NCHW, "NCHW", (1, 3, 4, 4)),
]


def _header(data_type: int, fmt: int, device: np.ndarray, original: tuple[int, ...], offset: int) -> TensorHeader:
    return TensorHeader("output", 0, int(data_type), int(fmt), tuple(device.shape), original, device.nbytes, offset)


@pytest.mark.parametrize("data_type", sorted(DTYPES))
@pytest.mark.parametrize("fmt,layout,host_shape", CASES)
def test_a_recipe_gives_what_the_conversion_gives(fmt: int, layout: str, host_shape: tuple[int, ...],
                                                  data_type: int, tmp_path: Path) -> None:
    rng = np.random.default_rng(7)
    host = (rng.standard_normal(host_shape) * 50).astype(DTYPES[data_type])
    npu_format = format_name(int(fmt))
    device = to_device(host, layout, npu_format) if npu_format != layout else host
    if npu_format == "ND" and layout == "ND":
        device = host
    offset = 24  # the tensor sits inside the dump's bytes, after a header and another block
    data = b"\x01" * offset + np.ascontiguousarray(device).tobytes() + b"\x02" * 8
    header = _header(data_type, fmt, device, host_shape, offset)
    match = TensorMatch(GoldenRef("op", 0, layout, host_shape))
    convert = not (layout == "ND" and npu_format not in ("FRACTAL_NZ", "NDC1HWC0"))
    recipe = Recipes().get(header, match, npu_format, layout, convert, host_shape, tmp_path / "dump")
    assert recipe is not None
    stored = np.frombuffer(data, DTYPES[data_type], device.size, offset).reshape(device.shape)
    expected = to_golden_layout(stored, npu_format, layout, header, match, host_shape, tmp_path / "dump") \
        if convert else stored
    values = recipe.values(data, offset)
    assert values.dtype == expected.dtype
    assert recipe.shape == (tuple(expected.shape) if convert else (expected.size,))
    assert np.array_equal(values, np.asarray(expected).reshape(-1))
    if convert:
        assert np.array_equal(values.reshape(host_shape), host)  # and it is the host tensor, padding cut


def test_kinds_the_general_way_must_handle_get_no_recipe(tmp_path: Path) -> None:
    recipes = Recipes()
    host_shape = (2, 20, 3, 3)
    device = to_device(np.zeros(host_shape, np.float16), "NCHW", "NC1HWC0")
    match = TensorMatch(GoldenRef("op", 0, "NCHW", host_shape))

    def recipe(**changes):  # type: ignore[no-untyped-def]
        fields = dict(data_type=DataType.FLOAT16, fmt=Format.NC1HWC0, device=device, original=host_shape, offset=0)
        fields.update(changes)
        return recipes.get(_header(**fields), match, format_name(int(fields["fmt"])), "NCHW", True, host_shape,
                           tmp_path / "dump")

    assert recipe() is not None
    assert recipe(data_type=DataType.BF16) is None  # widened to float32 the general way
    assert recipe(data_type=DataType.BOOL) is None
    assert recipe(original=(2, 40, 3, 3)) is None  # a conversion the layouts refuse: its error row says why
    big = np.zeros((1, 1, 64, 64, 32), np.float16)
    assert big.size > RECIPE_ELEMENTS and recipe(device=big, original=(1, 20, 64, 64)) is None
    short = TensorHeader("output", 0, int(DataType.FLOAT16), int(Format.NC1HWC0), tuple(device.shape), host_shape,
                         device.nbytes - 2, 0)  # a block too small for its shape
    assert recipes.get(short, match, "NC1HWC0", "NCHW", True, host_shape, tmp_path / "dump") is None


def _worker_texts(net, monkeypatch, shortcut: bool) -> tuple[str, int]:  # type: ignore[no-untyped-def]
    """The CSV text of every group of `net`, as one worker writes it; and how many kinds took the shortcut."""
    from precision_tool.analysis.compare import network_compare as nc
    from precision_tool.analysis.compare.engine.compare_worker import GroupWorker
    from precision_tool.analysis.compare.engine.worker_tasks import run_batch

    spec = nc.RunSpec("case", str(net.dump_dir), "result.csv", golden_dir=str(net.golden_dir),
                      graph_path=str(net.graph_txt))
    plan, golden = nc.plan_run(spec)
    worker = GroupWorker(golden, plan.npu_vs_npu)
    with monkeypatch.context() as patch:
        if not shortcut:
            patch.setattr(GroupWorker, "_small_pair", lambda self, *args: None)
        texts = run_batch(worker, plan.groups)[0]
    return texts, sum(kind is not None for kind in worker._kinds.values())


def test_the_kind_shortcut_writes_what_the_general_way_writes(tmp_path: Path, monkeypatch, make_net) -> None:  # type: ignore[no-untyped-def]
    """_small_pair decides once per kind what _golden_pair decides per tensor: every device layout, dtype,
    scalar, NaN, all-zero, bool, bf16 and missing golden of the test network, and a chain of tiny ops whose
    inputs repeat the outputs before them, give the same rows either way."""
    net = make_net(tmp_path / "pd", chain=30, elements=64)
    fast, shortcuts = _worker_texts(net, monkeypatch, shortcut=True)
    general, _ = _worker_texts(net, monkeypatch, shortcut=False)
    assert shortcuts >= 5  # the NC1HWC0, FRACTAL_Z, FRACTAL_NZ, ND and chain kinds at least
    assert fast == general


@pytest.mark.filterwarnings("ignore:Casting complex values to real")  # (metrics.py's own rule for complex)
def test_a_golden_that_breaks_its_kind_takes_the_general_way(tmp_path: Path, monkeypatch, make_net) -> None:  # type: ignore[no-untyped-def]
    """Two tensors of one NPU kind whose goldens differ in size or are not numbers: each gets the row the
    general way writes (a shape mismatch, complex metrics), not the first one's decision."""
    net = make_net(tmp_path / "pd", chain=6, elements=64)
    goldens = sorted(net.golden_dir.glob("chain_op_*.npy"))
    np.save(goldens[2], np.ones(65, np.float32))  # one element more: a shape mismatch row
    np.save(goldens[4], np.ones(64, np.complex64))  # not a real number: metrics.py's own rules
    fast, _ = _worker_texts(net, monkeypatch, shortcut=True)
    general, _ = _worker_texts(net, monkeypatch, shortcut=False)
    assert fast == general
    assert "Due to the different shapes" in fast
