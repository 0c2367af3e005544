"""Fixtures for the comparison tests: a small network written with the project's own writers.

`make_network(root)` writes a precision_data workspace: a Build graph (text and atc JSON), NPU dumps of
every op in device layouts, and golden .npy files computed in numpy, covering the cases msaccucmp
handles: fp16/fp32/bf16, NC1HWC0/FRACTAL_Z/FRACTAL_NZ, fused ops with several original names,
Cast and TransData chains, missing golden, missing dump, NaN/Inf, all-zero, scalars, bools, a group of
several NPU ops for one TF op, and (optionally) a corrupt dump file.
"""

from __future__ import annotations

import os
import subprocess
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest

GRAPH_NAME = "ge_default_20240101000000_1"


@dataclass
class Network:
    root: Path
    dump_dir: Path
    golden_dir: Path
    graph_txt: Path
    graph_json: Path
    corrupt: Path | None


def _desc(dtype: str, layout: str, shape, **attrs):  # type: ignore[no-untyped-def]
    from precision_tool.formats.ge import ge_graph as g

    values = {}
    for key, value in attrs.items():
        if isinstance(value, (list, tuple)):
            values[key] = g.attr_list_int(value)
        elif isinstance(value, int):
            values[key] = g.attr_int(value)
        else:
            values[key] = g.attr_str(value)
    return g.TensorDesc(dtype=dtype, layout=layout, shape=tuple(shape), attrs=values)


