"""NPU dump files for the real graphs in tests/fixtures/real, written with Ascend's own proto.

`compile_proto(folder)` runs protoc (grpcio-tools) on tests/tools/AclDumpMsg.proto and imports the
generated module; `write_dump` serializes a DumpData with that class and appends the tensor bytes as
the runtime does (formats.md §2.2). Nothing here uses the project's own dump writer, so a reading
mistake the writer shares with the reader cannot hide.

The builders (`om_model_case`, `gather_case`, `assign_case`) put dumps and golden .npy files for one
real graph under a precision_data folder: tensors come from numpy computations of each op (a cast,
a transpose, a top-k selection, a gather ...), the NPU side in fp16 where the graph says so, golden
files named after the original framework ops as the graph records them.
"""

from __future__ import annotations

import importlib.util
import json
import struct
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Sequence

import numpy as np

HERE = Path(__file__).parent
PROTO = HERE / "AclDumpMsg.proto"
REAL = HERE.parent / "fixtures" / "real"
OM_MODEL_JSON = REAL / "atc_json" / "msit_msquickcmp_om_model.json"
GATHER_GRAPH = REAL / "ge_graph" / "oam_train_ge_proto_00056_Build.txt"
ASSIGN_GRAPH = REAL / "ge_graph" / "oam_asys370_ge_proto_00000000_Build.txt"

_DTYPES = {np.dtype(np.float32): "DT_FLOAT", np.dtype(np.float16): "DT_FLOAT16", np.dtype(np.int8): "DT_INT8",
           np.dtype(np.uint8): "DT_UINT8", np.dtype(np.int32): "DT_INT32", np.dtype(np.int64): "DT_INT64",
           np.dtype(np.uint64): "DT_UINT64", np.dtype(np.float64): "DT_DOUBLE", np.dtype(np.bool_): "DT_BOOL"}


def compile_proto(out_dir: Path) -> Any:
    """protoc the real proto into `out_dir` and import the generated module (AclDumpMsg_pb2)."""
    out_dir.mkdir(parents=True, exist_ok=True)
    subprocess.run([sys.executable, "-m", "grpc_tools.protoc", f"-I{HERE}", f"--python_out={out_dir}", str(PROTO)],
                   check=True, capture_output=True, timeout=120)
    target = out_dir / "AclDumpMsg_pb2.py"
    spec = importlib.util.spec_from_file_location(f"AclDumpMsg_pb2_{abs(hash(str(out_dir)))}", target)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@dataclass
class Tensor:
    """One dumped tensor: its bytes as the device holds them, and what the header says about it."""

    array: np.ndarray
    fmt: str = "ND"  # OutputFormat name without FORMAT_
    original_shape: Sequence[int] | None = None
    origin: tuple[str, int] | None = None  # OpOutput.original_op (name, output_index)


def write_dump(pb2: Any, path: Path, op_name: str, inputs: Sequence[Tensor], outputs: Sequence[Tensor],
               dump_time_us: int) -> None:
    """`[u64 header length][DumpData][input bytes ...][output bytes ...]`, built with the generated class."""
    message = pb2.DumpData()
    message.version = "2.0"
    message.dump_time = dump_time_us
    message.op_name = op_name
    blocks = []
    for items, tensor in [(message.input, t) for t in inputs] + [(message.output, t) for t in outputs]:
        data = np.ascontiguousarray(tensor.array).tobytes()
        item = items.add()
        item.data_type = pb2.OutputDataType.Value(_DTYPES[tensor.array.dtype])
        item.format = pb2.OutputFormat.Value("FORMAT_" + tensor.fmt)
        item.shape.dim.extend(int(d) for d in tensor.array.shape)
        item.original_shape.dim.extend(int(d) for d in (tensor.original_shape or tensor.array.shape))
        item.size = len(data)
        if tensor.origin is not None:
            item.original_op.name = tensor.origin[0]
            item.original_op.output_index = tensor.origin[1]
            item.original_op.data_type = item.data_type
            item.original_op.format = item.format
        blocks.append(data)
    header = message.SerializeToString()
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(struct.pack("<Q", len(header)) + header + b"".join(blocks))


@dataclass
class RealCase:
    """Dumps and goldens for one real graph; `graph` is what `vc -g` reads, `graph_json` what msaccucmp -f reads."""

    root: Path  # the precision_data folder
    dump_dir: Path
    golden_dir: Path
    graph: Path
    graph_json: Path
    dumped: list[str] = field(default_factory=list)


