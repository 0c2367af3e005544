"""A ReportData as the page holds it: the JSON the chart and the op panels draw from, and the rows of the
HTML tables. Numbers are formatted here, once, so that the page shows what the CSVs and the analysis
layer say and computes nothing; the chart also gets the plain numbers it places its points by.
"""

from __future__ import annotations

import math
import os
from pathlib import Path
from typing import Any

from precision_tool.analysis.results.metrics import METRIC_NAMES
from precision_tool.analysis.report.report_data import ReportData
from precision_tool.analysis.report.report_runs import RunReport
from precision_tool.analysis.report.report_tensors import HIST_LOW, HIST_STEP, PairStats, SideStats


def number_text(value: float | int | None) -> str:
    """How the page writes a statistic: 6 significant digits, counts as integers, '—' for none."""
    if value is None:
        return "—"
    if isinstance(value, int):
        return f"{value:,}"
    if math.isnan(value):
        return "nan"
    if math.isinf(value):
        return "inf" if value > 0 else "-inf"
    return f"{value:.6g}"


def _finite(value: float) -> float | None:
    return value if math.isfinite(value) else None


def _side(stats: SideStats) -> dict[str, str]:
    return {"count": number_text(stats.count), "max": number_text(stats.max), "min": number_text(stats.min),
            "mean": number_text(stats.mean), "std": number_text(stats.std), "nan": number_text(stats.nan_count),
            "inf": number_text(stats.inf_count), "zero": number_text(stats.zero_count)}


def _histogram(stats: PairStats) -> dict[str, Any]:
    counts = list(stats.counts)
    used = [i for i, c in enumerate(counts) if c]
    first, last = (used[0], used[-1]) if used else (0, -1)
    labels = [f"{10 ** (HIST_LOW + i * HIST_STEP):.2g}" for i in range(first, last + 2)]
    return {"labels": labels, "counts": counts[first:last + 1], "zero": stats.zero_errors,
            "nonfinite": stats.nonfinite_pairs}


def _stats_json(stats: PairStats) -> dict[str, Any]:
    return {"npu": _side(stats.npu), "golden": _side(stats.golden), "hist": _histogram(stats)}


def _placeholder(values: list[float | None], top: bool, log: bool) -> float:
    """Where NaN/Inf outputs sit on an axis with no place for them: just beyond the drawn values."""
    finite = [v for v in values if v is not None and (v > 0 or not log)]
    if not finite:
        return 1.0 if log else 0.0
    if log:
        return max(finite) * 10 if top else min(finite) / 10
    spread = (max(finite) - min(finite)) or 1.0
    return max(finite) + 0.05 * spread if top else min(finite) - 0.05 * spread


def run_json(run: RunReport, run_number: int, op_numbers: dict[str, int]) -> dict[str, Any]:
    """One run's points (columnar: the chart reads arrays) and the numbers of its op panels."""
    points = run.points
    cosine = [_finite(p.cosine) for p in points]
    error = [_finite(p.max_abs_error) if p.max_abs_error > 0 else None for p in points]
    # each placeholder once (not per point); a max abs error of 0 has no place on a log axis: it sits with
    # the smallest ones, hover says 0
    low_cosine = _placeholder(cosine, top=False, log=False)
    low_error, high_error = _placeholder(error, top=False, log=True), _placeholder(error, top=True, log=True)
    return {
        "label": run.label, "npu_vs_npu": run.npu_vs_npu, "number": run_number,
        "x": [p.position for p in points],
        "cosine": [c if c is not None else low_cosine for c in cosine],
        "error": [e if e is not None else (low_error if p.max_abs_error == 0 else high_error)
                  for e, p in zip(error, points)],
        "op": [op_numbers.get(p.op, -1) for p in points],
        "tensor": [p.tensor for p in points],
        "abnormal": [1 if p.abnormal else 0 for p in points],
        "nan_data": [1 if p.nan_data else 0 for p in points],
        "shape": [p.shape for p in points],
        "metrics": [[p.metrics.get(name, "") for name in METRIC_NAMES] for p in points],
        "stats": {p.tensor: _stats_json(run.stats[p.csv_tensor]) for p in points if p.csv_tensor in run.stats},
        "stats_note": run.stats_note,
    }