def make_network(root: Path, *, corrupt: bool = False, chain: int = 0, elements: int = 4096,
                 seed: int = 7) -> Network:
    """Write the network case under `root` (a precision_data folder)."""
    import ml_dtypes

    from precision_tool.formats.ge import ge_graph as g
    from precision_tool.formats.tf.golden import golden_file_name
    from precision_tool.formats.npu.layouts import to_device
    from precision_tool.formats.npu.dump_types import Format
    from precision_tool.formats.npu.npu_dump import dump_file_name
    from precision_tool.formats.npu.npu_dump_write import TensorSpec, write_dump

    rng = np.random.default_rng(seed)
    dump_dir = root / "npu" / "debug_0" / "dump" / "20240101000000" / "0" / GRAPH_NAME / "1" / "0"
    golden_dir = root / "tf" / "dump"
    graph_dir = root / "npu" / "debug_0" / "graph"
    for folder in (dump_dir, golden_dir, graph_dir):
        folder.mkdir(parents=True, exist_ok=True)
    ops: list = []
    clock = [1704067200000000]
    corrupt_path: list[Path] = []

    def golden(name: str, slot: int, array: np.ndarray) -> None:
        clock[0] += 1
        np.save(golden_dir / golden_file_name(name, slot, clock[0]), array)

    def dump(op_type: str, name: str, inputs, outputs) -> Path:  # type: ignore[no-untyped-def]
        clock[0] += 10
        path = dump_dir / dump_file_name(op_type, name, len(ops), 0, clock[0])
        write_dump(path, op_name=name, inputs=inputs, outputs=outputs, dump_time_us=clock[0])
        return path

    def op(name: str, op_type: str, inputs=(), outputs=(), original=None, input_descs=(), **extra):  # type: ignore[no-untyped-def]
        attrs = {}
        if original is not None:
            attrs["_datadump_original_op_names"] = g.attr_list_str(original)
        attrs.update(extra)
        ops.append(g.Op(name=name, type=op_type, id=len(ops), inputs=list(inputs),
                        input_descs=list(input_descs), output_descs=list(outputs), attrs=attrs))

    def noisy(array: np.ndarray, scale: float = 1e-3) -> np.ndarray:
        return array + rng.standard_normal(array.shape).astype(array.dtype) * np.asarray(scale, array.dtype)

    # graph input (no dump, as on a real NPU)
    x = rng.standard_normal((1, 3, 8, 8)).astype(np.float32)
    golden("input", 0, x)
    op("input", "Data", outputs=[_desc("DT_FLOAT", "NCHW", (1, 3, 8, 8), origin_format="NCHW")])
    # weights: a Const, no dump
    w = rng.standard_normal((4, 3, 3, 3)).astype(np.float32)
    golden("conv1/kernel", 0, w)
    op("conv1/kernel", "Const", outputs=[_desc("DT_FLOAT", "NCHW", (4, 3, 3, 3), origin_format="NCHW")])
    # conv + bias fused: two original names, origin name on the output desc; NC1HWC0 output, FRACTAL_Z weights
    conv = rng.standard_normal((1, 4, 8, 8)).astype(np.float32)
    golden("conv1/Conv2D", 0, conv * 0.5)
    golden("conv1/BiasAdd", 0, conv)
    op("conv1/Conv2D", "Conv2D", ["input:0", "conv1/kernel:0", "relu1/Relu:-1"],
       [_desc("DT_FLOAT16", "NC1HWC0", (1, 1, 8, 8, 16), origin_format="NCHW", _datadump_origin_name="conv1/BiasAdd",
              origin_shape=[1, 4, 8, 8])],
       original=["conv1/Conv2D", "conv1/BiasAdd"], pass_name="ConvBiasFusion")
    dump("Conv2D", "conv1/Conv2D",
         [TensorSpec(x.astype(np.float16), Format.NCHW, (1, 3, 8, 8), address=1024),
          TensorSpec(to_device(w.astype(np.float16), "NCHW", "FRACTAL_Z"), Format.FRACTAL_Z, (4, 3, 3, 3))],
         [TensorSpec(to_device(noisy(conv).astype(np.float16), "NCHW", "NC1HWC0"), Format.NC1HWC0, (1, 4, 8, 8),
                     origin_name="conv1/BiasAdd", address=4096)])
    # relu: one original name, NC1HWC0 in and out; its NPU output drifts badly (the divergent op)
    relu = np.maximum(conv, 0)
    golden("relu1/Relu", 0, relu)
    bad = relu + rng.standard_normal(relu.shape).astype(np.float32)
    op("relu1/Relu", "Relu", ["conv1/Conv2D:0"],
       [_desc("DT_FLOAT16", "NC1HWC0", (1, 1, 8, 8, 16), origin_format="NCHW")], original=["relu1/Relu"])
    dump("Relu", "relu1/Relu",
         [TensorSpec(to_device(noisy(conv).astype(np.float16), "NCHW", "NC1HWC0"), Format.NC1HWC0, (1, 4, 8, 8))],
         [TensorSpec(to_device(bad.astype(np.float16), "NCHW", "NC1HWC0"), Format.NC1HWC0, (1, 4, 8, 8))])
    # TransData (no names at all) then Cast: both compared with relu's golden through the chain
    op("trans1", "TransData", ["relu1/Relu:0"], [_desc("DT_FLOAT16", "NCHW", (1, 4, 8, 8), origin_format="NCHW")])
    dump("TransData", "trans1",
         [TensorSpec(to_device(bad.astype(np.float16), "NCHW", "NC1HWC0"), Format.NC1HWC0, (1, 4, 8, 8))],
         [TensorSpec(bad.astype(np.float16), Format.NCHW, (1, 4, 8, 8))])
    op("cast1", "Cast", ["trans1:0"], [_desc("DT_FLOAT", "NCHW", (1, 4, 8, 8), origin_format="NCHW")])
    dump("Cast", "cast1", [TensorSpec(bad.astype(np.float16), Format.NCHW, (1, 4, 8, 8))],
         [TensorSpec(bad.astype(np.float16).astype(np.float32), Format.NCHW, (1, 4, 8, 8))])
    # reshape: ND output
    flat = relu.reshape(1, 256)
    golden("flatten/Reshape", 0, flat)
    op("flatten/Reshape", "Reshape", ["cast1:0"], [_desc("DT_FLOAT", "ND", (1, 256), origin_format="ND")],
       original=["flatten/Reshape"])
    dump("Reshape", "flatten/Reshape", [TensorSpec(bad.astype(np.float32), Format.NCHW, (1, 4, 8, 8))],
         [TensorSpec(bad.reshape(1, 256), Format.ND, (1, 256))])
    # dense: MatMul+BiasAdd fused, FRACTAL_NZ in and out
    wd = rng.standard_normal((256, 32)).astype(np.float32) * 0.1
    golden("dense/kernel", 0, wd)
    op("dense/kernel", "Const", outputs=[_desc("DT_FLOAT", "ND", (256, 32), origin_format="ND")])
    dense = flat @ wd
    golden("dense/MatMul", 0, dense)
    golden("dense/BiasAdd", 0, dense + 0.1)
    op("dense/MatMul", "MatMulV2", ["flatten/Reshape:0", "dense/kernel:0"],
       [_desc("DT_FLOAT16", "FRACTAL_NZ", (2, 1, 16, 16), origin_format="ND", _datadump_origin_name="dense/BiasAdd")],
       original=["dense/MatMul", "dense/BiasAdd"])
    dump("MatMulV2", "dense/MatMul",
         [TensorSpec(to_device(bad.reshape(1, 256).astype(np.float16), "ND", "FRACTAL_NZ"), Format.FRACTAL_NZ,
                     (1, 256)),
          TensorSpec(to_device(wd.astype(np.float16), "ND", "FRACTAL_NZ"), Format.FRACTAL_NZ, (256, 32))],
         [TensorSpec(to_device(noisy(dense + 0.1).astype(np.float16), "ND", "FRACTAL_NZ"), Format.FRACTAL_NZ,
                     (1, 32))])
    # bf16 softmax
    soft = np.exp(dense) / np.exp(dense).sum()
    golden("out/Softmax", 0, soft.astype(np.float32))
    op("out/Softmax", "Softmax", ["dense/MatMul:0"], [_desc("DT_BF16", "ND", (1, 32), origin_format="ND")],
       original=["out/Softmax"])
    dump("Softmax", "out/Softmax", [TensorSpec((dense + 0.1).astype(ml_dtypes.bfloat16), Format.ND, (1, 32))],
         [TensorSpec(soft.astype(ml_dtypes.bfloat16), Format.ND, (1, 32))])
    # no golden for this op's output
    op("missing_golden/Op", "Add", ["out/Softmax:0"], [_desc("DT_FLOAT", "ND", (1, 32), origin_format="ND")],
       original=["missing_golden/Op"])
    dump("Add", "missing_golden/Op", [TensorSpec(soft.astype(np.float32), Format.ND, (1, 32))],
         [TensorSpec(soft.astype(np.float32) * 2, Format.ND, (1, 32))])
    # in the graph, never dumped
    op("nodump/Op", "Identity", ["out/Softmax:0"], [_desc("DT_FLOAT", "ND", (1, 32))], original=["nodump/Op"])
    # NaN / Inf in the NPU output
    v = rng.standard_normal((4, 16)).astype(np.float32)
    golden("nan/Op", 0, v)
    w_nan = v.copy()
    w_nan[0, 0] = np.nan
    w_nan[1, 1] = np.inf
    op("nan/Op", "Mul", outputs=[_desc("DT_FLOAT", "ND", (4, 16), origin_format="ND")], original=["nan/Op"])
    dump("Mul", "nan/Op", [], [TensorSpec(w_nan, Format.ND, (4, 16))])
    # all zero on both sides
    golden("zero/Op", 0, np.zeros((4, 16), np.float32))
    op("zero/Op", "ZerosLike", outputs=[_desc("DT_FLOAT16", "ND", (4, 16), origin_format="ND")], original=["zero/Op"])
    dump("ZerosLike", "zero/Op", [], [TensorSpec(np.zeros((4, 16), np.float16), Format.ND, (4, 16))])
    # scalar
    golden("scalar/Op", 0, np.array(2.5, np.float32))
    op("scalar/Op", "Mean", outputs=[_desc("DT_FLOAT", "ND", ())], original=["scalar/Op"])
    dump("Mean", "scalar/Op", [], [TensorSpec(np.array([2.0], np.float32), Format.ND, ())])
    # bools
    b = rng.random(64) > 0.5
    golden("bool/Op", 0, b)
    op("bool/Op", "Greater", outputs=[_desc("DT_BOOL", "ND", (64,), origin_format="ND")], original=["bool/Op"])
    dump("Greater", "bool/Op", [], [TensorSpec(~b, Format.ND, (64,))])
    # two NPU ops made from one TF op: one group, origin names on each output desc
    s = rng.standard_normal((2, 32)).astype(np.float32)
    golden("split", 0, s[0])
    golden("split", 1, s[1])
    for i, part in enumerate(("split/A", "split/B")):
        op(part, "SplitD", outputs=[_desc("DT_FLOAT", "ND", (32,), origin_format="ND", _datadump_origin_name="split",
                                          _datadump_origin_output_index=i)], original=["split"])
        dump("SplitD", part, [], [TensorSpec(noisy(s[i]), Format.ND, (32,))])
    # present but empty original names: no golden ('*')
    op("anon/Op", "Sub", outputs=[_desc("DT_FLOAT", "ND", (8,))], original=[])
    dump("Sub", "anon/Op", [], [TensorSpec(np.ones(8, np.float32), Format.ND, (8,))])
    # a chain of ordinary ops (for speed and progress tests): each NPU input is the previous NPU output
    if chain:
        start = rng.standard_normal(elements).astype(np.float32)
        golden("chain/input", 0, start)
        op("chain/input", "Data", outputs=[_desc("DT_FLOAT", "ND", (elements,), origin_format="ND")])
        previous, previous_npu = "chain/input", start.astype(np.float16)
        for k in range(chain):
            name = f"chain/op_{k}"
            y = rng.standard_normal(elements).astype(np.float32)
            golden(name, 0, y)
            op(name, "Add", [f"{previous}:0"], [_desc("DT_FLOAT16", "ND", (elements,), origin_format="ND")],
               original=[name])
            out = noisy(y, 1e-2).astype(np.float16)
            dump("Add", name, [TensorSpec(previous_npu, Format.ND, (elements,))], [TensorSpec(out, Format.ND, (elements,))])
            previous, previous_npu = name, out
    if corrupt:
        op("corrupt/Op", "Abs", outputs=[_desc("DT_FLOAT", "ND", (16,), origin_format="ND")], original=["corrupt/Op"])
        golden("corrupt/Op", 0, np.ones(16, np.float32))
        path = dump("Abs", "corrupt/Op", [], [TensorSpec(np.ones(16, np.float32), Format.ND, (16,))])
        data = path.read_bytes()
        path.write_bytes(data[:-20])
        corrupt_path.append(path)
    model = g.Model(path=graph_dir / "x", name="model", graphs=[g.Graph(name=GRAPH_NAME, ops=ops)])
    graph_txt = graph_dir / "ge_proto_00000001_graph_1_Build.txt"
    g.write_graph_text(model, graph_txt)
    graph_json = root / "graph_1_Build.json"
    g.write_graph_json(model, graph_json)
    return Network(root, dump_dir, golden_dir, graph_txt, graph_json, corrupt_path[0] if corrupt_path else None)


