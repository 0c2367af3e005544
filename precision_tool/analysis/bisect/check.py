"""The check of one bisect round: its run compared with the golden tensors (the comparison engine, one
CSV in the round's folder), judged as `ac` judges (the default), by chosen outputs' cosine, or by the
recorded loss against the golden loss.

- default (`ac`): passes when the comparison names no first divergent op and no output holds NaN/Inf.
  A first divergent op whose type the workspace's replay verdicts call a *kernel* fault is named as such:
  float32 and switching passes off on other ops cannot fix a wrong kernel, so `bisect precision` stops
  there (outside its reach) instead of searching on.
- `outputs` + `cosine`: every named op's outputs have a cosine above `cosine` (NaN/Inf data fails);
- `loss_tolerance`: |loss − golden loss| ≤ tolerance · |golden loss| (the golden loss record tf/loss.csv,
  else the loss the captured step fetched).
Given `outputs` or `loss_tolerance`, only those are judged (all of them must hold).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from precision_tool.errors import WorkspaceError


@dataclass(frozen=True)
class CheckSettings:
    outputs: tuple[str, ...] = ()
    cosine: float = 0.99
    loss_tolerance: float | None = None
    threshold: float = 0.98  # the workspace's COSINE_THRESHOLD: what the comparison calls abnormal

    def describe(self) -> str:
        parts = []
        if self.outputs:
            parts.append(f"outputs of {', '.join(self.outputs)} above cosine {self.cosine:g}")
        if self.loss_tolerance is not None:
            parts.append(f"loss within {self.loss_tolerance:g} (relative) of the golden loss")
        return " and ".join(parts) or (f"ac's judgement: no first divergent op and no NaN/Inf output "
                                       f"(cosine threshold {self.threshold:g})")

    def as_dict(self) -> dict[str, Any]:
        return {"outputs": list(self.outputs), "cosine": self.cosine, "loss_tolerance": self.loss_tolerance,
                "threshold": self.threshold}


@dataclass(frozen=True)
class Judgement:
    passed: bool
    verdict: str  # one line: why
    first_divergent: str | None = None  # "[id] name (type)"
    first_divergent_type: str | None = None
    kernel_fault: bool = False  # the first divergent op's type has a kernel verdict: outside float32's reach
    csv_path: str | None = None
    loss: float | None = None
    details: dict[str, Any] = field(default_factory=dict)


def compare_run(workspace: Any, debug_id: int, dump_dir: Path, result_dir: Path, threshold: float) -> Any:
    """The run's comparison with the golden tensors into `result_dir` (one CompareRun per graph; the first)."""
    from precision_tool.analysis.compare.compare_runs import run_specs, workspace_labeller
    from precision_tool.analysis.compare.workspace_runs import golden_for_iteration, graph_specs

    notes: list[str] = []
    golden = golden_for_iteration(workspace.golden_dir, [dump_dir], None)
    specs = graph_specs(workspace, debug_id, dump_dir, golden, result_dir.name, notes)
    if not specs:
        raise WorkspaceError(f"bisect: npu/debug_{debug_id} has no Build graph to compare its dump through "
                             f"({workspace.graph_dir(debug_id)}); the round's run must dump its graphs (tf_config "
                             "sets DUMP_GE_GRAPH)")
    runs = run_specs(specs, result_dir, workers=1, threshold=threshold, labels=workspace_labeller(workspace),
                     cache_dir=workspace.cache_dir)
    return runs[0]


def _loss_at(path: Path, step: int | None) -> float | None:
    from precision_tool.formats.loss_record import read_loss

    if not path.is_file():
        return None
    points = read_loss(path)
    chosen = [p for p in points if step is None or p.step == step] or points
    return chosen[-1].loss if chosen else None


