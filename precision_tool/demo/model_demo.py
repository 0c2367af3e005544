"""`demo --model NAME`: a real architecture's training step, golden on CPU and on a simulated NPU with one
planted kernel fault.

    python -m precision_tool.demo.model_demo WORKSPACE --model resnet50|bert|widedeep [--size full|reduced]

In this child process (TensorFlow is imported here, after precision_tool.tf_config): the model is built
(`models/<name>.py`), its step runs once in a PrecisionTfSession under tf_config's tfdbg dump (the golden
tensors, and the captured step in tf/checkpoints), then that captured step runs on the simulated NPU
exactly as `train -d sim` runs it (`simulate/sim_step.py`) with the model's planted fault, into
npu/debug_0 (dumps) and overflow/ (the records of ops whose float16 results overflow). Nothing else is
planted: every other difference is what float16 does to the network.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

MODELS = ("resnet50", "bert", "widedeep")
DEFAULT_DIRS = {name: f"./precision_data_demo_{name}" for name in MODELS}


@dataclass(frozen=True)
class PlantedFault:
    """Where a model's kernel bug is and what it does (in words, and as a function of the op's inputs)."""

    op_name: str
    text: str
    inputs: Callable[[list[Any]], list[Any]]


def _skip_last_channel_block(ins: list[Any]) -> list[Any]:
    x, weights = ins[0], ins[1].copy()
    weights[:, :, -16:, :] = 0  # HWCN: the last C0 block (16 input channels) never read
    return [x, weights, *ins[2:]]


def _transposed_block(ins: list[Any]) -> list[Any]:
    import numpy as np

    return [np.ascontiguousarray(np.swapaxes(ins[0], -1, -2)), *ins[1:]]  # [.., query, key] read as [.., key, query]


def _wrap_at_8192(ins: list[Any]) -> list[Any]:
    import numpy as np

    params, indices, *rest = ins
    return [params, np.bitwise_and(indices, 8191).astype(indices.dtype), *rest]


def planted_fault(model: str, size: str) -> PlantedFault:
    if model == "resnet50":
        # the convolution is UB-fused with its batch norm's reduce (TbeConvBnreduceFusionPass): one kernel
        return PlantedFault("stage3/block1/conv2/Conv2Dstage3/block1/conv2/FusedBatchNormV3_Reduce",
                            "the NPU Conv2D kernel of stage3/block1/conv2/Conv2D (3×3, "
                            "stride 2) skips the last C0 block of its input channels (16 channels' weights never "
                            "read)", _skip_last_channel_block)
    if model == "bert":
        layer = 6 if size == "full" else 1
        name = f"bert/encoder/layer_{layer}/attention/self/Softmax"
        return PlantedFault(name, f"the NPU SoftmaxV2 kernel of {name} reads each head's block of scores "
                            "transposed (query and key axes swapped)", _transposed_block)
    return PlantedFault("deep/lookup", "the NPU GatherV2 kernel of the deep embedding lookup deep/lookup keeps only "
                        "the low 13 bits of a row index (ids from 8192 on read row id-8192·k)", _wrap_at_8192)


def _module(model: str) -> Any:
    import importlib

    return importlib.import_module(f"precision_tool.demo.models.{model}")


def golden_step(root: Path, model: str, size: str) -> dict[str, Any]:
    """Build the model and run its step once: captured (PrecisionTfSession) and dumped (tfdbg)."""
    from precision_tool import tf_config
    from precision_tool.capture.session import PrecisionTfSession
    from precision_tool.workspace import Workspace

    started = time.perf_counter()
    built = _module(model).build(size)
    config = tf_config.golden_session_config()
    config.inter_op_parallelism_threads = 1  # one op at a time: the golden run is reproducible
    session = PrecisionTfSession(graph=built.graph, config=config, checkpoint_dir=Workspace(root).checkpoint_dir)
    session.run(built.init_op)
    built_s = time.perf_counter() - started
    feeds = {built.graph.get_tensor_by_name(name): value for name, value in built.feeds.items()}
    dumping = tf_config.sess_dump(sess=session)
    _, loss, _ = dumping.run([built.train_op, built.loss, built.scaled_loss], feed_dict=feeds)
    session.close()
    return {"model": model, "size": size, "description": built.description, "tf_ops": len(built.graph.get_operations()),
            "loss": float(loss), "loss_scale": built.loss_scale, "build_seconds": round(built_s, 2),
            "golden_seconds": round(time.perf_counter() - started - built_s, 2)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m precision_tool.demo.model_demo")
    parser.add_argument("workspace")
    parser.add_argument("--model", choices=list(MODELS), required=True)
    parser.add_argument("--size", choices=["full", "reduced"], default="full")
    args = parser.parse_args(argv)
    root = Path(args.workspace).resolve()
    from precision_tool.demo.network import prepare_environment

    prepare_environment(root)  # tf_config first: oneDNN off, grappler off, seeds; PRECISION_DATA = root
    from precision_tool.simulate.kernels import Fault
    from precision_tool.simulate.sim_step import run_simulation, write_simulation
    from precision_tool.workspace import Workspace

    report = golden_step(root, args.model, args.size)
    planted = planted_fault(args.model, args.size)
    started = time.perf_counter()
    workspace = Workspace(root)
    sim = run_simulation(workspace, faults=(Fault(planted.op_name, planted.text, inputs=planted.inputs),))
    written = write_simulation(workspace, sim, ("dump", "overflow"), planted=(planted.text,))
    report.update(npu_ops=written["ops"], tasks=written["tasks"], float16_ops=written["float16_ops"],
                  dump_files=written["dump_files"], overflows=written["overflows"], planted_op=planted.op_name,
                  planted=planted.text, sim_seconds=round(time.perf_counter() - started, 2))
    print(json.dumps(report))
    return 0


if __name__ == "__main__":
    sys.exit(main())
