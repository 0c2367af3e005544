"""The verdict of a replay: why an op's NPU output differs, decided from the replays' numbers alone.

- *kernel*: on the NPU's own inputs, the NPU output disagrees with TensorFlow in float32 and in the NPU's
  dtypes (the kernel or a fusion is wrong);
- *precision*: it agrees with the float16 replay but not the float32 one (float16 loses the answer);
- *inherited*: it agrees with TensorFlow on its inputs, and those inputs already differ from golden;
- *ok*: it agrees with TensorFlow, and its inputs with golden;
- *cannot replay*: with the reason (never a guess). A replay that does not give the golden output on the
  golden inputs is not trusted either: the rebuilt ops are not what the golden run computed.

"Agrees" means: the same positions hold Inf/NaN, and the finite values meet the cosine and relative-error
tolerances of the NPU tensor's dtype (settings REPLAY_<DTYPE>_COSINE / REPLAY_<DTYPE>_ERROR).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from precision_tool.analysis.replay.replay_plan import ChildResult, ReplayCase, ReplayTensor
from precision_tool.errors import FormatError

if TYPE_CHECKING:
    import numpy as np

    from precision_tool.analysis.results.metrics import TensorMetrics
    from precision_tool.config import Settings

KERNEL, PRECISION, INHERITED, OK, CANNOT = "kernel", "precision", "inherited", "ok", "cannot replay"
FLOAT16_MAX = 65504.0
FLOAT16_TINY = 2.0 ** -24  # the smallest float16 subnormal: anything below becomes 0


@dataclass(frozen=True)
class Tolerance:
    cosine: float
    error: float  # relative Euclidean distance ||npu - ref|| / ||ref||, finite values


def case_dtype(case: ReplayCase) -> str:
    """The narrowest float dtype the NPU op touched: its replays and golden are judged at that precision
    (a float32 output computed from float16 inputs is as good as float16)."""
    dtypes = {t.dtype for t in (*case.inputs, *case.outputs)}
    return next((d for d in ("bfloat16", "float16") if d in dtypes), "float32")


def tolerance(settings: "Settings", dtype: str) -> Tolerance:
    """The tolerance of a tensor of `dtype` (float16, bfloat16, float32; others as float32)."""
    kind = {"float16": "FLOAT16", "bfloat16": "BFLOAT16"}.get(dtype, "FLOAT32")
    return Tolerance(getattr(settings, f"REPLAY_{kind}_COSINE"), getattr(settings, f"REPLAY_{kind}_ERROR"))


@dataclass(frozen=True)
class Agreement:
    """How close two tensors are, finite values and Inf/NaN positions apart."""

    cosine: float
    error: float
    nonfinite_mismatch: int  # positions where one side is Inf/NaN and the other is not (or another one)
    agrees: bool
    size_mismatch: bool = False

    def text(self) -> str:
        if self.size_mismatch:
            return "sizes differ"
        parts = [f"cosine {self.cosine:.6f}", f"relative error {self.error:.2e}"]
        if self.nonfinite_mismatch:
            parts.append(f"{self.nonfinite_mismatch} Inf/NaN where the other has none")
        return ", ".join(parts)


def agreement(npu: "np.ndarray", reference: "np.ndarray", tol: Tolerance) -> Agreement:
    """Floats within the tolerance; integers and booleans only when equal (an index off by one is wrong)."""
    import numpy as np

    exact = np.asarray(npu).dtype.kind in "biu" and np.asarray(reference).dtype.kind in "biu"
    a = np.asarray(npu, dtype=np.float64).ravel()
    b = np.asarray(reference, dtype=np.float64).ravel()
    if a.size != b.size:
        return Agreement(math.nan, math.nan, 0, False, size_mismatch=True)
    finite_a, finite_b = np.isfinite(a), np.isfinite(b)
    both = finite_a & finite_b
    same_special = ~finite_a & ~finite_b & ((a == b) | (np.isnan(a) & np.isnan(b)))
    mismatch = int(np.count_nonzero(~both & ~same_special))
    x, y = a[both], b[both]
    norm_x, norm_y = float(np.sqrt(np.dot(x, x))), float(np.sqrt(np.dot(y, y)))
    if norm_x == 0.0 and norm_y == 0.0:
        cosine = 1.0
    elif norm_x == 0.0 or norm_y == 0.0:
        cosine = 0.0
    else:
        cosine = float(np.dot(x, y) / (norm_x * norm_y))
    diff = float(np.sqrt(np.dot(x - y, x - y)))
    error = 0.0 if diff == 0.0 else (diff / norm_y if norm_y else math.inf)
    if exact:
        return Agreement(cosine, error, mismatch, mismatch == 0 and diff == 0.0)
    return Agreement(cosine, error, mismatch, mismatch == 0 and cosine >= tol.cosine and error <= tol.error)


@dataclass(frozen=True)
class OutputJudgement:
    index: int
    tf_tensor: str | None
    dtype: str
    kind: str  # OK, PRECISION or KERNEL
    against: dict[str, Agreement]  # "float32 replay", "float16 replay", "golden", "golden replay"
    metrics: dict[str, "TensorMetrics"] = field(default_factory=dict)  # the ten metrics, same keys


@dataclass(frozen=True)
class InputJudgement:
    index: int
    tf_tensor: str | None
    vs_golden: Agreement | None
    npu_name: str | None = None  # the NPU graph's spelling of the input (`ni` shows it); tf_tensor is TF's


@dataclass(frozen=True)
class Verdict:
    case: ReplayCase
    verdict: str
    line: str  # the one-line verdict
    evidence: tuple[str, ...] = ()
    outputs: tuple[OutputJudgement, ...] = ()
    inputs: tuple[InputJudgement, ...] = ()
    feeds: tuple[dict[str, Any], ...] = ()
    upstream: str | None = None  # for *inherited*: the op to look at next
    fixes: tuple[str, ...] = ()  # files written for it (ops_info.json, the reproducer folder)
    fp16: str = "none"
    graphs: dict[str, Any] = field(default_factory=dict)  # the child's replayed GraphDefs (ChildResult.graphs)
    failed: bool = False
    """*cannot replay* because the replay itself failed (the process crashed, wrote nothing or raised, or
    TensorFlow is missing): not a finding about the op, so `replay` exits 1."""


def cannot(case: ReplayCase, reason: str, *, failed: bool = False) -> Verdict:
    """*cannot replay*, and why; `failed`: the replay machinery failed, not something about the op."""
    return Verdict(case, CANNOT, f"cannot replay: {reason}", failed=failed)


def verdict_reason(verdict: str, line: str) -> str:
    """A verdict's one line without the verdict it starts with (`kernel: on the NPU's own inputs ...`)."""
    head, sep, tail = line.partition(": ")
    return tail if sep and head == verdict else line


RAISED = "the replay raised "
"""How the child's result.json starts the reason of a case it crashed on (a bug, or TensorFlow crashing)."""


def _load(folder: Path, name: str) -> "np.ndarray":
    import numpy as np

    return np.load(folder / name, allow_pickle=False)


def judge(case: ReplayCase, result: ChildResult | None, settings: "Settings") -> Verdict:
    """The verdict of one case from its saved tensors and the child's replays."""
    from precision_tool.analysis.results.metrics import compare_arrays
    from precision_tool.formats.tf.golden import load_npy

    if case.problem:
        return cannot(case, case.problem)
    if result is None:
        return cannot(case, "the replay process wrote no result for it", failed=True)
    if result.status != "ok":
        reason = result.reason or "the replay failed"
        return cannot(case, reason, failed=reason.startswith(RAISED) or not result.reason)
    if not case.outputs:
        return cannot(case, "its dump holds no output to compare")
    folder = Path(case.folder)
    outputs: list[OutputJudgement] = []
    for tensor in case.outputs:
        npu = _load(folder, tensor.file)
        tol = tolerance(settings, case_dtype(case))
        against: dict[str, Agreement] = {}
        metrics: dict[str, Any] = {}
        refs = {"float32 replay": result.variants.get("float32", {}).get(str(tensor.index)),
                "float16 replay": result.variants.get("float16", {}).get(str(tensor.index))}
        for name, file in refs.items():
            if file:
                ref = _load(folder, file)
                against[name], metrics[name] = agreement(npu, ref, tol), compare_arrays(npu, ref)
        try:
            golden = load_npy(tensor.golden) if tensor.golden else None
        except FormatError as exc:
            return cannot(case, f"cannot read the golden output {tensor.tf_tensor}: {exc}")
        if golden is not None:
            against["golden"], metrics["golden"] = agreement(npu, golden, tol), compare_arrays(npu, golden)
            file = result.variants.get("golden", {}).get(str(tensor.index))
            if file:
                replayed = _load(folder, file)
                against["golden replay"] = agreement(replayed, golden, tolerance(settings, str(golden.dtype)))
                metrics["golden replay"] = compare_arrays(replayed, golden)
        if "float32 replay" not in against:
            return cannot(case, f"no float32 replay of output {tensor.index}")
        if against["float32 replay"].size_mismatch:
            return cannot(case, f"NPU output {tensor.index} has {npu.size} values in layout {tensor.layout}, the "
                                f"replay of {tensor.tf_tensor} has {_load(folder, refs['float32 replay']).size}: the "
                                "dump's layout could not be brought back to TensorFlow's")
        untrusted = against.get("golden replay")
        if untrusted is not None and not untrusted.agrees:
            return cannot(case, f"the rebuilt TF ops do not give the golden output {tensor.tf_tensor} on the golden "
                                f"inputs ({untrusted.text()}): they are not what the golden run computed")
        if against["float32 replay"].agrees:
            kind = OK
        elif case.fp16 and against.get("float16 replay") is not None and against["float16 replay"].agrees:
            kind = PRECISION
        elif case_dtype(case) == "bfloat16":
            return cannot(case, f"output {tensor.index} disagrees with the float32 replay, and the NPU computed in "
                                "bfloat16: a bfloat16 replay is not there yet, so a kernel fault and bfloat16's "
                                "precision cannot be told apart")
        else:
            kind = KERNEL
        outputs.append(OutputJudgement(tensor.index, tensor.tf_tensor, tensor.dtype, kind, against, metrics))
    inputs = tuple(_input_judgement(folder, t, settings, case_dtype(case)) for t in case.inputs)
    return _decide(case, result, tuple(outputs), inputs)


def _input_judgement(folder: Path, tensor: ReplayTensor, settings: "Settings", dtype: str) -> InputJudgement:
    from precision_tool.formats.tf.golden import load_npy

    if not tensor.golden or not tensor.file:
        return InputJudgement(tensor.index, tensor.tf_tensor, None, tensor.npu_name)
    try:
        golden = load_npy(tensor.golden)
    except Exception:  # an unreadable golden input says nothing about the op
        return InputJudgement(tensor.index, tensor.tf_tensor, None, tensor.npu_name)
    return InputJudgement(tensor.index, tensor.tf_tensor,
                          agreement(_load(folder, tensor.file), golden, tolerance(settings, dtype)), tensor.npu_name)


def _decide(case: ReplayCase, result: ChildResult, outputs: tuple[OutputJudgement, ...],
            inputs: tuple[InputJudgement, ...]) -> Verdict:
    evidence = [f"output {o.index} {o.tf_tensor} ({o.dtype}): "
                + "; ".join(f"{name} {_mark(a)} {a.text()}" for name, a in o.against.items()) for o in outputs]
    evidence += [f"input {i.index} {i.tf_tensor}: golden {_mark(i.vs_golden)} {i.vs_golden.text()}"
                 for i in inputs if i.vs_golden is not None]
    evidence += list(case.notes) + list(result.notes)
    common = dict(evidence=tuple(evidence), outputs=outputs, inputs=inputs, feeds=result.feeds, fp16=result.fp16,
                  graphs=result.graphs)
    kernel = [o for o in outputs if o.kind == KERNEL]
    precision = [o for o in outputs if o.kind == PRECISION]
    differing = [i for i in inputs if i.vs_golden is not None and not i.vs_golden.agrees]
    if kernel:
        o = kernel[0]
        line = (f"kernel: on the NPU's own inputs, output {o.index} disagrees with TensorFlow in float32"
                + (" and in float16" if "float16 replay" in o.against else "")
                + f" ({o.against['float32 replay'].text()}): the NPU kernel or a fusion computes it wrong")
        return Verdict(case, KERNEL, line, **common)
    if precision:
        o = precision[0]
        reference = result.variants["float32"][str(o.index)]
        return Verdict(case, PRECISION, f"precision: output {o.index} agrees with the float16 replay but not the "
                       f"float32 one: {_float16_loss(case, o, reference)}", **common)
    if differing:
        first = differing[0]
        return Verdict(case, INHERITED, f"inherited: the op computes correctly on the NPU's inputs, and input "
                       f"{first.index} ({first.tf_tensor}) already differs from golden ({first.vs_golden.text()})",
                       **common)
    if any(i.vs_golden is not None for i in inputs) and \
            any("golden" in o.against and not o.against["golden"].agrees for o in outputs):
        return Verdict(case, INHERITED, "inherited: the op computes correctly on the NPU's inputs; they differ from "
                       "golden only slightly, and the op amplifies that", **common)
    return Verdict(case, OK, "ok: the NPU output agrees with TensorFlow on the NPU's inputs", **common)


def _mark(agreement: Agreement) -> str:
    return "agrees" if agreement.agrees else "DIFFERS"


def _float16_loss(case: ReplayCase, output: OutputJudgement, float32_file: str) -> str:
    """What float16 did to the answer: overflow, underflow, or rounding."""
    import numpy as np

    folder = Path(case.folder)
    tensor = case.tensor("output", output.index)
    if tensor is None:
        return "float16 loses it"
    reference = _load(folder, float32_file).astype(np.float64).ravel()
    npu = _load(folder, tensor.file).astype(np.float64).ravel()
    with np.errstate(invalid="ignore"):
        over = int(np.count_nonzero(np.isfinite(reference) & (np.abs(reference) > FLOAT16_MAX)))
        under = int(np.count_nonzero((reference != 0) & (np.abs(reference) < FLOAT16_TINY) & (npu == 0)))
    if over:
        peak = float(np.nanmax(np.abs(reference[np.isfinite(reference)])))
        return (f"float16 overflows: the float32 result reaches {peak:,.0f}, beyond float16's {FLOAT16_MAX:,.0f} "
                f"({over} value(s) become Inf)")
    if under:
        return f"float16 underflows: {under} value(s) below {FLOAT16_TINY:.1e} become 0"
    return "float16 rounding (accumulation) loses it"
