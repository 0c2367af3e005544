"""A data-parallel multi-rank workspace (one dump folder per device) for rank-aware `vc`/`ac` to chew on.

Each rank runs the same graph on its own batch: forward layers (Add), one gradient per layer (Mul), an
`HcomAllReduce` per gradient (the mean over ranks), and the weight update (ApplyGradientDescent) that
reads a variable and the all-reduced gradient, so updates are the same on every rank. Written with the
project's own writers, as an NPU job and `tf_dump` leave it:

- npu/debug_0/graph/ge_proto_00000001_graph_1_Build.txt
- npu/debug_0/dump/<time>/<rank>/<graph>/1/0/<Type>.<op>.<task>.0.<µs>
- tf/dump/rank_<r>/<op>.0.<µs>.npy: float32 golden tensors of each rank (its own batch; the all-reduce and
  the update are those of the whole job, as a data-parallel golden run computes them)

NPU = golden + float16-sized noise. Planted: `fault_rank`'s gradient of layer `fault_layer` is corrupted
(its cosine drops below 0.9), so every rank's all-reduce of that layer and its update diverge; optionally
`bad_collective_rank` gets a different all-reduce output than the others (a broken collective), which only
`vc --across-ranks` sees. Run: `python3 benchmarks/rank_workspace.py --ranks 8 --out /tmp/ranks`.
"""

from __future__ import annotations

import argparse
import sys
import time
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

GRAPH_NAME = "ge_default_20240613143502_1"
GRAPH_FILE = "ge_proto_00000001_graph_1_Build.txt"
STAMP = "20240613143502"
T0_US = 1_718_260_502_000_000
LEARNING_RATE = 0.1
REFERENCE_GRAPH = "graph_Build.json"


@dataclass(frozen=True)
class Planted:
    ranks: int
    ops: int
    fault_rank: int
    fault_op: str
    """The corrupted gradient (the all-reduce's input on `fault_rank`)."""
    allreduce_op: str
    """The all-reduce that carries the fault to every rank."""
    bad_collective_rank: int | None
    bad_collective_op: str | None
    seconds: float


