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
from precision_tool.analysis.report.report_runs import OutputPoint, RunReport
from precision_tool.analysis.report.report_tensors import HIST_BINS, HIST_LOW, HIST_STEP, PairStats, SideStats
from precision_tool.render.report.page_columns import (front_coded, indexes_where, metric_column,
                                                       table_and_indexes)


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


STAT_KEYS = ("count", "max", "min", "mean", "std", "nan", "inf", "zero")
"""The order of a side's statistics in the page's JSON (report.js reads them by position)."""


def _side(stats: SideStats) -> list[str]:
    return [number_text(stats.count), number_text(stats.max), number_text(stats.min), number_text(stats.mean),
            number_text(stats.std), number_text(stats.nan_count), number_text(stats.inf_count),
            number_text(stats.zero_count)]


def histogram_labels() -> list[str]:
    """Every bin edge of the error histogram as the page writes it, once per page (HIST_BINS + 1)."""
    return [f"{10 ** (HIST_LOW + i * HIST_STEP):.2g}" for i in range(HIST_BINS + 1)]


def _stats_json(stats: PairStats) -> list[Any]:
    """[npu side, golden side, first bin, counts from it to the last bin used, equal pairs, NaN/Inf pairs]:
    the bars between the first and the last bin that hold anything, labelled by histogram_labels()."""
    counts = list(stats.counts)
    used = [i for i, c in enumerate(counts) if c]
    first, last = (used[0], used[-1]) if used else (0, -1)
    return [_side(stats.npu), _side(stats.golden), first, counts[first:last + 1], stats.zero_errors,
            stats.nonfinite_pairs]


def _placeholder(values: list[float | None], top: bool, log: bool) -> float:
    """Where NaN/Inf outputs sit on an axis with no place for them: just beyond the drawn values."""
    finite = [v for v in values if v is not None and (v > 0 or not log)]
    if not finite:
        return 1.0 if log else 0.0
    if log:
        return max(finite) * 10 if top else min(finite) / 10
    spread = (max(finite) - min(finite)) or 1.0
    return max(finite) + 0.05 * spread if top else min(finite) - 0.05 * spread


def _tensor_cell(point: OutputPoint, op_number: int) -> int | str:
    """'<op>:output:N' of a known op is just N (the page holds each op's name once)."""
    prefix = point.op + ":output:"
    if op_number >= 0 and point.tensor.startswith(prefix):
        rest = point.tensor[len(prefix):]
        if rest.isdigit() and str(int(rest)) == rest:
            return int(rest)
    return point.tensor


def run_json(run: RunReport, run_number: int, op_numbers: dict[str, int]) -> dict[str, Any]:
    """One run's points, columnar (the chart reads arrays; page_columns.py says how each is packed), and
    the statistics of its op panels by point number."""
    points = run.points
    cosine = [_finite(p.cosine) for p in points]
    error = [_finite(p.max_abs_error) if p.max_abs_error > 0 else None for p in points]
    # each placeholder once (not per point); a max abs error of 0 has no place on a log axis: it sits with
    # the smallest ones, hover says 0
    low_cosine = _placeholder(cosine, top=False, log=False)
    low_error, high_error = _placeholder(error, top=False, log=True), _placeholder(error, top=True, log=True)
    op = [op_numbers.get(p.op, -1) for p in points]
    shapes, shape = table_and_indexes(p.shape for p in points)
    return {
        "label": run.label, "npu_vs_npu": run.npu_vs_npu, "number": run_number,
        "x": [p.position for p in points],
        "cosine": [c if c is not None else low_cosine for c in cosine],
        "error": [e if e is not None else (low_error if p.max_abs_error == 0 else high_error)
                  for e, p in zip(error, points)],
        "op": op,
        "tensor": [_tensor_cell(p, n) for p, n in zip(points, op)],
        "abnormal": indexes_where(p.abnormal for p in points),
        "nan_data": indexes_where(p.nan_data for p in points),
        "shapes": shapes, "shape": shape,
        # one column per metric: a column's cells are alike, and most are six-decimal numbers
        "metrics": [metric_column([p.metrics.get(name, "") for p in points]) for name in METRIC_NAMES],
        "stats": {str(i): _stats_json(run.stats[p.csv_tensor]) for i, p in enumerate(points)
                  if p.csv_tensor in run.stats},
        "stats_note": run.stats_note,
    }


