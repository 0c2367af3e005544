"""The report's comparison runs: one point per compared output in execution order, the ops they belong to
(as the Build graph describes them), and the statistics of the outputs that get an op panel with numbers.

Everything comes from the result CSV (the cosine, the ten metrics as written), its run.json (which dumps,
golden tensors and graph it compared) and the analysis layer (the summary, labels, tensor statistics):
the page draws these numbers and computes none of its own.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Sequence

from precision_tool.analysis.report.report_tensors import PairStats
from precision_tool.analysis.results.results import TensorRecord
from precision_tool.analysis.results.result_ops import NAN_DATA_TEXTS
from precision_tool.errors import PrecisionToolError


# not frozen: made per compared output (20,000 and more), and a frozen one costs four times as much to make
@dataclass
class OutputPoint:
    """One compared output of one run: a point of the chart."""

    position: int
    """Where along execution order: the op's Build-graph id when every op of the run has one, else the op's
    place in the CSV (graph order as well)."""
    op: str
    """The op's name as `ni` spells it (its Build-graph name when known)."""
    tensor: str
    """'<op>:output:N' under that name."""
    cosine: float
    """NaN when the data holds NaN/Inf (`nan_data`)."""
    max_abs_error: float
    abnormal: bool
    nan_data: bool
    metrics: dict[str, str]
    """The ten metric cells as the CSV writes them."""
    shape: str
    csv_tensor: str
    """The CSV's own TensorIndex (the key of `RunReport.stats`)."""


@dataclass(frozen=True)
class OpFacts:
    """An op as its Build graph describes it (what `ni` shows at the top)."""

    name: str
    type: str
    id: int | None
    fusion_pass: str | None
    original: tuple[str, ...]
    inputs: tuple[tuple[str, str, str], ...]
    """(dtype, layout, shape) per data input, as the graph declares it."""
    outputs: tuple[tuple[str, str, str], ...]


@dataclass(frozen=True)
class RunReport:
    """One result CSV as the report shows it."""

    label: str
    csv_path: Path
    npu_vs_npu: bool
    summary: Any
    """CompareSummary (tensors) or StatsSummary (a statistics compare: no points)."""
    points: tuple[OutputPoint, ...] = ()
    not_compared: int = 0
    """Output rows without a cosine or NaN/Inf data (no golden, unreadable, shapes differ)."""
    stats: dict[str, PairStats] = field(default_factory=dict)
    stats_note: str | None = None
    """Why some or all outputs have no statistics (over the limit, files gone since the comparison)."""
    graph_file: Path | None = None
    debug_id: int | None = None
    """The workspace's npu/debug_N whose dumps the run compared (None: dumps from elsewhere)."""
    stats_rows: tuple[Any, ...] = ()
    """A statistics compare's rows (StatsResultRow)."""
    spec: Any = None
    """The RunSpec from run.json (its rank for a multi-device dump); None for a CSV without one."""
    about: str | None = None
    """An NPU-vs-NPU run: what its second run is (graph_checks.other_run_text)."""


def _nan_data(record: TensorRecord) -> bool:
    text = record.metric("CosineSimilarity").strip()
    return text.lower() in NAN_DATA_TEXTS and text != "NaN"


def _number(text: str) -> float:
    try:
        return float(text)
    except (TypeError, ValueError):
        return math.nan


def output_points(rows: Sequence[TensorRecord], labels: Any, threshold: float) -> tuple[list[OutputPoint], int]:
    """The chart's points and how many output rows were not compared; rows in file (graph) order."""
    outputs = [record for record in rows if record.kind == "output"]
    names: dict[str, Any] = {}
    for record in outputs:
        op = record.tensor_op
        if op not in names:
            names[op] = labels.get(op) if labels is not None else None
    ids = [label.index if label is not None else "" for label in names.values()]
    if ids and all(i.isdigit() for i in ids):
        # every op has its graph id: place them by it, so two runs over one graph line up
        order = {op: int(label.index) for op, label in names.items()}
    else:
        order = {op: place for place, op in enumerate(names)}
    points: list[OutputPoint] = []
    skipped = 0
    for record in outputs:
        op = record.tensor_op
        nan_data = _nan_data(record)
        if math.isnan(record.cosine) and not nan_data:
            skipped += 1
            continue
        label = names[op]
        name = label.name if label is not None else op
        abnormal = nan_data or record.cosine <= threshold
        points.append(OutputPoint(order[op], name, name + record.tensor_index[len(op):], record.cosine,
                                  _number(record.metric("MaxAbsoluteError")), abnormal, nan_data,
                                  dict(record.values), record.shape, record.tensor_index))
    return points, skipped