@pytest.fixture
def network(tmp_path: Path) -> Network:
    return make_network(tmp_path / "precision_data")


def reference_python(tool: Path) -> tuple[str, str]:
    """(python, msaccucmp source folder) named in the anchor wrapper script."""
    import re

    text = Path(tool).read_text()
    found = re.findall(r'"([^"]+)"', text.splitlines()[-1])
    python = next(f for f in found if f.endswith("python") or "/bin/python" in f)
    script = next(f for f in found if f.endswith("msaccucmp.py"))
    return python, os.path.dirname(script)


def run_reference(tool: Path, npu_dir: Path, golden_dir: Path, graph_json: Path, out: Path) -> Path:
    """Run msaccucmp compare; return its result CSV (it exits 2 when a graph op has no dump)."""
    out.mkdir(parents=True, exist_ok=True)
    proc = subprocess.run([str(tool), "compare", "-m", str(npu_dir), "-g", str(golden_dir), "-f", str(graph_json),
                           "-out", str(out)], capture_output=True, text=True, timeout=600)
    found = sorted(out.glob("result_*.csv"))
    if not found:
        raise AssertionError(f"msaccucmp wrote no CSV (exit {proc.returncode}): {proc.stdout[-3000:]}")
    return found[-1]


@pytest.fixture
def make_net():  # type: ignore[no-untyped-def]
    """The network writer, for tests that need options (chain length, a corrupt dump ...)."""
    return make_network


