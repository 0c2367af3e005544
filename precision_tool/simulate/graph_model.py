"""The derived NPU graph as plain data: ops in execution order, their tensors' dtypes and device layouts,
and the TF tensors they stand for. Built by `npu_graph`, computed by `kernels`, written by `run_files`.
Pure Python: neither TensorFlow nor numpy is imported here.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping

from precision_tool.simulate.npu_fusion import FusionCount

FLOAT16 = "float16"
FLOAT32 = "float32"
INT32 = "int32"

# Ops whose value never depends on the step's data: evaluated at compile time.
SHAPE_OPS = frozenset({"Shape", "ShapeN", "Rank", "Size"})
# Not ops on the device: Identity disappears; a ReadVariableOp becomes the Variable op it reads.
PASS_THROUGH_OPS = frozenset({"Identity", "ReadVariableOp"})
SKIPPED_OPS = frozenset({"NoOp"})


@dataclass
class NpuTensor:
    """One output of an NPU op: its dtype and device layout, and the TF tensor it stands for."""

    dtype: str  # numpy dtype name
    layout: str  # NC1HWC0, FRACTAL_Z, FRACTAL_NZ, NHWC, HWCN, ND
    shape: tuple[int, ...]  # logical shape, in origin_format
    origin_format: str  # NHWC, HWCN or ND
    origin_name: str | None = None  # TF op whose output this is (the golden tensor)
    origin_index: int | None = None


@dataclass
class NpuOp:
    """One op of the compiled graph. `kind`: data, variable, const, compute, trans."""

    name: str
    type: str
    kind: str
    inputs: list[tuple[str, int]]
    outputs: list[NpuTensor]
    original_names: list[str] | None = None
    pass_name: str | None = None
    pass_name_ub: str | None = None
    params: dict[str, Any] = field(default_factory=dict)

    @property
    def has_task(self) -> bool:
        """Ops that run as a device task (and so are dumped); Data/Variable/Const are not."""
        return self.kind in ("compute", "trans")


@dataclass
class NpuGraph:
    """The derived graph: ops in execution order, plus what the fusion passes did."""

    name: str
    ops: list[NpuOp]
    graph_fusion: dict[str, FusionCount]
    ub_fusion: dict[str, FusionCount]

    def op(self, name: str) -> NpuOp:
        for op in self.ops:
            if op.name == name:
                return op
        raise KeyError(name)


@dataclass
class TfTensorInfo:
    dtype: str
    shape: tuple[int, ...]


_TF_DTYPES = {1: FLOAT32, 2: "float64", 3: INT32, 4: "uint8", 5: "int16", 6: "int8", 7: "string", 9: "int64",
              10: "bool", 14: "bfloat16", 17: "uint16", 19: FLOAT16, 20: "resource", 22: "uint32", 23: "uint64"}


def tensor_infos(graph_def: Any, dtypes: Mapping[str, str] | None = None) -> dict[str, TfTensorInfo]:
    """'node:slot' → dtype and static shape, from a GraphDef written with add_shapes=True. `dtypes`
    ('node:slot' → numpy dtype name, from the tf.Graph) is exact; without it the dtype is read from the
    node's type attributes."""
    infos: dict[str, TfTensorInfo] = {}
    for node in graph_def.node:
        shapes = node.attr["_output_shapes"].list.shape if "_output_shapes" in node.attr else []
        for slot, shape in enumerate(shapes):
            name = f"{node.name}:{slot}"
            dims = tuple(int(d.size) for d in shape.dim)
            infos[name] = TfTensorInfo((dtypes or {}).get(name) or _output_dtype(node, slot), dims)
    return infos


def _output_dtype(node: Any, slot: int) -> str:
    if node.op in ("VarHandleOp",):
        return "resource"
    if node.op in SHAPE_OPS:
        return _TF_DTYPES.get(node.attr["out_type"].type, INT32)
    for key in ("T", "dtype", "DstT"):
        if key in node.attr and node.attr[key].type:
            return _TF_DTYPES.get(node.attr[key].type, "unknown")
    return FLOAT32


