"""Synthetic compiled (Build) graphs shaped like real GE dumps, for benchmarks and parser cross-checks.

Why: real networks compile to 20,000-100,000 op graphs that cannot ship with the project; this builds
one of any size with the attribute mix of a real Build graph (kernel names, fusion passes, origin
descriptors, long compile-info strings, every attribute value kind), deterministically.
"""

from __future__ import annotations

import random

from precision_tool.formats.ge.ge_model import (
    AttrList,
    Graph,
    ListListInt,
    Model,
    NamedAttrs,
    Op,
    TensorDesc,
    TensorValue,
    attr_dtype,
    attr_list_int,
    attr_list_str,
)
from pathlib import Path

_TYPES = [("Conv2D", "AIcoreEngine", "TbeConvBiasaddFusionPass"), ("MatMulV2", "AIcoreEngine", None),
          ("Relu", "AIcoreEngine", None), ("Add", "AIcoreEngine", "AutomaticUbFusion"),
          ("Cast", "AIcoreEngine", None), ("TransData", "AIcoreEngine", None),
          ("BNTrainingUpdate", "AIcoreEngine", "BatchNormPreprocessFusionPass"),
          ("Mul", "AIcoreEngine", "MulAddFusionPass"), ("ReduceSumD", "AIcoreEngine", None),
          ("Reshape", "DNN_VM_GE_LOCAL_OP_STORE", None)]


def _desc(rng: random.Random, origin: str, index: int) -> TensorDesc:
    n, c, h, w = 32, rng.choice([16, 32, 64]), rng.choice([7, 14, 28]), rng.choice([7, 14, 28])
    c1 = (c + 15) // 16
    return TensorDesc(
        dtype=rng.choice(["DT_FLOAT16", "DT_FLOAT", "DT_FLOAT16"]),
        layout="NC1HWC0",
        shape=(n, c1, h, w, 16),
        attrs={
            "origin_format": "NHWC",
            "origin_shape": attr_list_int([n, h, w, c]),
            "_datadump_origin_name": origin,
            "_datadump_origin_output_index": index,
            "_datadump_origin_format": "NHWC",
        },
        extra={"size": n * c1 * h * w * 32, "real_dim_cnt": 4},
    )


def synthetic_build_model(op_count: int, path: str | Path = "synthetic_Build.txt", seed: int = 7,
                          all_kinds: bool = True, light: bool = False) -> Model:
    """A one-graph model of `op_count` ops in a chain-with-skips; each op carries ~20 attributes
    (`light`: a handful, for checks against protobuf's slow parser)."""
    rng = random.Random(seed)
    ops: list[Op] = []
    names: list[str] = []
    for i in range(op_count):
        op_type, lib, fusion = _TYPES[i % len(_TYPES)]
        name = f"model/block{i // 50}/layer{i % 50}/{op_type}_{i}"
        inputs = []
        if names:
            inputs.append(f"{names[-1]}:0")
            if i > 3 and rng.random() < 0.3:
                inputs.append(f"{names[rng.randrange(max(0, i - 30), i - 1)]}:0")
            if rng.random() < 0.1:
                inputs.append(f"{names[rng.randrange(0, i)]}:-1")
        originals = [f"tf/block{i // 50}/layer{i % 50}/{op_type}"]
        if fusion:
            originals.append(f"tf/block{i // 50}/layer{i % 50}/BiasAdd")
        attrs: dict[str, object] = {
            "_datadump_original_op_names": attr_list_str(originals),
            f"{name}_kernelname": f"te_{op_type.lower()}_{rng.getrandbits(64):016x}_{i}",
            "_kernelname": f"te_{op_type.lower()}_{i}",
            "_ge_attr_op_kernel_lib_name": lib,
            "_session_graph_id": "0_1",
            "_fe_imply_type": 6,
            "op_para_size": rng.randrange(0, 4096),
            "compile_info_json": '{"_pattern": "ElemWise", "_flag_info": [true, false, 1, 0],'
                                 f' "_ub_size": 262144, "_core_num": 32, "_id": {i}}}',
            "alpha": rng.random(),
        }
        if light:
            for key in ("compile_info_json", "_session_graph_id", "_fe_imply_type", "op_para_size", "_kernelname"):
                del attrs[key]
        if fusion:
            attrs["pass_name" if "Ub" not in fusion else "pass_name_ub"] = fusion
        if i % 7 == 0:
            attrs["_L1_fusion_sub_graph_no"] = str(i // 7)
        if all_kinds and i % 97 == 0:
            attrs.update({
                "dt_attr": attr_dtype(1),
                "bytes_attr": bytes([0, 1, 200, 34, 92]),
                "unicode": "τ-层 \"quoted\"\n",
                "floats": AttrList([0.5, -1.25, 1e-05], "f", "VT_LIST_FLOAT"),
                "bools": AttrList([True, False], "b", "VT_LIST_BOOL"),
                "func": NamedAttrs("f1", {"k": 1, "s": "v"}),
                "td": TensorDesc("DT_INT32", "ND", (3,), {"x": "y"}),
                "t": TensorValue(TensorDesc("DT_UINT8", "ND", (2,)), b"\x01\x02"),
                "g": Graph(name="inner", ops=[Op(name="c", type="Const")]),
                "empty": None,
                "shape_range": ListListInt([[1, 2], [3, 4]]),
                "empty_list": AttrList([], None, "VT_LIST_NONE"),
                "dts": AttrList([attr_dtype(0), attr_dtype(3)], "dt", "VT_LIST_DATA_TYPE"),
            })
        outputs = [_desc(rng, originals[-1], 0)]
        if light:
            outputs[0].attrs = {"_datadump_origin_name": originals[-1]}
        op = Op(
            name=name, type=op_type, id=i, stream_id=i % 3, inputs=inputs,
            input_descs=[_desc(rng, originals[0], 0) if not light else TensorDesc("DT_FLOAT", "ND", (i % 5, 3))
                         for _ in inputs if not _.endswith(":-1")],
            output_descs=outputs, attrs=attrs,
            extra={"workspace": [0], "workspace_bytes": [0]},
        )
        names.append(name)
        ops.append(op)
    # consumers (dst_name/dst_index) from the data inputs, as GE writes them
    by_name = {op.name: op for op in ops}
    for op in ops:
        for position, (producer, _out) in enumerate(op.data_inputs):
            owner = by_name[producer]
            owner.dst_names.append(op.name)
            owner.dst_indexes.append(position)
    graph = Graph(name="ge_default_20240613143502_1", ops=ops)
    return Model(path=Path(path), name="synthetic", graphs=[graph], version=1)