def layer_count(ops: int) -> int:
    """Layers for about `ops` ops per rank (Data + 4 ops a layer + one variable a layer)."""
    return max(2, (ops - 1) // 5)


def make_rank_workspace(root: Path, *, ranks: int = 4, ops: int = 60, elements: int = 1024, seed: int = 0,
                        fault_rank: int | None = None, fault_layer: int | None = None,
                        bad_collective_rank: int | None = None, shared_golden: bool = False) -> Planted:
    """Write `root` (a precision_data folder) with `ranks` device folders of an `ops`-op data-parallel step.
    `shared_golden`: one golden folder (tf/dump) for every rank, all ranks fed the same batch."""
    import numpy as np

    from precision_tool.formats.ge import ge_graph as ge
    from precision_tool.formats.npu.dump_types import DataType, Format
    from precision_tool.formats.tf.golden import golden_file_name
    from precision_tool.formats.npu.npu_dump import dump_file_name
    from precision_tool.formats.npu.npu_dump_write import TensorSpec, write_dump
    from precision_tool.workspace import Workspace

    started = time.perf_counter()
    ws = Workspace(root)
    layers = layer_count(ops)
    fault_rank = (ranks // 2 - 1 if ranks >= 4 else ranks - 1) if fault_rank is None else fault_rank
    fault_layer = layers // 2 if fault_layer is None else fault_layer
    rng = np.random.default_rng(seed)
    shape = (elements,)
    desc16 = ge.TensorDesc(dtype="DT_FLOAT16", layout="ND", shape=shape, attrs={"origin_format": ge.attr_str("ND")})

    # the graph: input, then per layer fwd (Add), grad (Mul), allreduce, update; variables first
    graph_ops: list = [ge.Op(name="input", type="Data", id=0, output_descs=[desc16])]
    plan: list[tuple[str, str, list[str]]] = []  # (name, type, input names) in execution order
    previous = "input"
    for k in range(layers):
        plan.append((f"var/w{k}", "Variable", []))
    for k in range(layers):
        plan.append((f"fwd/layer{k}", "Add", [previous, f"var/w{k}"]))
        previous = f"fwd/layer{k}"
    for k in reversed(range(layers)):
        plan.append((f"grad/layer{k}", "Mul", [f"fwd/layer{k}", previous]))
        plan.append((f"allreduce/layer{k}", "HcomAllReduce", [f"grad/layer{k}"]))
        plan.append((f"update/w{k}", "ApplyGradientDescent", [f"var/w{k}", f"allreduce/layer{k}"]))
    for i, (name, kind, inputs) in enumerate(plan, start=1):
        attrs = {"_datadump_original_op_names": ge.attr_list_str([name])}
        if kind == "HcomAllReduce":
            attrs.update(reduction=ge.attr_str("sum"), group=ge.attr_str("hccl_world_group"),
                         fusion=ge.attr_int(1))
        graph_ops.append(ge.Op(name=name, type=kind, id=i, inputs=[f"{n}:0" for n in inputs],
                               input_descs=[desc16 for _ in inputs], output_descs=[desc16], attrs=attrs))

    # values: golden per rank (float32), NPU = golden + noise in float16
    weights = {k: rng.standard_normal(elements).astype(np.float32) for k in range(layers)}
    batches = [rng.standard_normal(elements).astype(np.float32) for _ in range(1 if shared_golden else ranks)]
    golden = [dict() for _ in range(ranks)]
    npu = [dict() for _ in range(ranks)]
    for r in range(ranks):
        g, n = golden[r], npu[r]
        g["input"] = batches[0 if shared_golden else r]
        n["input"] = g["input"].astype(np.float16)
        for k in range(layers):
            g[f"var/w{k}"] = weights[k]
            n[f"var/w{k}"] = weights[k].astype(np.float16)
    noise = lambda x: (x + 1e-3 * np.abs(x).mean() * rng.standard_normal(x.size)).astype(np.float16)  # noqa: E731
    for name, kind, inputs in plan:
        if kind in ("Variable", "HcomAllReduce", "ApplyGradientDescent"):
            continue
        for r in range(ranks):
            a, b = (golden[r][i] for i in inputs)
            value = (a + b if kind == "Add" else a * b * 0.5).astype(np.float32)
            golden[r][name] = value
            npu[r][name] = noise(value)
    fault_op = f"grad/layer{fault_layer}"
    bad = npu[fault_rank][fault_op].astype(np.float32)
    bad[: elements // 2] *= -3.0  # the corrupted gradient: half its values sign-flipped and tripled
    npu[fault_rank][fault_op] = bad.astype(np.float16)
    bad_op = None
    for k in range(layers):
        reduce_name, update_name = f"allreduce/layer{k}", f"update/w{k}"
        mean_golden = np.mean([golden[r][f"grad/layer{k}"] for r in range(ranks)], axis=0).astype(np.float32)
        mean_npu = np.mean([npu[r][f"grad/layer{k}"].astype(np.float32) for r in range(ranks)], axis=0)
        for r in range(ranks):
            golden[r][reduce_name] = mean_golden
            npu[r][reduce_name] = mean_npu.astype(np.float16)
            golden[r][update_name] = (weights[k] - LEARNING_RATE * mean_golden).astype(np.float32)
            npu[r][update_name] = (weights[k] - LEARNING_RATE * mean_npu).astype(np.float16)
    if bad_collective_rank is not None:
        k = 0 if fault_layer != 0 else 1
        bad_op = f"allreduce/layer{k}"
        broken = npu[bad_collective_rank][bad_op].astype(np.float32)
        broken[::97] += 0.5  # a few elements wrong: the cosine stays high, the ranks no longer agree
        npu[bad_collective_rank][bad_op] = broken.astype(np.float16)
        npu[bad_collective_rank][f"update/w{k}"] = (weights[k] - LEARNING_RATE * broken).astype(np.float16)

    graph_dir = ws.graph_dir(0)
    ws.ensure_dir(graph_dir)
    model = ge.Model(path=graph_dir / GRAPH_FILE, name="m", graphs=[ge.Graph(name=GRAPH_NAME, ops=graph_ops)])
    ge.write_graph_text(model, graph_dir / GRAPH_FILE)
    ge.write_graph_json(model, root / REFERENCE_GRAPH)  # what msaccucmp -f reads (outside the graph folder)
    code = int(DataType.FLOAT16)
    for r in range(ranks):
        folder = ws.dump_root(0) / STAMP / str(r) / GRAPH_NAME / "1" / "0"
        golden_dir = ws.golden_dir if shared_golden else ws.golden_dir / f"rank_{r}"
        ws.ensure_dir(folder)
        ws.ensure_dir(golden_dir)
        for task, (name, kind, inputs) in enumerate(plan):
            stamp = T0_US + task + 1
            if r == 0 or not shared_golden:
                np.save(golden_dir / golden_file_name(name, 0, stamp), golden[r][name])
            if kind == "Variable":
                continue
            spec = lambda a: TensorSpec(a, int(Format.ND), shape, code)  # noqa: E731
            write_dump(folder / dump_file_name(kind, name, task, 0, stamp), op_name=name,
                       inputs=[spec(npu[r][i]) for i in inputs], outputs=[spec(npu[r][name])], dump_time_us=stamp)
        if r == 0 or not shared_golden:
            np.save(golden_dir / golden_file_name("input", 0, T0_US), golden[r]["input"])
    return Planted(ranks, len(graph_ops), fault_rank, fault_op, f"allreduce/layer{fault_layer}",
                   bad_collective_rank, bad_op, time.perf_counter() - started)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--ranks", type=int, default=8)
    parser.add_argument("--ops", type=int, default=300)
    parser.add_argument("--elements", type=int, default=16384)
    parser.add_argument("--bad-collective", type=int, default=None, metavar="RANK")
    parser.add_argument("--out", required=True)
    args = parser.parse_args()
    planted = make_rank_workspace(Path(args.out), ranks=args.ranks, ops=args.ops, elements=args.elements,
                                  bad_collective_rank=args.bad_collective)
    print(planted)
    return 0


if __name__ == "__main__":
    sys.exit(main())
