"""The cases msprobe's own msaccucmp unit tests pin down (xiaobingling93-pixel/Ascend-msprobe,
test/msprobe_test/msaccucmp_ut/: test_format_manager, test_shape_conversion, test_fusion_rule_parser,
test_quant_filter, test_overflow_detection), as our own table-driven tests: the facts carry over (sizes,
refusals, groups, verdicts), their code and mocks do not. Where we differ on purpose it is said per case."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

from precision_tool.formats.npu.layouts import LayoutError, UnsupportedConversion, from_device, to_device


def _arange(shape: tuple[int, ...]) -> np.ndarray:
    return np.arange(int(np.prod(shape)), dtype=np.float16).reshape(shape)


# --- layout conversions with expected sizes (test_format_manager) --------------------------------------
@pytest.mark.parametrize("src, shape, expected_shape, size", [
    ("HWCN", (1, 4, 2, 2), (1, 1, 16, 16), 1024),  # H1 W4 C2 N2: C1*H*W = 4 rows of one 16x16 block
    ("NHWC", (1, 4, 2, 2), (8, 1, 16, 16), 2048),  # N1 H4 W2 C2: C1*H*W = 8
    ("NCHW", (1, 3, 2, 2), (4, 1, 16, 16), 1024),  # N1 C3 H2 W2: C1*H*W = 4
])
def test_to_fractal_z_sizes(src: str, shape, expected_shape, size: int) -> None:  # type: ignore[no-untyped-def]
    x = _arange(shape)
    device = to_device(x, src, "FRACTAL_Z")
    assert device.size == size
    if src != "HWCN":
        assert device.shape == expected_shape
    back = from_device(device, "FRACTAL_Z", src, shape, original_format=src)
    assert np.array_equal(back, x)


@pytest.mark.parametrize("src, dst, shape, expected", [
    ("HWCN", "NCHW", (1, 4, 2, 2), (2, 2, 1, 4)), ("HWCN", "NHWC", (1, 4, 2, 2), (2, 1, 4, 2)),
    ("NHWC", "NCHW", (1, 4, 2, 2), (1, 2, 4, 2)), ("NHWC", "HWCN", (1, 4, 2, 2), (4, 2, 2, 1)),
    ("NCHW", "NHWC", (1, 3, 2, 2), (1, 2, 2, 3)),
])
def test_plain_permutations_keep_every_element(src: str, dst: str, shape, expected) -> None:  # type: ignore[no-untyped-def]
    x = _arange(shape)
    out = from_device(x, src, dst)
    assert out.shape == expected and out.size == x.size
    assert np.array_equal(from_device(out, dst, src), x)


@pytest.mark.parametrize("dst", ["NCHW", "NHWC", "HWCN"])
def test_nc1hwc0_with_c0_2_is_read_from_the_shape(dst: str) -> None:
    """[1,2,2,2,2] with original [1,3,2,2]: C0 = 2 (not the usual 16). msaccucmp returns 16 elements (the
    padded fourth channel kept); we cut it: 12 elements, every value where NCHW puts it."""
    nchw = _arange((1, 3, 2, 2))
    device = to_device(nchw, "NCHW", "NC1HWC0", c0=2)
    assert device.shape == (1, 2, 2, 2, 2)
    out = from_device(device, "NC1HWC0", dst, (1, 3, 2, 2), original_format="NCHW")
    assert out.size == 12
    assert np.array_equal(from_device(out, dst, "NCHW"), nchw)


@pytest.mark.parametrize("device_shape, original", [((2, 16, 16, 16), (256, 32)), ((4, 2, 16, 16, 16), (4, 256, 32))])
def test_fractal_nz_to_nd_and_back(device_shape, original) -> None:  # type: ignore[no-untyped-def]
    nd = _arange(original)
    device = to_device(nd, "ND", "FRACTAL_NZ")
    assert device.shape == device_shape
    out = from_device(device, "FRACTAL_NZ", "ND", original)
    assert out.shape == original and out.size == int(np.prod(original)) and np.array_equal(out, nd)


def test_ndc1hwc0_to_ncdhw_size() -> None:
    """[1,8,1,224,224,16] with original NCDHW [1,3,8,224,224]: 24*224*224 elements (C 3, D 8)."""
    ncdhw = np.random.default_rng(0).standard_normal((1, 3, 8, 224, 224)).astype(np.float16)
    device = to_device(ncdhw, "NCDHW", "NDC1HWC0")
    assert device.shape == (1, 8, 1, 224, 224, 16)
    out = from_device(device, "NDC1HWC0", "NCDHW", (1, 3, 8, 224, 224))
    assert out.size == 24 * 224 * 224 and np.array_equal(out, ncdhw)


# --- shape conversion refusals (test_format_manager, test_shape_conversion) ------------------------------
@pytest.mark.parametrize("array_shape, src, dst, original, error", [
    # the original shape does not fit the NZ blocks: msaccucmp keeps the data as dumped, we refuse clearly
    ((20, 2, 16, 16), "FRACTAL_NZ", "ND", (1, 32, 12, 26), LayoutError),
    ((2, 16, 16, 16), "FRACTAL_NZ", "NCHW", (256, 32), UnsupportedConversion),  # NZ holds matrices: ND only
    ((1, 2, 2, 2, 2), "NC1HWC0", "MD", (1, 3, 2, 2), UnsupportedConversion),  # no such target
    ((1, 2, 2, 2, 2), "ND", "NCHW", (1, 3, 2, 2), UnsupportedConversion),  # ND has no axis names
    ((1, 2, 2, 2, 2), "NC1HWC0", "NCHW", (1, 5, 2, 2), LayoutError),  # 5 channels do not fit C1*C0 = 4
    ((4, 4, 2, 2), "NC1HWC0", "NCHW", (1, 3, 2, 2), LayoutError),  # not 5-D
    ((4, 1, 16, 16), "FRACTAL_Z", "NCHW", None, LayoutError),  # weights need their original shape
])
def test_conversions_that_are_refused(array_shape, src, dst, original, error) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(error) as caught:
        from_device(np.zeros(array_shape, np.float16), src, dst, original)
    assert str(caught.value) and "\n" not in str(caught.value)


def test_fractal_z_group_convolution_weights_are_refused() -> None:
    with pytest.raises(LayoutError, match="group convolution"):
        from_device(np.zeros((4, 1, 16, 16), np.float16), "FRACTAL_Z", "NCHW", (16, 16, 2, 2), sub_format=2)


# --- fusion-rule parsing (test_fusion_rule_parser) ---------------------------------------------------
def _plan(tmp_path: Path, ops: list[dict]):  # type: ignore[no-untyped-def]
    from precision_tool.analysis.compare.graph_plan import plan_graph_compare
    from precision_tool.analysis.compare.matching import DumpIndex
    from precision_tool.formats.ge.ge_graph import load_graph

    path = tmp_path / "graph.json"
    path.write_text(json.dumps({"name": "resnet50", "graph": [{"name": "merge1", "op": ops}]}))
    model = load_graph(path)
    return plan_graph_compare(model.graphs[0].ops, DumpIndex())


def _names(value: list[str] | None) -> dict:
    item: dict = {"val_type": 1}
    if value is not None:
        item["s"] = value
    return {"key": "_datadump_original_op_names", "value": {"list": item}}


@pytest.mark.parametrize("ops, groups", [
    # no attribute: the op is its own group, named after itself
    ([{"name": "data", "type": "Data"}], [("data", "data")]),
    # an empty original-name list ([''] in msaccucmp): its own group; no original name: '*' as msaccucmp
    ([{"name": "dynamic_const_432", "type": "Const", "attr": [_names(None)]}], [("dynamic_const_432", "*")]),
    # L1 fusion: every op of sub-graph 'A' (a string attribute, as msaccucmp reads it) is one group
    ([{"name": "A1", "type": "XXX", "attr": [{"key": "_L1_fusion_sub_graph_no", "value": {"s": "A"}}]},
      {"name": "A2", "type": "XXX", "attr": [{"key": "_L1_fusion_sub_graph_no", "value": {"s": "A"}}]}],
     [("A1,A2", "A1,A2")]),
    # GE may write the number as an int: the same group
    ([{"name": "B1", "type": "XXX", "attr": [{"key": "_L1_fusion_sub_graph_no", "value": {"i": 7}}]},
      {"name": "B2", "type": "XXX", "attr": [{"key": "_L1_fusion_sub_graph_no", "value": {"s": "7"}}]}],
     [("B1,B2", "B1,B2")]),
    # several original names: one fused op, its ground truth all of them
    ([{"name": "conv1conv1_relu", "type": "Relu",
       "attr": [_names(["conv1", "bn_conv1", "scale_conv1", "conv1_relu"])]}],
     [("conv1conv1_relu", "conv1,bn_conv1,scale_conv1,conv1_relu")]),
])
def test_fusion_groups(tmp_path: Path, ops, groups) -> None:  # type: ignore[no-untyped-def]
    plan = _plan(tmp_path, ops)
    assert [(g.npu_text, g.ground_truth_text) for g in plan.groups] == groups


def test_output_desc_with_only_an_origin_format_is_matched_by_op_name(tmp_path: Path) -> None:
    plan = _plan(tmp_path, [{"name": "datddda", "type": "Conv", "input": [""],
                             "output_desc": [{"attr": [{"key": "origin_format", "value": {"s": "NCHW"}}]}]}])
    match = plan.groups[0].ops[0].output_match(0)
    assert match.golden is not None and (match.golden.op_name, match.golden.index) == ("datddda", 0)
    assert match.golden.layout == "NCHW"


@pytest.mark.parametrize("text, says", [
    ("[{", "graph.json"),  # not JSON
    (json.dumps({"name": "resnet50"}), "graph.json"),  # no graph
    (json.dumps({"name": "resnet50", "graph": {"name": "merge1"}}), "graph.json"),  # graph not a list
])
def test_malformed_graph_json_is_one_line(tmp_path: Path, text: str, says: str, make_net, cli) -> None:  # type: ignore[no-untyped-def]
    net = make_net(tmp_path / "precision_data")
    graph = tmp_path / "graph.json"
    graph.write_text(text)
    result = cli("vc", "--backend", "native", "-lt", str(net.dump_dir), "-rt", str(net.golden_dir), "-g", str(graph),
                 data=net.root)
    assert result.status == 1
    said = (result.out + result.err).strip()
    assert says in said and "Traceback" not in said and said.count("\n") <= 1


@pytest.mark.reference
def test_l1_groups_and_empty_original_names_as_msaccucmp(make_case, reference_tool: Path) -> None:  # type: ignore[no-untyped-def]
    from precision_tool.formats.npu.npu_dump_write import TensorSpec

    make, nd_desc, _, _ = make_case
    rng = np.random.default_rng(5)
    case = make()
    for name in ("A1", "A2"):
        value = rng.standard_normal(16).astype(np.float32)
        case.golden(name, 0, value)
        case.op(name, "Relu", outputs=[nd_desc((16,))], _L1_fusion_sub_graph_no="A")
        case.dump("Relu", name, [], [TensorSpec(value.astype(np.float16))])
    value = rng.standard_normal(16).astype(np.float32)
    case.golden("lone", 0, value)
    case.op("lone", "Abs", outputs=[nd_desc((16,))], original=[])
    case.dump("Abs", "lone", [], [TensorSpec(value.astype(np.float16))])
    ours = case.run_ours()
    assert ours == case.run_reference(reference_tool)
    assert [row[2] for row in ours[1:]] == ["A1,A2", "A1,A2", "lone"]


# --- quant filtering (test_quant_filter) ---------------------------------------------------------------
@pytest.mark.parametrize("name, quant, dequant", [
    ("bottleneck_v1/shortcut/act_quant/AscendQuant", True, False),
    ("pool1res2a_branch1_0_quant_layer", True, False),
    ("resnet_v1_50/logits/Conv2Dresnet_v1_50/logits/dequant/AscendDequant", False, True),
    ("res2a_branch2cres2a_branch2c_dequant_layer", False, True),
    ("res2a_branch2ares2a_branch2a_dequant_layerres2a_branch2b_0_quant_layer", True, True),
    ("model.layer1.weight_quant", True, False), ("model.layer1.anti_quant", False, True),
    ("conv1conv1_relu", False, False),
])
def test_quant_name_patterns(name: str, quant: bool, dequant: bool) -> None:
    from precision_tool.analysis.compare.quant_filter import DEQUANT_NAME, QUANT_NAME

    assert bool(QUANT_NAME.search(name)) is quant
    assert bool(DEQUANT_NAME.search(name)) is dequant


def test_what_is_skipped_for_quantized_ops(tmp_path: Path) -> None:
    """AscendQuant outputs (int8) and dequantize inputs (int32 / int8) have no golden: not compared; the ops
    between them are compared here (msaccucmp skips them) and the plan says so."""
    plan = _plan(tmp_path, [
        {"name": "x/act_quant/AscendQuant", "type": "AscendQuant"},
        {"name": "conv", "type": "Conv2D", "input": ["x/act_quant/AscendQuant:0"]},
        {"name": "res2a_dequant_layer", "type": "AscendDequant", "input": ["conv:0"]},
        {"name": "relu", "type": "Relu", "input": ["res2a_dequant_layer:0"]},
    ])
    flags = {p.name: (p.skip_inputs, p.skip_outputs) for g in plan.groups for p in g.ops}
    assert flags == {"x/act_quant/AscendQuant": (False, True), "conv": (False, False),
                     "res2a_dequant_layer": (True, False), "relu": (False, False)}
    assert any("quantized" in w and "compared here" in w for w in plan.warnings)


# --- the overflow column (test_overflow_detection) ------------------------------------------------------
FP16, FP32, INT32 = 2, 1, 7


@pytest.mark.parametrize("data_type, values, expected", [
    (FP16, [1, 2, 3], "NO"), (FP16, [65504], "YES"), (FP16, [-65504, 1], "YES"), (FP16, [np.inf], "YES"),
    (FP16, [-np.inf, 0], "YES"), (FP16, [], "NO"),
    (FP16, [np.nan, 1], "YES"),  # msaccucmp says NO: the maximum of data holding NaN is NaN, not >= 65504
    (FP32, [1e9], "NaN"), (INT32, [19345143, 2, 3], "NaN"),  # only fp16 tensors are judged
])
def test_overflow_verdicts(data_type: int, values, expected: str) -> None:  # type: ignore[no-untyped-def]
    from precision_tool.analysis.results.result_columns import overflow_text

    dtype = {FP16: np.float16, FP32: np.float32, INT32: np.int32}[data_type]
    array = np.array(values, dtype=dtype)
    assert overflow_text(SimpleNamespace(data_type=data_type), lambda: array) == expected


def test_overflow_in_a_streamed_tensor_is_found_past_the_first_chunk(tmp_path: Path) -> None:
    from precision_tool.analysis.results.metrics import FileSource
    from precision_tool.analysis.results.result_columns import overflow_text

    data = np.zeros((1 << 22) + 10, np.float16)
    data[-1] = np.inf
    path = tmp_path / "big.bin"
    data.tofile(path)
    source = FileSource(str(path), 0, np.dtype(np.float16), data.size)
    assert overflow_text(SimpleNamespace(data_type=FP16), lambda: source) == "YES"
    data[-1] = 1
    data.tofile(path)
    assert overflow_text(SimpleNamespace(data_type=FP16), lambda: source) == "NO"


@pytest.mark.reference
def test_a_group_of_inner_nodes_is_skipped_as_msaccucmp(make_case, reference_tool: Path) -> None:  # type: ignore[no-untyped-def]
    """Two multi-op nodes sharing one original name and no origin name on their outputs (as the real
    quantized ResNet-50's RequantHostCpuOp + dequantize pairs): both dumped, neither compared; one row
    saying the first is an inner node."""
    from precision_tool.formats.ge import ge_graph as g
    from precision_tool.formats.npu.npu_dump_write import TensorSpec

    make, nd_desc, _, _ = make_case
    case = make()
    value = np.arange(16, dtype=np.float32)
    case.golden("scale_group", 0, value)
    for name in ("Requant_1", "Requant_2"):
        case.op(name, "RequantHostCpuOp", outputs=[nd_desc((16,))], original=["scale_group"])
        case.ops[-1].attrs["_datadump_is_multiop"] = g.attr_bool(True)
        case.dump("RequantHostCpuOp", name, [], [TensorSpec(value.astype(np.float16))])
    case.golden("relu", 0, value)  # msaccucmp writes no CSV when nothing at all is compared
    case.op("relu", "Relu", outputs=[nd_desc((16,))], original=["relu"])
    case.dump("Relu", "relu", [], [TensorSpec(value.astype(np.float16))])
    ours = case.run_ours()
    assert ours == case.run_reference(reference_tool)
    assert len(ours) == 3 and "[Requant_1] The op is inner node for multi to multi relation" in ours[1][-1]


Q = __import__("precision_tool.analysis.compare.quant_filter", fromlist=["x"])


@pytest.mark.parametrize("kind, in_pairs, data_type, expected", [
    (Q.QUANT, False, "DT_INT8", Q.QUANT), (Q.QUANT, True, "DT_INT8", Q.QUANT),
    (Q.DEQUANT, False, "DT_INT8", Q.NORMAL), (Q.DEQUANT, True, "DT_INT8", Q.MIDDLE),
    (Q.BOTH, False, "DT_INT8", Q.QUANT), (Q.BOTH, True, "DT_INT8", Q.QUANT),
    (Q.NORMAL, False, "DT_INT8", Q.NORMAL), (Q.NORMAL, True, "DT_INT8", Q.MIDDLE),
    (Q.QUANT, False, "DT_FLOAT16", Q.NORMAL), (Q.QUANT, True, "DT_FLOAT16", Q.MIDDLE),
    (Q.DEQUANT, False, "DT_FLOAT16", Q.DEQUANT), (Q.DEQUANT, True, "DT_FLOAT16", Q.DEQUANT),
    (Q.BOTH, False, "DT_FLOAT16", Q.DEQUANT), (Q.BOTH, True, "DT_FLOAT16", Q.DEQUANT),
    (Q.NORMAL, False, "DT_FLOAT16", Q.NORMAL), (Q.NORMAL, True, "DT_FLOAT16", Q.MIDDLE),
    (Q.NORMAL, False, "DT_INT32", Q.NORMAL), (Q.NORMAL, True, "DT_INT32", Q.MIDDLE),
    (Q.QUANT, False, "DT_INT32", Q.NORMAL), (Q.QUANT, True, "DT_INT32", Q.MIDDLE),
    (Q.DEQUANT, False, "DT_INT32", Q.NORMAL), (Q.DEQUANT, True, "DT_INT32", Q.MIDDLE),
    (Q.BOTH, False, "DT_INT32", Q.NORMAL), (Q.BOTH, True, "DT_INT32", Q.MIDDLE),
    # a dequantize op with an fp32 output (the real quantized ResNet-50) does not close the stretch
    (Q.DEQUANT, True, "DT_FLOAT", Q.MIDDLE),
])
def test_quant_filter_output_types(kind: int, in_pairs: bool, data_type: str, expected: int) -> None:
    assert Q._output_type(kind, in_pairs, data_type) == expected


def test_quant_filter_drops_the_stretch_between_quantize_and_dequantize(tmp_path: Path) -> None:
    def desc(dtype: str) -> dict:
        return {"dtype": dtype, "layout": "ND", "shape": {"dim": [4]}}

    from precision_tool.analysis.compare.quant_filter import quant_filtered
    from precision_tool.formats.ge.ge_graph import load_graph

    ops = [
        {"name": "pool", "type": "Pooling", "id": 1, "output_desc": [desc("DT_FLOAT16")]},
        {"name": "x_quant_layer", "type": "AscendQuant", "id": 2, "input": ["pool:0"], "output_desc": [desc("DT_INT8")]},
        {"name": "conv", "type": "Conv2D", "id": 3, "input": ["x_quant_layer:0"], "output_desc": [desc("DT_INT32")]},
        {"name": "x_dequant_layer", "type": "AscendDequant", "id": 4, "input": ["conv:0"],
         "output_desc": [desc("DT_FLOAT16")]},
        {"name": "relu", "type": "Relu", "id": 5, "input": ["x_dequant_layer:0"], "output_desc": [desc("DT_FLOAT16")]},
    ]
    path = tmp_path / "q.json"
    path.write_text(json.dumps({"name": "q", "graph": [{"name": "g", "op": ops}]}))
    assert quant_filtered(load_graph(path).graphs[0].ops) == {"conv"}
    ops[3]["output_desc"] = [desc("DT_FLOAT")]  # an fp32 dequantize: the stretch never closes
    path.write_text(json.dumps({"name": "q", "graph": [{"name": "g", "op": ops}]}))
    assert quant_filtered(load_graph(path).graphs[0].ops) == {"conv", "x_dequant_layer", "relu"}
