"""The HTML report: one self-contained file (the data, the scripts that draw it, the subgraph picture and
the styles all inside it) that opens offline, on a machine without the tool, attached to an email.

The page is report_assets/report.html.j2 (jinja2) with report.js, chart.js and chart_bars.js (the charts,
drawn on a canvas: no chart library) and report.css beside it; this module only fills them in. Imported by the `report`
command only: jinja2 is never loaded at start-up.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from precision_tool.analysis.report.answer import deciding_output
from precision_tool.analysis.results.counts import counts_of
from precision_tool.analysis.report.report_data import ReportData
from precision_tool.render.report.report_page import number_text, page_json, relative_link, table_rows

ASSETS = Path(__file__).with_name("report_assets")


@dataclass(frozen=True)
class WrittenReport:
    path: Path
    size: int
    """Bytes."""


def _script_safe(text: str) -> str:
    """JSON inside a <script> element: nothing in it can close the element or open a comment."""
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def _raw_asset(name: str) -> str:
    text = (ASSETS / name).read_text(encoding="utf-8")
    if "</script" in text.lower() or "</style" in text.lower():
        raise ValueError(f"{name} must not hold a closing </script> or </style> tag")
    return text


def subgraph_svg(data: ReportData) -> tuple[str | None, str | None]:
    """The picture `ni -s` draws around the first divergent op, as inline SVG; or why there is none."""
    from precision_tool.render.ops.op_graph import INSTALL_HINT, dot_svg, subgraph_source

    if data.subgraph is None:
        return None, None
    svg, failure = dot_svg(subgraph_source(data.subgraph.center, list(data.subgraph.ops)))
    if svg is None:
        return None, failure or "graphviz's `dot` was not found, so there is no picture: " + INSTALL_HINT.split(", then")[0]
    return svg[svg.index("<svg"):], None  # without the XML prolog and doctype


def _runs_context(data: ReportData, page_dir: Path) -> list[dict[str, Any]]:
    runs = []
    for run in data.runs:
        summary = run.summary
        row = {"label": run.label, "csv": relative_link(run.csv_path, page_dir), "csv_name": run.csv_path.name,
               "kind": "NPU vs NPU" if run.npu_vs_npu else "NPU vs golden", "note": run.stats_note, "about": None}
        if run.stats_rows:
            row.update(statistics=True, compared=number_text(summary.compared), errors=number_text(summary.errors),
                       warnings=number_text(summary.warnings), not_compared=number_text(summary.total - summary.compared))
        else:
            # the terminal's counts (analysis/results/counts.py), in the same words
            counts = counts_of(summary)
            row.update(statistics=False, ops=number_text(counts.ops), abnormal_ops=number_text(counts.abnormal_ops),
                       outputs=number_text(counts.outputs), compared=number_text(counts.compared),
                       abnormal=number_text(counts.abnormal), nan_data=number_text(counts.nan_data),
                       not_compared=number_text(counts.not_compared),
                       min_cosine=number_text(summary.min_output_cosine), complete=summary.complete)
            row["about"] = run.about
        runs.append(row)
    return runs


def _answer_context(data: ReportData) -> dict[str, Any] | None:
    """The answer block `ac` ends with, in its words (render/answer.py draws the terminal's)."""
    from precision_tool.render.answer import outcome_lines

    answer = data.answer
    if answer is None:
        return None
    points = {(run.label, p.op): (n, i) for n, run in enumerate(data.runs) for i, p in enumerate(run.points)}
    suspects = []
    for suspect in answer.suspects:
        run_number, point = points.get((suspect.run, suspect.op.npu_op), (None, None))
        suspects.append({"role": suspect.role, "op": suspect.op.npu_op, "id": suspect.op.index,
                         "type": suspect.op.op_type, "why": suspect.why, "verdict": suspect.verdict,
                         "reason": suspect.reason, "todo": suspect.todo, "run_number": run_number,
                         "point": point, "made": _made_at(data, suspect.op.npu_op)})
    verdicts, runs = outcome_lines(answer)
    return {"suspects": suspects, "notes": [line.plain.strip() for line in verdicts],
            "runs": [line.plain for line in runs]}


def _made_at(data: ReportData, op: str) -> list[str]:
    """'made at network.py:91 in build_model(): <the line>' per place of the op, as the terminal says it."""
    if data.sources is None:
        return []
    made = []
    for number in data.sources.of_op.get(op, ()):
        place, line, first, lines = data.sources.places[number]
        code = lines[line - first].strip() if 0 <= line - first < len(lines) else ""
        made.append(f"made at {place}" + (f": {code}" if code else ""))
    return made


def _divergent_context(data: ReportData) -> dict[str, Any] | None:
    found = data.first_divergent
    if found is None:
        return None
    run, op = found
    tensor = deciding_output(op, data.threshold)  # the output the answer block under the headline quotes
    facts = data.ops.get(op.npu_op)
    # its verdict is in the answer block below the headline
    return {"op": op.npu_op, "id": op.index, "type": facts.type if facts else op.op_type, "run": run.label,
            "tensor": tensor.tensor_index if tensor else "", "cosine": number_text(tensor.cosine) if tensor else "",
            "nan_data": bool(tensor and tensor.nan_data),
            "point": next((i for i, p in enumerate(run.points) if p.op == op.npu_op), None),
            "run_number": data.runs.index(run)}


def render_report(data: ReportData, page_dir: Path) -> str:
    """The page's HTML text."""
    import jinja2

    env = jinja2.Environment(loader=jinja2.FileSystemLoader(str(ASSETS)), autoescape=True,
                             undefined=jinja2.StrictUndefined, trim_blocks=True, lstrip_blocks=True)
    svg, svg_note = subgraph_svg(data)
    replay_links = []
    if data.replay_file is not None:
        replay_links = [(relative_link(p, page_dir), p.name) for p in (data.replay_file, data.replay_file.with_name("replay.csv"))
                        if p.is_file()]
    context = {
        "data": data, "runs": _runs_context(data, page_dir), "divergent": _divergent_context(data),
        "answer": _answer_context(data),
        "tables": table_rows(data), "svg": svg, "svg_note": svg_note, "notes": list(data.notes),
        "replay_links": replay_links, "thresholds": sorted(data.thresholds.items()),
        "page_json": _script_safe(json.dumps(page_json(data), separators=(",", ":"), allow_nan=False)),
        "chart_js": _raw_asset("chart.js") + _raw_asset("chart_bars.js"), "report_js": _raw_asset("report.js"), "report_css": _raw_asset("report.css"),
        "overflow_total": data.overflows.total if data.overflows is not None else 0,
        "result_dir": relative_link(data.result_dir, page_dir) if data.result_dir else None,
        "ranking": ({"count": sum(1 for r in data.ranking if r.get("Rank")), "name": data.ranking_file.name,
                     "link": relative_link(data.ranking_file, page_dir)}
                    if data.ranking and data.ranking_file is not None else None),
        "replay_chart_js": _raw_asset("replay_chart.js") if data.ranking else "",
        "loss": data.loss, "loss_js": _raw_asset("loss.js"),  # the loss-curves panel (report_assets/loss.js)
        "loss_json": _script_safe(json.dumps(data.loss.data, separators=(",", ":"), allow_nan=False)) if data.loss else "",
        "steps": _steps_context(data),
        "explore": relative_link(data.explore_dir, page_dir) if data.explore_dir else None,
    }
    return env.get_template("report.html.j2").render(**context)


def _steps_context(data: ReportData) -> dict[str, Any] | None:
    """The step panel (several steps, `vc --step all`): its JSON and its script, steps.js."""
    if data.steps is None:
        return None
    panel = data.steps.page_json(data.threshold)
    return {**panel, "json": _script_safe(json.dumps(panel, separators=(",", ":"), allow_nan=False)),
            "js": _raw_asset("steps.js")}


def write_report(data: ReportData, page_dir: Path) -> WrittenReport:
    """Write page_dir/report.html (atomically: a temp name, then a rename)."""
    from precision_tool.atomic import write_text_atomic

    page_dir.mkdir(parents=True, exist_ok=True)
    text = render_report(data, page_dir)
    path = page_dir / "report.html"
    write_text_atomic(path, text)
    return WrittenReport(path, path.stat().st_size)