def _ops_json(data: ReportData, names: list[str]) -> dict[str, Any]:
    """The ops in id order, columnar: names front-coded, types, passes and ports as tables and indexes."""
    facts = [data.ops[n] for n in names]
    types, type_index = table_and_indexes(f.type for f in facts)
    passes, pass_index = table_and_indexes([None] + [f.fusion_pass for f in facts])  # 0: no pass
    ports, _ = table_and_indexes(d for f in facts for d in (*f.inputs, *f.outputs))
    port_number = {port: i for i, port in enumerate(ports)}
    return {
        "names": front_coded(names), "types": types, "type": type_index, "id": [f.id for f in facts],
        "passes": passes, "pass": pass_index[1:],
        # most ops come from one TF op of their own name (-1); the others' TF ops, how many, then all of
        # them front-coded in op order
        "original": [-1 if f.original == (f.name,) else len(f.original) for f in facts],
        "original_names": front_coded(n for f in facts if f.original != (f.name,) for n in f.original),
        "ports": [list(p) for p in ports],
        "inputs": [[port_number[d] for d in f.inputs] for f in facts],
        "outputs": [[port_number[d] for d in f.outputs] for f in facts],
    }


def page_json(data: ReportData) -> dict[str, Any]:
    """Everything the page's script reads."""
    names = sorted(data.ops, key=lambda n: (data.ops[n].id is None, data.ops[n].id or 0, n))
    op_numbers = {name: i for i, name in enumerate(names)}
    runs = [run_json(run, i, op_numbers) for i, run in enumerate(data.runs)]  # statistics runs: no points
    verdicts = {str(v.get("op")): {"verdict": v.get("verdict"), "line": v.get("line")} for v in data.replay}
    return {"threshold": data.threshold, "metric_names": list(METRIC_NAMES), "stat_keys": list(STAT_KEYS),
            "hist_labels": histogram_labels(), "ops": _ops_json(data, names), "runs": runs, "verdicts": verdicts,
            "sources": _sources_json(data, names), "ranking": ranking_json(data)}


def ranking_json(data: ReportData) -> dict[str, Any] | None:
    """Each replayed op's own error along the network (replay_chart.js): op id, ErrorRatio (a NaN/Inf ratio
    sits just above the others, as the main chart places NaN/Inf), verdict, and the texts hover shows."""
    rows = [r for r in data.ranking if r.get("Rank") and str(r.get("OpId", "")).lstrip("-").isdigit()]
    if not rows:
        return None
    ratios = [_ratio(r.get("ErrorRatio", "")) for r in rows]
    finite = [v for v in ratios if v is not None and v > 0]
    low, high = _placeholder(finite, top=False, log=True), _placeholder(finite, top=True, log=True)
    verdicts, verdict = table_and_indexes(r.get("Verdict", "") for r in rows)
    return {"x": [int(r["OpId"]) for r in rows],
            "ratio": [v if v is not None and v > 0 else (high if v is None else low) for v in ratios],
            "verdicts": verdicts, "verdict": verdict,
            "op": [f"[{r['OpId']}] {r.get('Op', '')} ({r.get('OpType', '')})" for r in rows],
            "text": [f"ratio {r.get('ErrorRatio', '')}, local error {r.get('LocalError', '')}, float16 error "
                     f"{r.get('Float16Error') or '-'}" + (f", {r['InfNanApart']} Inf/NaN apart"
                                                        if r.get("InfNanApart") not in ("", "0", None) else "")
                     for r in rows]}


def _ratio(text: str) -> float | None:
    """A ratio cell as a number; None for NaN/Inf (placed above the others)."""
    try:
        value = float(text)
    except ValueError:
        return None
    return value if math.isfinite(value) else None


def _sources_json(data: ReportData, names: list[str]) -> dict[str, Any] | None:
    """Where the ops were made: each place once ([place, line, first kept line, kept lines]), and per op
    (in `names` order) the numbers of its places; null when the golden run recorded none."""
    if data.sources is None:
        return None
    return {"places": [list(place[:3]) + [list(place[3])] for place in data.sources.places],
            "op": [list(data.sources.of_op.get(name, ())) for name in names]}


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