class _Writer:
    def __init__(self, pb2: Any, root: Path, model_name: str) -> None:
        self.pb2 = pb2
        self.root = root
        self.dump_dir = root / "npu" / "debug_0" / "dump" / "20240101000000" / "0" / model_name / "1" / "0"
        self.golden_dir = root / "tf" / "dump"
        self.dump_dir.mkdir(parents=True, exist_ok=True)
        self.golden_dir.mkdir(parents=True, exist_ok=True)
        self.clock = 1704067200000000
        self.task = 0
        self.dumped: list[str] = []

    def golden(self, name: str, slot: int, array: np.ndarray) -> None:
        self.clock += 1
        safe = "".join(c if c.isalnum() or c in "_-" else "_" for c in name)
        np.save(self.golden_dir / f"{safe}.{slot}.{self.clock:016d}.npy", array)

    def dump(self, op_type: str, name: str, inputs: Sequence[Tensor], outputs: Sequence[Tensor]) -> None:
        self.clock += 10
        self.task += 1
        file_name = f"{op_type}.{name.replace('/', '_').replace('.', '_')}.{self.task}.0.{self.clock}"
        write_dump(self.pb2, self.dump_dir / file_name, name, inputs, outputs, self.clock)
        self.dumped.append(name)


def om_model_case(pb2: Any, root: Path, seed: int = 11, overflow: bool = False) -> RealCase:
    """The msit om model (atc JSON of a compiled BatchMultiClassNMS post-processing net): boxes and scores
    go through Cast to fp16, Transpose to the NMS layout, a top-100 selection, Concat, Slice and Gather.
    `overflow`: the fp16 side overflows as a device would: an inf after the boxes' Cast, 65504 (fp16's
    largest) in the Concat, a NaN in the Gather."""
    rng = np.random.default_rng(seed)
    w = _Writer(pb2, root, "sub_model_NPU_0")
    boxes = rng.random((1000, 80, 4), dtype=np.float32)
    scores = rng.random((1000, 80), dtype=np.float32)
    w.golden("boxes_all", 0, boxes)
    w.golden("scores_all", 0, scores)
    boxes16, scores16 = boxes.astype(np.float16), scores.astype(np.float16)
    if overflow:
        boxes16[0, 0, 0] = np.inf
    # Cast fp32 -> fp16 (the graph keeps the NCHW label on these 3-D and 2-D shapes)
    w.dump("Cast", "trans_Cast_0", [Tensor(boxes, "NCHW")], [Tensor(boxes16, "NCHW", origin=("boxes_all", 0))])
    w.dump("Cast", "trans_Cast_2", [Tensor(scores, "NCHW")], [Tensor(scores16, "NCHW", origin=("scores_all", 0))])
    perm0, perm1 = np.array([0, 2, 3, 1], np.int32), np.array([0, 2, 1], np.int32)
    t0 = np.ascontiguousarray(boxes16.reshape(1, 1000, 80, 4).transpose(perm0))
    t1 = np.ascontiguousarray(scores16.reshape(1, 1000, 80).transpose(perm1))
    w.dump("Transpose", "BatchMultiClassNMS_1203_Input0_TransposeBefore",
           [Tensor(boxes16.reshape(1, 1000, 80, 4)), Tensor(perm0)], [Tensor(t0)])
    w.dump("Transpose", "BatchMultiClassNMS_1203_Input1_TransposeBefore",
           [Tensor(scores16.reshape(1, 1000, 80)), Tensor(perm1)], [Tensor(t1)])
    # NMS stand-in: the 100 best (box, class) pairs by score, in fp32 for the golden and fp16 on the device
    best_class = scores.argmax(axis=1)
    best = scores[np.arange(1000), best_class]
    top = np.argsort(-best, kind="stable")[:100]
    nms_boxes = boxes[top, best_class[top]]  # [100, 4]
    nms_scores, nms_classes = best[top], best_class[top].astype(np.float32)
    valid = np.array([[100, 0, 0, 0, 0, 0, 0, 0]], np.int32)
    golden_nms = [nms_boxes.T.reshape(1, 4, 100), nms_scores.reshape(1, 100), nms_classes.reshape(1, 100), valid]
    w.golden("BatchMultiClassNMS_1203", 0, golden_nms[0])
    w.golden("BatchMultiClassNMS_1203", 1, golden_nms[1])
    w.golden("BatchMultiClassNMS_1203", 2, golden_nms[2])
    w.golden("BatchMultiClassNMS_1203", 3, golden_nms[3])
    npu_nms = [a.astype(np.float16) if a.dtype == np.float32 else a for a in golden_nms]
    w.dump("BatchMultiClassNonMaxSuppression", "BatchMultiClassNMS_1203", [Tensor(t0), Tensor(t1)],
           [Tensor(a) for a in npu_nms])
    classes64 = npu_nms[2].astype(np.int64)
    w.golden("Cast_1206", 0, nms_classes.astype(np.int64).reshape(1, 100))
    w.dump("Cast", "Cast_1206", [Tensor(npu_nms[2])], [Tensor(classes64)])
    after = np.ascontiguousarray(npu_nms[0].transpose(0, 2, 1))  # [1, 100, 4]
    w.dump("TransposeD", "BatchMultiClassNMS_1203_Output0TransposeAfter", [Tensor(npu_nms[0])], [Tensor(after)])
    concat = np.concatenate([after.reshape(100, 4), npu_nms[1].reshape(100, 1)], axis=1)
    if overflow:
        concat[3, 1] = 65504
    golden_concat = np.concatenate([nms_boxes, nms_scores.reshape(100, 1)], axis=1)
    w.golden("Concat_1211", 0, golden_concat)
    w.dump("ConcatD", "Concat_1211", [Tensor(after.reshape(100, 4)), Tensor(npu_nms[1].reshape(100, 1))],
           [Tensor(concat)])
    sliced = np.ascontiguousarray(concat[:, :4])
    w.golden("Slice_1218", 0, golden_concat[:, :4])
    w.dump("StridedSliceD", "Slice_1218", [Tensor(concat)], [Tensor(sliced, origin=("Slice_1218", 0))])
    w.dump("Cast", "trans_Cast_6", [Tensor(sliced)], [Tensor(sliced.astype(np.float32), origin=("Slice_1218", 0))])
    index = np.array(4, np.int64)
    axis = np.array(1, np.int32)
    gathered = np.ascontiguousarray(concat[:, 4])
    if overflow:
        gathered[5] = np.nan
    w.golden("Gather_1221", 0, golden_concat[:, 4])
    w.dump("GatherV2", "PartitionedCall_Gather_1221_gatherv2_3",
           [Tensor(concat), Tensor(index.reshape(1)), Tensor(axis.reshape(1))], [Tensor(gathered)])
    w.dump("Cast", "trans_Cast_7", [Tensor(gathered)], [Tensor(gathered.astype(np.float32), origin=("Gather_1221", 0))])
    return RealCase(root, w.dump_dir, w.golden_dir, OM_MODEL_JSON, OM_MODEL_JSON, w.dumped)