def page_json(data: ReportData) -> dict[str, Any]:
    """Everything the page's script reads."""
    names = sorted(data.ops, key=lambda n: (data.ops[n].id is None, data.ops[n].id or 0, n))
    op_numbers = {name: i for i, name in enumerate(names)}
    ops = [{"name": f.name, "type": f.type, "id": f.id, "pass": f.fusion_pass, "original": list(f.original),
            "inputs": [list(d) for d in f.inputs], "outputs": [list(d) for d in f.outputs]}
           for f in (data.ops[n] for n in names)]
    runs = [run_json(run, i, op_numbers) for i, run in enumerate(data.runs)]  # statistics runs: no points
    verdicts = {str(v.get("op")): {"verdict": v.get("verdict"), "line": v.get("line")} for v in data.replay}
    return {"threshold": data.threshold, "metric_names": list(METRIC_NAMES), "ops": ops, "runs": runs,
            "verdicts": verdicts}


def relative_link(target: Path, page_dir: Path) -> str:
    """A link from the page to a file of the workspace: relative, so it works wherever the workspace is
    copied (a mailed page keeps the text of the path)."""
    try:
        return Path(os.path.relpath(target, page_dir)).as_posix()
    except ValueError:  # another drive (Windows)
        return target.as_uri()


def table_rows(data: ReportData) -> dict[str, list[dict[str, Any]]]:
    """The rows of each table, cells as shown and the sort keys beside them."""
    abnormal = []
    for run_number, run in enumerate(data.runs):
        for point_number, p in enumerate(run.points):
            if not p.abnormal:
                continue
            facts = data.ops.get(p.op)
            abnormal.append({
                "run": run.label, "run_number": run_number, "point": point_number, "position": p.position,
                "op": p.op, "type": facts.type if facts else "", "tensor": p.tensor,
                "cosine": p.metrics.get("CosineSimilarity", ""), "cosine_key": _key(p.cosine, p.nan_data),
                "error": p.metrics.get("MaxAbsoluteError", ""), "error_key": _key(p.max_abs_error, p.nan_data, high=True),
                "nan": "yes" if p.nan_data else "", "verdict": (data.verdict_of(p.op) or {}).get("verdict", ""),
            })
    return {"abnormal": abnormal, "overflows": _overflow_rows(data), "fusion": _fusion_rows(data),
            "casts": [{"src": c.src, "dst": c.dst, "reason": c.reason, "count": len(c.op_names),
                       "ops": ", ".join(c.op_names)} for c in data.casts],
            "similarity": [{"graph": s.graph, "left": str(s.left), "right": str(s.right), "compared": s.compared,
                            "identical": s.identical, "op": d.name, "type": d.type, "what": "; ".join(d.what)}
                           for s in data.similarity or () for d in s.differences]}


def _key(value: float, nan_data: bool, high: bool = False) -> float:
    """Sort key: NaN/Inf data sorts as the worst (lowest cosine, highest error)."""
    if nan_data or not math.isfinite(value):
        return 1e300 if high else -1e300
    return value


def _overflow_rows(data: ReportData) -> list[dict[str, Any]]:
    rows = []
    report = data.overflows
    for finding in report.findings if report is not None else ():
        bad = [t.label for t in finding.tensors if t.stats is not None and (t.stats.nan_count or t.stats.inf_count)]
        rows.append({"time": finding.timestamp_us, "op": finding.graph_name or finding.op_name or "",
                     "type": finding.op_type or "", "units": ", ".join(sorted({r.unit for r in finding.records})),
                     "tensors": ", ".join(bad), "problem": finding.problem or "", "file": finding.debug_file.name})
    return rows


def _fusion_rows(data: ReportData) -> list[dict[str, Any]]:
    rows = []
    summary = data.fusion
    for graph in summary.graphs if summary is not None else ():
        for ub in (False, True):
            for p in summary.fired(graph, ub):
                rows.append({"graph": graph.graph_id, "kind": "UB fusion" if ub else "graph fusion", "pass": p.name,
                             "matched": p.match_times, "fired": p.effect_times})
    return rows
