"""A realistic large PrecisionTool workspace (default 20,000 ops) for `vc` and the HTML report to chew on.

Why: the demo network has ~100 ops and bench_compare a flat chain of Adds with loose files; real Build
graphs hold 20,000-100,000 ops of many types, fused ops, Casts GE inserted, NC1HWC0 activations and a
handful of bad ops. This writes, with the project's own writers, what an NPU run and `tf_dump` leave:

- npu/debug_0/graph/ge_proto_00000001_graph_1_Build.txt (GE text form, as GE dumps it)
- npu/debug_0/dump/<time>/0/<graph>/1/0/<Type>.<op>.<task>.0.<µs>: each op's inputs and output
- tf/dump/<tf op>.0.<µs>.npy: float32 golden tensors

The network repeats residual blocks, two-branch blocks that join, and dense blocks (MatMulV2, Casts to and
from float32 around a SoftmaxV2, a Mul joining the skip); conv blocks are NC1HWC0 (NHWC origin, C padded).
NPU output = golden + 1% noise in float16 (cosine ~0.9999). Planted: one first divergent op at ~30% whose
error the next few ops inherit, ~1% scattered abnormal ops (noise as large as the signal) and a handful
of ops with inf/nan outputs, all after the divergent one (an earlier bad op would be the first divergent).
Run: `python3 benchmarks/big_workspace.py --ops 20000 --out /tmp/bigws`, then `precision-tool --data
/tmp/bigws vc`.
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

GRAPH_NAME = "ge_default_20240613143502_1"
GRAPH_FILE = "ge_proto_00000001_graph_1_Build.txt"
STAMP = "20240613143502"
T0_US = 1_718_260_502_000_000  # 16 digits, as golden names need
CONV, UB, MM = "TbeConvBiasaddFusionPass", "AutomaticUbFusion", "MatMulV2BiasAddFusionPass"

# One block: (GE type, TF ops it stands for (None: inserted by GE), pass_name, pass_name_ub, output dtype,
# NC1HWC0?, inputs as block-local indexes; -1 is the block's input).
RESIDUAL = [
    ("Conv2D", ("Conv2D", "BiasAdd"), CONV, None, "float16", True, [-1]),
    ("BNTrainingUpdate", ("FusedBatchNormV3",), None, None, "float16", True, [0]),
    ("Relu", ("Relu",), None, None, "float16", True, [1]),
    ("Conv2D", ("Conv2D_1", "BiasAdd_1"), CONV, None, "float16", True, [2]),
    ("BNTrainingUpdate", ("FusedBatchNormV3_1",), None, None, "float16", True, [3]),
    ("Add", ("add",), None, None, "float16", True, [4, -1]),
    ("Relu", ("Relu_1",), None, None, "float16", True, [5]),
]
BRANCHES = [
    ("Conv2D", ("branch_a/Conv2D",), None, None, "float16", True, [-1]),
    ("Conv2D", ("branch_b/Conv2D", "branch_b/BiasAdd", "branch_b/Relu"), CONV, UB, "float16", True, [-1]),
    ("AddV2", ("join",), None, None, "float16", True, [0, 1]),
]
DENSE = [
    ("MatMulV2", ("dense/MatMul", "dense/BiasAdd"), MM, None, "float16", False, [-1]),
    ("Cast", None, None, None, "float32", False, [0]),  # mixed precision: softmax kept in float32
    ("SoftmaxV2", ("dense/Softmax",), None, None, "float32", False, [1]),
    ("Cast", None, None, None, "float16", False, [2]),
    ("Mul", ("dense/mul",), None, None, "float16", False, [3, -1]),
]
PATTERN = [RESIDUAL, BRANCHES, RESIDUAL, DENSE]
PASS_THROUGH = ("Cast",)  # compared against their producer's golden (matching.PASS_THROUGH_TYPES)
_JOBS: list[tuple] = []  # files to write: (path, golden array) or (path, op name, inputs, output, µs)


def _write_jobs(part: tuple[int, int]) -> None:
    """Write every `parts`-th file of _JOBS, from `start`."""
    import numpy as np

    from precision_tool.formats.npu.npu_dump_write import write_dump

    start, parts = part
    for job in _JOBS[start::parts]:
        if len(job) == 2:
            np.save(job[0], job[1])
        else:
            write_dump(job[0], op_name=job[1], inputs=job[2], outputs=[job[3]], dump_time_us=job[4])


def _layout(ops: int) -> list[tuple]:
    """The ops in execution order: (name, type, tf names, pass, ub pass, dtype, 4-D?, input op indexes)."""
    out: list[tuple] = [("input", "Data", ("input",), None, None, "float16", False, [])]
    block, casts = 0, 0
    while len(out) <= ops:
        start, prefix = len(out) - 1, f"net/stage{block // 200}/block{block}"
        for k, (kind, tf, pname, ub, dtype, four_d, ins) in enumerate(PATTERN[block % len(PATTERN)]):
            if len(out) > ops:
                break
            tf_names = tuple(f"{prefix}/{n}" for n in tf) if tf else None
            name = tf_names[0] if tf_names else f"trans_Cast_{casts}"
            casts += tf_names is None
            sources = [start if i < 0 else start + 1 + i for i in ins]
            out.append((name, kind, tf_names, pname, ub, dtype, four_d, sources))
        block += 1
    return out


def _plant(layout: list[tuple], rng) -> tuple[int, list[int], list[int]]:
    """Where the errors go: the divergent op, every op planted abnormal (noise scale), the inf/nan ops."""
    n = len(layout) - 1
    # a computed op (not a Cast) that feeds only computed ops, so exactly the planted ops fail
    ok = [k for k in range(1, n + 1) if layout[k][1] not in PASS_THROUGH
          and all(layout[j][1] not in PASS_THROUGH for j in range(k + 1, min(k + 3, n + 1)) if k in layout[j][7])]
    first = next((k for k in ok if k >= 0.3 * n), ok[-1])
    later = [k for k in ok if k > first + 8]
    count = min(len(later), max(1, n // 100) + 5)
    picked = sorted(int(k) for k in rng.choice(later, size=count, replace=False)) if later else []
    nan_ops = picked[:: max(1, len(picked) // 5)][:5]
    return first, [k for k in picked if k not in nan_ops], nan_ops


def make_workspace(root: Path, ops: int = 20_000, elements: int = 64, seed: int = 0) -> dict:
    """Build `root` as a PrecisionTool workspace (precision_data layout) holding one NPU run of an `ops`-op
    network (tensors of `elements` values) and its golden tensors; returns what was planted:
    {"ops": N, "dumps": files, "golden": files, "abnormal": [ops whose output cosine fails: the first
    divergent one, its inheritors, the scattered ones], "first_divergent": name, "nan_ops": [ops whose output
    holds inf/nan], "graph": path, "dump_dir": path, "seconds": s}. `vcs` reports abnormal + nan_ops."""
    import numpy as np

    from precision_tool.formats.ge import ge_graph as ge
    from precision_tool.formats.npu.dump_types import DataType, Format
    from precision_tool.formats.tf.golden import golden_file_name
    from precision_tool.formats.npu.layouts import to_device
    from precision_tool.formats.npu.npu_dump import dump_file_name
    from precision_tool.formats.npu.npu_dump_write import TensorSpec
    from precision_tool.workspace import Workspace

    started = time.perf_counter()
    ws = Workspace(root)
    if any((ws.root / part).exists() for part in ("npu", "tf", "temp")):
        raise FileExistsError(f"{root} already holds a workspace; give an empty folder")
    dump_dir, golden_dir = ws.dump_root(0) / STAMP / "0" / GRAPH_NAME / "1" / "0", ws.golden_dir
    for folder in (dump_dir, golden_dir, ws.graph_dir(0)):
        ws.ensure_dir(folder)
    rng = np.random.default_rng(seed)
    layout = _layout(ops)
    n = len(layout) - 1
    # 4-D activations: NHWC (1, 2, W, 8): C=8 pads to C0=16 in NC1HWC0, as small channel counts do
    nhwc = (1, 2, elements // 16, 8) if elements % 16 == 0 else None
    first, planted, nan_ops = _plant(layout, rng)
    scale = np.full(n + 1, 0.01, np.float32)  # NPU error relative to the signal: float16-sized
    scale[planted] = 1.0
    inherited = range(first, min(first + 4, n + 1))
    scale[inherited] = [1.0, 0.8, 0.6, 0.5][:len(inherited)]  # the divergent op's error, inherited and fading
    golden = rng.standard_normal((n + 1, elements), dtype=np.float32)
    npu = golden + scale[:, None] * rng.standard_normal((n + 1, elements), dtype=np.float32)
    relu = np.array([row[1] == "Relu" for row in layout])
    golden[relu], npu[relu] = np.maximum(golden[relu], 0), np.maximum(npu[relu], 0)
    npu[0] = golden[0]  # the fed input is the same on both sides
    with np.errstate(invalid="ignore"):
        for j, k in enumerate(nan_ops):  # overflow: inf, or the nan an inf - inf gives
            npu[k, j:: 7] = np.inf if j % 2 else np.nan

    # one layout conversion for every 4-D tensor (all float16): per op it costs as much as writing the dump
    four = [k for k, row in enumerate(layout) if row[6] and nhwc is not None and row[1] not in PASS_THROUGH]
    slot = {k: j for j, k in enumerate(four)}
    if four:
        device4d = to_device(npu[four].astype(np.float16).reshape(len(four), *nhwc[1:]), "NHWC", "NC1HWC0")
    values, specs, descs, graph_ops = [], [], [], []
    for k, (name, kind, tf_names, pname, ub, dtype, four_d, ins) in enumerate(layout):
        four_d = four_d and nhwc is not None
        shape = nhwc if four_d else (elements,)
        # a Cast converts its producer's NPU tensor; other ops are golden + their noise
        value = values[ins[0]].astype(dtype) if kind in PASS_THROUGH else npu[k].astype(dtype).reshape(shape)
        values.append(value)
        device = device4d[slot[k]:slot[k] + 1] if four_d else value
        fmt = "NC1HWC0" if four_d else "ND"
        origin = tf_names[-1] if tf_names else None  # a fused op's output is its last TF op's
        code = DataType.FLOAT16 if dtype == "float16" else DataType.FLOAT  # spares the writer a look-up
        specs.append((TensorSpec(device, int(Format[fmt]), shape, code),
                      TensorSpec(device, int(Format[fmt]), shape, code, origin_name=origin,
                                 origin_output_index=0 if origin else None)))
        base = {"origin_format": ge.attr_str("NHWC" if four_d else "ND"), "origin_shape": ge.attr_list_int(shape)}
        plain = ge.TensorDesc(dtype="DT_FLOAT16" if dtype == "float16" else "DT_FLOAT", layout=fmt,
                              shape=tuple(device.shape), attrs=base)
        attrs = dict(base)
        if origin:
            attrs.update(_datadump_origin_name=ge.attr_str(origin), _datadump_origin_output_index=ge.attr_int(0),
                         _datadump_origin_format=base["origin_format"])
        descs.append(plain)
        op_attrs = {}
        if tf_names:
            op_attrs["_datadump_original_op_names"] = ge.attr_list_str(tf_names)
        if pname:
            op_attrs["pass_name"] = ge.attr_str(pname)
        if ub:
            op_attrs["pass_name_ub"] = ge.attr_str(ub)
        if kind != "Data":
            op_attrs[f"{name}_kernelname"] = ge.attr_str(f"te_{kind.lower()}_{k:06x}")
        op_attrs["_ge_attr_op_kernel_lib_name"] = ge.attr_str("AIcoreEngine" if kind != "Data" else
                                                              "DNN_VM_GE_LOCAL_OP_STORE")
        graph_ops.append(ge.Op(name=name, type=kind, id=k, inputs=[f"{layout[i][0]}:0" for i in ins],
                               input_descs=[descs[i] for i in ins],
                               output_descs=[ge.TensorDesc(plain.dtype, fmt, plain.shape, attrs)], attrs=op_attrs))
        for position, i in enumerate(ins):
            graph_ops[i].dst_names.append(name)
            graph_ops[i].dst_indexes.append(position)
        if tf_names:  # golden: float32, the TF (NHWC) shape
            _JOBS.append((f"{golden_dir}/{golden_file_name(origin, 0, T0_US + k)}", golden[k].reshape(shape)))
        if kind != "Data":  # Data has no device task, so no dump
            stamp = T0_US + 37 * k
            _JOBS.append((f"{dump_dir}/{dump_file_name(kind, name, k - 1, 0, stamp)}", name,
                          [specs[i][0] for i in ins], specs[k][1], stamp))
    graph_path = ws.graph_dir(0) / GRAPH_FILE
    model = ge.Model(path=graph_path, name=GRAPH_NAME, graphs=[ge.Graph(name=GRAPH_NAME, ops=graph_ops)])
    # the files are most of the time: forked writers write them (the jobs are inherited, not pickled)
    # while this process writes the graph
    workers = min(2, os.cpu_count() or 1) if "fork" in multiprocessing.get_all_start_methods() else 0
    if workers:
        with multiprocessing.get_context("fork").Pool(workers) as pool:
            pending = pool.map_async(_write_jobs, [(w, workers) for w in range(workers)])
            ge.write_graph_text(model, graph_path)
            pending.get()
    else:
        ge.write_graph_text(model, graph_path)
        _write_jobs((0, 1))
    _JOBS.clear()
    bad, nan = set(planted) | set(inherited), set(nan_ops)
    for k, row in enumerate(layout):  # a Cast of a bad tensor is as bad (and reported)
        if row[1] in PASS_THROUGH and row[7][0] in bad | nan:
            (bad if row[7][0] in bad else nan).add(k)
    abnormal = sorted(bad)
    return {"ops": n, "dumps": n, "golden": sum(1 for row in layout if row[2]),
            "abnormal": [layout[k][0] for k in abnormal], "first_divergent": layout[first][0],
            "nan_ops": [layout[k][0] for k in sorted(nan)], "graph": graph_path, "dump_dir": dump_dir,
            "seconds": time.perf_counter() - started}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--ops", type=int, default=20_000, help="ops with a dump (default 20000)")
    parser.add_argument("--elements", type=int, default=64, help="values per tensor (default 64)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, help="an empty or new folder (default: a fresh temp folder)")
    args = parser.parse_args()
    root = args.out or Path(tempfile.mkdtemp(prefix="bigws_"))
    facts = make_workspace(root, args.ops, args.elements, args.seed)
    print(f"{root}: {facts['ops']} ops, {facts['dumps']} dump files, {facts['golden']} golden tensors, "
          f"graph {facts['graph'].name}, built in {facts['seconds']:.1f} s")
    print(f"planted: first divergent op {facts['first_divergent']}; {len(facts['abnormal'])} abnormal ops "
          f"(its inheritors included); {len(facts['nan_ops'])} with inf/nan outputs {facts['nan_ops']}")
    print(f"compare: python3 -m precision_tool --data {root} vc")
    return 0


if __name__ == "__main__":
    sys.exit(main())