def _text_graph_case(root: Path, w: _Writer, graph: Path) -> RealCase:
    """Copy the real text graph into the run's graph folder; msaccucmp gets it as atc JSON (as `vc --backend
    cann` gives it), converted by the project's graph reader."""
    from precision_tool.formats.ge.ge_graph import load_graph, write_graph_json

    graph_dir = root / "npu" / "debug_0" / "graph"
    graph_dir.mkdir(parents=True, exist_ok=True)
    target = graph_dir / graph.name  # a *_Build.txt name, as the run's graph folder holds it
    target.write_bytes(graph.read_bytes())
    graph_json = root / (graph.stem + ".json")
    write_graph_json(load_graph(target), graph_json)
    return RealCase(root, w.dump_dir, w.golden_dir, target, graph_json, w.dumped)


def gather_case(pb2: Any, root: Path, seed: int = 12) -> RealCase:
    """hicann/oam-tools' training graph: GatherV2D of a [32,32] fp32 table by 16 int32 indices (layout NHWC
    on 2-D and 1-D shapes, as the graph says)."""
    rng = np.random.default_rng(seed)
    w = _Writer(pb2, root, "ge_default_20200909152235_1")
    table = rng.standard_normal((32, 32)).astype(np.float32)
    indices = rng.integers(0, 32, 16).astype(np.int32)
    w.golden("Placeholder", 0, table)  # not a graph name: a golden nothing asks for
    w.golden("_arg_Placeholder_0_0_0_arg", 0, table)
    w.golden("_arg_Placeholder_1_0_1_0_arg", 0, indices)
    w.golden("GatherV2", 0, table[indices])
    npu = table.astype(np.float16).astype(np.float32)[indices]
    w.dump("GatherV2D", "GatherV2", [Tensor(table, "NHWC"), Tensor(indices, "NHWC")],
           [Tensor(npu, "NHWC", origin=("GatherV2", 0))])
    return _text_graph_case(root, w, GATHER_GRAPH)