def _captured_loss(workspace: Any) -> float | None:
    """Without a golden loss record (tf/loss.csv): the loss the captured step fetched, the tensor the
    simulated run recorded as its loss (tf/checkpoints/replay_sim.json) — the golden step's own value."""
    import json

    import numpy as np

    try:
        tensor = json.loads((workspace.checkpoint_dir / "replay_sim.json").read_text(encoding="utf-8"))["loss"]["tensor"]
        manifest = json.loads((workspace.checkpoint_dir / "manifest.json").read_text(encoding="utf-8"))
        entry = next(f for f in manifest["fetches"] if f.get("name") == tensor and f.get("file"))
        value = np.load(workspace.checkpoint_dir / entry["file"], allow_pickle=False)
        return float(np.asarray(value).reshape(-1)[0])
    except (OSError, ValueError, KeyError, TypeError, StopIteration, IndexError):
        return None


def judge(workspace: Any, run: Any, debug_id: int, settings: CheckSettings,
          kernel_types: frozenset[str] = frozenset()) -> Judgement:
    """The round's verdict from its comparison `run` (a CompareRun) and its loss record."""
    summary = run.summary
    first = summary.first_divergent_op
    label = f"[{first.index}] {first.npu_op} ({first.op_type})" if first is not None else None
    common = {"first_divergent": label, "first_divergent_type": first.op_type if first is not None else None,
              "csv_path": str(run.csv_path)}
    loss = _loss_at(workspace.loss_file(debug_id), None)
    details = {"abnormal_ops": len(summary.abnormal_ops), "nan_outputs": summary.nan_data_outputs, "loss": loss}
    if not settings.outputs and settings.loss_tolerance is None:
        if first is not None:
            kernel = first.op_type in kernel_types
            why = (" — a kernel verdict for this op type: keeping types in float32 cannot fix it" if kernel else "")
            worst = min((t.cosine for t in first.outputs if not math.isnan(t.cosine)), default=math.nan)
            shown = "NaN/Inf data" if any(t.nan_data for t in first.outputs) else f"cosine {worst:.6f}"
            return Judgement(False, f"first divergent op {label}: {shown}{why}", kernel_fault=kernel, loss=loss,
                             details=details, **common)
        if summary.nan_data_outputs:
            return Judgement(False, f"{summary.nan_data_outputs} output(s) hold NaN/Inf data", loss=loss,
                             details=details, **common)
        return Judgement(True, f"no first divergent op, {len(summary.abnormal_ops)} abnormal op(s), no NaN/Inf",
                         loss=loss, details=details, **common)
    failures = []
    if settings.outputs:
        by_name = {op.npu_op: op for op in summary.ops}
        by_name.update({op.golden_op: op for op in summary.ops if op.golden_op})
        for name in settings.outputs:
            op = by_name.get(name)
            if op is None:
                failures.append(f"{name} is not in the comparison")
                continue
            bad = [t for t in op.outputs if t.nan_data or math.isnan(t.cosine) or t.cosine <= settings.cosine]
            if bad:
                failures.append(f"{bad[0].tensor_index} cosine "  # the tensor's name holds the op's
                                f"{'NaN/Inf' if bad[0].nan_data else f'{bad[0].cosine:.6f}'} ≤ {settings.cosine:g}")
    if settings.loss_tolerance is not None:
        golden = _loss_at(workspace.golden_loss_file, None)
        if golden is None:
            golden = _captured_loss(workspace)
        if golden is None or loss is None:
            failures.append(f"no loss to compare (golden: {workspace.golden_loss_file} or the captured step's "
                            f"fetched loss; the run: {workspace.loss_file(debug_id)})")
        else:
            gap = abs(loss - golden)
            details["golden_loss"] = golden
            if not (gap <= settings.loss_tolerance * abs(golden)):
                failures.append(f"loss {loss:.6g} vs golden {golden:.6g} (relative gap "
                                f"{gap / abs(golden) if golden else math.inf:.3g} > {settings.loss_tolerance:g})")
    if failures:
        return Judgement(False, "; ".join(failures), loss=loss, details=details, **common)
    return Judgement(True, settings.describe() + ": holds", loss=loss, details=details, **common)