def graph_facts(index: Any, debug_id: int | None, wanted: set[str]) -> tuple[dict[str, OpFacts], Path | None, Any]:
    """name → OpFacts of the `wanted` ops over the Build graphs of npu/debug_N (the first op of a name wins, in
    file order), the first such file, and its parsed model: None when its descriptions were kept (op_descs.py)
    and it was not parsed. Empty when there is none or it cannot be read (the page then names ops only)."""
    from precision_tool.analysis.graphs.op_descs import keep_descs, kept_descs

    if debug_id is None:
        return {}, None, None
    facts: dict[str, OpFacts] = {}
    first: Path | None = None
    first_model = None
    for path, is_build in index.graph_files(debug_id):
        summary = index.summary(path) if is_build else None
        if summary is None:
            continue
        model = None
        # the summary has each op's names, type, id and passes (made from the same parse); the descriptions
        # are kept beside it, else one whole parse gives (and keeps) them
        descs = kept_descs(index.workspace, path)
        if descs is None or any(entry.name not in descs for entry in summary.ops):  # (none kept, or damaged)
            try:
                model = index.model(path)
            except (PrecisionToolError, OSError):
                continue
            descs = keep_descs(index.workspace, path, model)
        for entry in summary.ops:  # (in file order, as the model's)
            name = entry.name
            if name in wanted and name not in facts:
                facts[name] = OpFacts(name, entry.type, entry.id, entry.fusion_pass,
                                      tuple(entry.original_names or ()), *descs[name])
        if first is None:
            first, first_model = path, index.model(path) if index.has_model(path) else model
    return facts, first, first_model


def build_graph_ops(index: Any, debug_id: int | None) -> tuple[dict[str, Any], Path | None, Any]:
    """name → Op over the Build graphs of npu/debug_N (every graph of each file), the first such file and
    its parsed model; empty when there is none or it cannot be read (the page then names ops only)."""
    if debug_id is None:
        return {}, None, None
    ops: dict[str, Any] = {}
    first: Path | None = None
    first_model = None
    for path, is_build in index.graph_files(debug_id):
        if not is_build:
            continue
        try:
            model = index.model(path)
        except (PrecisionToolError, OSError):
            continue
        if first is None:
            first, first_model = path, model
        for _, op in model.iter_ops():
            ops.setdefault(op.name, op)
    return ops, first, first_model


def chosen_outputs(points: Sequence[OutputPoint], limit: int) -> set[str]:
    """The CSV TensorIndex of the outputs whose statistics are read: abnormal first, then in order."""
    chosen = [p.csv_tensor for p in points if p.abnormal][:limit]
    if len(chosen) < limit:
        picked = set(chosen)
        chosen += [p.csv_tensor for p in points if p.csv_tensor not in picked][:limit - len(chosen)]
    return set(chosen)


def read_output_stats(spec: Any, model: Any, wanted: set[str],
                      cache_dir: Path | None = None) -> tuple[dict[str, PairStats], str | None]:
    """Statistics of the `wanted` outputs of one run, read as its comparison read them (planned through
    `model`, the run's parsed graph, else through the plan kept in `cache_dir`); a run whose files are gone or
    changed since gives what could still be read, and says so."""
    from precision_tool.analysis.compare.compare_runs import plan_run
    from precision_tool.analysis.report.report_tensors import output_stats

    if not wanted:
        return {}, None
    names = {t.rsplit(":", 2)[0] for t in wanted}
    try:
        model = model if spec.graph_path is not None else None
        plan, golden = plan_run(spec, model, only=names, cache_dir=cache_dir if model is None else None)
    except (PrecisionToolError, OSError) as exc:
        return {}, f"no tensor statistics: the run's files cannot be read again ({exc})"
    groups = [g for g in plan.groups if any(op.name in names for op in g.ops)]
    found = output_stats(groups, golden, plan.npu_vs_npu)
    found = {k: v for k, v in found.items() if k in wanted}
    missing = len(wanted) - len(found)
    note = (f"{missing} of {len(wanted)} chosen outputs could not be read again (their files changed since the "
            "comparison)") if missing else None
    return found, note