def assign_case(pb2: Any, root: Path, seed: int = 13) -> RealCase:
    """hicann/oam-tools' asys graph: Variable/Assign of a [64] fp32 initial value into the variable."""
    rng = np.random.default_rng(seed)
    w = _Writer(pb2, root, "ge_default_20230713074122_1")
    initial = rng.standard_normal(64).astype(np.float32)
    before = np.zeros(64, np.float32)
    w.golden("Variable", 0, before)
    w.golden("Variable/initial_value", 0, initial)
    w.golden("Variable/Assign", 0, initial)
    w.dump("Assign", "Variable/Assign", [Tensor(before), Tensor(initial)], [Tensor(initial.copy())])
    return _text_graph_case(root, w, ASSIGN_GRAPH)


def graph_op_names(graph_json: Path) -> list[str]:
    tree = json.loads(graph_json.read_text())
    return [op["name"] for graph in tree.get("graph", []) for op in graph.get("op", [])]


# --- a real GE graph with device layouts (hicann/ge's ResNet-50 after UB fusion) ----------------------
RESNET_GRAPH = REAL / "ge_graph" / "hicannge_ge_proto_00026_afterUBMatch.txt"
RESNET_SAMPLE = (
    # the head: C04 input and weights, a 1-D NCHW bias [64]
    "trans_Cast_0", "trans_TransData_1", "trans_Cast_2", "conv1", "conv1_relu",
    # the tail: the fc bias NC1HWC0 [1,63,1,1,16] of original shape [1000], FRACTAL_Z weights, softmax
    "pool5", "trans_Cast_163", "trans_Reshape_164", "trans_TransData_165", "fc1000", "prob",
    "trans_TransData_166", "trans_Cast_167",
)
_PASS = ("Cast", "TransData", "Reshape")
_NUMPY = {"DT_FLOAT": np.float32, "DT_FLOAT16": np.float16, "DT_UINT8": np.uint8, "DT_INT32": np.int32,
          "DT_INT8": np.int8, "DT_UINT64": np.uint64}
# GE's default reshape types for shapes shorter than NCHW (a 1-D bias [C] is NCHW [1,C,1,1])
_NCHW_SHORT = {1: "C", 2: "CH", 3: "CHW"}


def as_nchw(array: np.ndarray) -> np.ndarray:
    """A logical tensor of an NCHW-labelled desc as 4-D NCHW (GE's expansion of shorter shapes)."""
    if array.ndim == 4:
        return array
    axes = _NCHW_SHORT[array.ndim]
    shape = [array.shape[axes.index(a)] if a in axes else 1 for a in "NCHW"]
    return array.reshape(shape)