@pytest.fixture
def reference_helpers():  # type: ignore[no-untyped-def]
    """(run_reference, reference_python)."""
    return run_reference, reference_python


# --- small hand-built cases (one rule each), run through ours and the reference ----------------------
class Case:
    """A graph, NPU dumps and golden tensors written by the project's writers under `root`."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.data = root / "precision_data"
        self.dump_dir = self.data / "npu" / "debug_0" / "dump" / "20240101000000" / "0" / GRAPH_NAME / "1" / "0"
        self.golden_dir = self.data / "tf" / "dump"
        self.graph_dir = self.data / "npu" / "debug_0" / "graph"
        for folder in (self.dump_dir, self.golden_dir, self.graph_dir):
            folder.mkdir(parents=True, exist_ok=True)
        self.ops: list = []
        self.clock = 1704067200000000
        self.task = 0
        self.graph_txt = self.graph_dir / "ge_proto_00001_Build.txt"
        self.graph_json = root / "graph.json"

    def golden(self, name: str, slot: int, array: np.ndarray) -> None:
        from precision_tool.formats.tf.golden import golden_file_name

        self.clock += 1
        np.save(self.golden_dir / golden_file_name(name, slot, self.clock), array)

    def dump(self, op_type: str, name: str, inputs, outputs, folder: Path | None = None) -> Path:  # type: ignore[no-untyped-def]
        from precision_tool.formats.npu.npu_dump import dump_file_name
        from precision_tool.formats.npu.npu_dump_write import write_dump

        self.clock += 10
        self.task += 1
        path = (folder or self.dump_dir) / dump_file_name(op_type, name, self.task, 0, self.clock)
        write_dump(path, op_name=name, inputs=inputs, outputs=outputs, dump_time_us=self.clock)
        return path

    def op(self, name: str, op_type: str, inputs=(), outputs=(), original=None, **extra) -> None:  # type: ignore[no-untyped-def]
        from precision_tool.formats.ge import ge_graph as g

        attrs = {}
        if original is not None:
            attrs["_datadump_original_op_names"] = g.attr_list_str(original)
        for key, value in extra.items():
            attrs[key] = g.attr_str(str(value))
        self.ops.append(g.Op(name=name, type=op_type, id=len(self.ops), inputs=list(inputs), input_descs=[],
                             output_descs=list(outputs), attrs=attrs))

    def write_graph(self) -> None:
        from precision_tool.formats.ge import ge_graph as g

        model = g.Model(path=self.graph_txt, name="m", graphs=[g.Graph(name=GRAPH_NAME, ops=self.ops)])
        g.write_graph_text(model, self.graph_txt)
        g.write_graph_json(model, self.graph_json)

    def run_ours(self) -> list[list[str]]:
        from precision_tool.analysis.compare import network_compare as nc

        self.write_graph()
        out = self.root / "ours"
        out.mkdir(exist_ok=True)
        spec = nc.RunSpec("case", str(self.dump_dir), "result.csv", golden_dir=str(self.golden_dir),
                          graph_path=str(self.graph_txt))
        nc.run_specs([spec], out, workers=1, threshold=0.98)
        return read_rows(out / "result.csv")

    def run_reference(self, tool: Path) -> list[list[str]]:
        self.write_graph()
        return read_rows(run_reference(tool, self.dump_dir, self.golden_dir, self.graph_json, self.root / "ref"))


def read_rows(path: Path) -> list[list[str]]:
    import csv

    with open(path, newline="") as handle:
        return list(csv.reader(handle))


def nd_desc(shape, dtype: str = "DT_FLOAT", **attrs):  # type: ignore[no-untyped-def]
    return _desc(dtype, "ND", shape, origin_format="ND", **attrs)


@pytest.fixture
def make_case(tmp_path: Path):  # type: ignore[no-untyped-def]
    """Case(root) factory plus the helpers tests need: (Case, nd_desc, desc, read_rows)."""
    counter = [0]

    def make() -> Case:
        counter[0] += 1
        return Case(tmp_path / f"case{counter[0]}")

    return make, nd_desc, _desc, read_rows