def pack(array: np.ndarray, layout: str, device_shape: Sequence[int]) -> np.ndarray:
    """Lay a logical (origin-shape) tensor out as the device does, by the textbook definitions (formats.md
    §2.4), independent of the project's own layout code."""
    if layout in ("NCHW", "NHWC", "ND"):
        return np.ascontiguousarray(array).reshape(device_shape)
    x = as_nchw(array)
    n, c, h, w = x.shape
    if layout in ("NC1HWC0", "NC1HWC0_C04"):
        c0 = device_shape[-1]
        c1 = -(-c // c0)
        padded = np.zeros((n, c1 * c0, h, w), x.dtype)
        padded[:, :c] = x
        out = padded.reshape(n, c1, c0, h, w).transpose(0, 1, 3, 4, 2)
    elif layout == "FRACTAL_Z":
        k, no, ni, c0 = device_shape
        c1 = -(-c // c0)
        padded = np.zeros((no * ni, c1 * c0, h, w), x.dtype)
        padded[:n, :c] = x
        out = padded.reshape(no, ni, c1, c0, h, w).transpose(2, 4, 5, 0, 1, 3).reshape(c1 * h * w, no, ni, c0)
    elif layout == "FRACTAL_Z_C04":
        # C padded to 4 and folded with H and W into the K axis: [ceil(H*W*4/16), No, Ni, 16]
        k, no, ni, c0 = device_shape
        hwc = np.zeros((no * ni, h, w, 4), x.dtype)
        hwc[:n, :, :, :c] = x.transpose(0, 2, 3, 1)
        flat = np.zeros((no * ni, k * c0), x.dtype)
        flat[:, :h * w * 4] = hwc.reshape(no * ni, -1)
        out = flat.reshape(no, ni, k, c0).transpose(2, 0, 1, 3)
    else:
        raise ValueError(f"no packing for {layout}")
    out = np.ascontiguousarray(out)
    assert out.shape == tuple(device_shape), (layout, out.shape, device_shape)
    return out


def graph_case(pb2: Any, root: Path, graph_path: Path, sample: Sequence[str], seed: int = 14) -> RealCase:
    """Dumps of the `sample` ops of a real text graph: each tensor is the numpy value of the op output it
    comes from (Cast/TransData/Reshape pass their input on), cast to the desc's dtype and laid out in the
    desc's device layout; a golden .npy (fp32, origin shape) for every op output that value belongs to."""
    from precision_tool.formats.ge.ge_graph import load_graph

    model = load_graph(graph_path)
    graph = model.graphs[0]
    ops = {op.name: op for op in graph.ops}
    rng = np.random.default_rng(seed)
    values: dict[tuple[str, int], np.ndarray] = {}
    w = _Writer(pb2, root, graph.name)

    def value(name: str, index: int) -> np.ndarray:
        key = (name, index)
        if key not in values:
            op = ops[name]
            desc = op.output_descs[index]
            shape = tuple(desc.origin_shape or desc.shape)
            if op.type in _PASS and op.data_inputs:
                source, slot = op.data_inputs[0]
                values[key] = value(source, slot).reshape(shape)
            else:
                values[key] = rng.standard_normal(shape).astype(np.float32)
                golden_name = desc.origin_name or name
                w.golden(golden_name, desc.origin_output_index or index if desc.origin_name else index,
                         values[key])
        return values[key]

    def tensor(array: np.ndarray, desc: Any) -> Tensor:
        typed = array.astype(_NUMPY[desc.dtype])
        return Tensor(pack(typed, desc.layout, desc.shape), desc.layout, tuple(desc.origin_shape or desc.shape))

    for name in sample:
        op = ops[name]
        inputs = []
        for (source, slot), desc in zip(op.data_inputs, op.input_descs):
            inputs.append(tensor(value(source, slot), desc))
        outputs = [tensor(value(name, i), desc) for i, desc in enumerate(op.output_descs)]
        w.dump(op.type, name, inputs, outputs)
    graph_dir = root / "npu" / "debug_0" / "graph"
    graph_dir.mkdir(parents=True, exist_ok=True)
    from precision_tool.formats.ge.ge_graph import write_graph_json

    graph_json = root / (graph_path.stem + ".json")
    write_graph_json(model, graph_json)
    return RealCase(root, w.dump_dir, w.golden_dir, graph_path, graph_json, w.dumped)


def resnet_case(pb2: Any, root: Path) -> RealCase:
    return graph_case(pb2, root, RESNET_GRAPH, RESNET_SAMPLE)


QUANT_GRAPH = REAL / "ge_graph" / "hicannge_ge_proto_00015_OptimizeQuantGraph_FeGraphFusionAfter.txt"
QUANT_SAMPLE = ("conv1", "conv1_relu", "pool1", "res2a_branch1_quant_layer", "res2a_branch2a",
                "res2a_branch2a_dequant_layer", "res2a_branch2b_quant_layer", "res2a_branch2b")


def quant_case(pb2: Any, root: Path) -> RealCase:
    """hicann/ge's quantized ResNet-50 (int8 convolutions between AscendQuant and AscendDequant)."""
    return graph_case(pb2, root, QUANT_GRAPH, QUANT_SAMPLE)


UNIQUE_GRAPH = REAL / "ge_graph" / "oam_asys370_ge_proto_00000001_Build.txt"


def unique_case(pb2: Any, root: Path, seed: int = 15) -> RealCase:
    """hicann/oam-tools' asys graph with sub-graphs: Unique of a [64] variable, then GatherV2 of two of the
    unique values (indices [2], axis 0), inside the partitioned call's sub-graph."""
    rng = np.random.default_rng(seed)
    w = _Writer(pb2, root, "ge_default_20230713074125_11")
    variable = rng.integers(0, 10, 64).astype(np.float32)
    unique, index = np.unique(variable, return_inverse=True)  # sorted; TF keeps first-seen order
    order = np.argsort([np.flatnonzero(variable == u)[0] for u in unique])
    unique = unique[order]
    remap = np.empty_like(order)
    remap[order] = np.arange(order.size)
    index = remap[index].astype(np.int32)
    indices = np.array([1, 3], np.int32)
    axis = np.array(0, np.int32)
    w.golden("Variable", 0, variable)
    w.golden("Unique", 0, unique)
    w.golden("Unique", 1, index)
    w.golden("GatherV2", 0, unique[indices])
    w.golden("GatherV2/indices", 0, indices)
    w.golden("GatherV2/axis", 0, axis)
    w.dump("Unique", "Unique", [Tensor(variable)], [Tensor(unique), Tensor(index)])
    w.dump("GatherV2", "GatherV2", [Tensor(unique), Tensor(indices), Tensor(axis)], [Tensor(unique[indices])])
    return _text_graph_case(root, w, UNIQUE_GRAPH)
