"""Everything `explore` shows, collected from the newest comparison: the run's Build graph, the golden
graph, the comparison as Model Explorer node data (cosine and max absolute error with the `vcs` threshold,
NaN/Inf, the replay verdicts), and what clicking an op shows (what `ni` shows: type, fusion pass, TF ops,
source line, both sides' statistics from the CSV). `write_explore` writes the files a colleague opens in
their own Model Explorer."""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

from precision_tool.analysis.explore.explore_graphs import (
    NPU_GRAPH_ID, TF_GRAPH_ID, graphs_file, kv, mapping_json, npu_graph_json, tf_graph_json, tf_nodes_from_npu,
)
from precision_tool.errors import WorkspaceError

NPU_FILE = "npu_graph.json"
TF_FILE = "tf_graph.json"
MAPPING_FILE = "mapping.json"
COSINE_FILE = "cosine.json"
ERROR_FILE = "max_abs_error.json"
VERDICT_FILE = "verdict.json"
TF_COSINE_FILE = "tf_cosine.json"
INFO_FILE = "explore.json"

ABNORMAL = "#e53935"
NORMAL = "#c8e6c9"
NAN_INF = "#8e24aa"
VERDICT_COLOURS = {"kernel": "#e53935", "precision": "#fb8c00", "inherited": "#90a4ae"}
NAN_INF_VALUE = -1.0
"""The cosine node-data value of an op whose data holds NaN/Inf (drawn purple, below every threshold)."""


@dataclass(frozen=True)
class ExploreData:
    """The files of one `explore`, as JSON-ready objects, and what the page opens on."""

    npu_graph: dict[str, Any]
    tf_graph: dict[str, Any]
    mapping: dict[str, Any]
    node_data: dict[str, dict[str, Any]]
    """file name → Model Explorer node data (GraphNodeData)."""
    first_divergent: str | None
    first_tf_ops: tuple[str, ...]
    result_csv: Path
    tf_source: str
    """Where the TF graph came from (a file, or 'the Build graph's original op names')."""
    threshold: float
    notes: tuple[str, ...] = ()

    @property
    def op_count(self) -> int:
        return len(self.npu_graph["nodes"])


def _cell(value: float) -> str:
    return "NaN" if math.isnan(value) else f"{value:.6f}"


def _numbers(points: Sequence[Any]) -> tuple[dict[str, float], dict[str, float], set[str]]:
    """Per op: its outputs' lowest cosine, highest max absolute error, and the ops with NaN/Inf data."""
    cosine: dict[str, float] = {}
    error: dict[str, float] = {}
    nan_inf: set[str] = set()
    for p in points:
        if p.nan_data:
            nan_inf.add(p.op)
        if not math.isnan(p.cosine):
            cosine[p.op] = min(cosine.get(p.op, 2.0), p.cosine)
        if not math.isnan(p.max_abs_error):
            error[p.op] = max(error.get(p.op, 0.0), p.max_abs_error)
    return cosine, error, nan_inf


def _node_data(cosine: dict[str, float], error: dict[str, float], nan_inf: set[str],
               verdicts: dict[str, dict[str, Any]], threshold: float, graph_id: str) -> dict[str, dict[str, Any]]:
    cos_results: dict[str, Any] = {op: {"value": round(v, 6)} for op, v in cosine.items()}
    for op in nan_inf:
        cos_results[op] = {"value": NAN_INF_VALUE, "bgColor": NAN_INF}
    data = {
        COSINE_FILE: {graph_id: {"name": "cosine", "results": cos_results,
                                 # vcs: a cosine at or below the threshold is abnormal
                                 "thresholds": [{"value": threshold, "bgColor": ABNORMAL},
                                                {"value": 2, "bgColor": NORMAL}]}},
        ERROR_FILE: {graph_id: {"name": "max abs error",
                                "results": {op: {"value": v} for op, v in error.items() if math.isfinite(v)},
                                "gradient": [{"stop": 0, "bgColor": "#ffffff"}, {"stop": 1, "bgColor": ABNORMAL}]}},
    }
    if verdicts:
        data[VERDICT_FILE] = {graph_id: {"name": "replay verdict", "results": {
            op: {"value": v["verdict"], "bgColor": VERDICT_COLOURS.get(v["verdict"], "#bdbdbd")}
            for op, v in verdicts.items()}}}
    return data


def _tf_cosine(mapping: dict[str, Any], cosine: dict[str, float], nan_inf: set[str],
               threshold: float) -> dict[str, Any]:
    """The NPU ops' cosine on the TF ops they were made from (the worst, when several NPU ops share one)."""
    results: dict[str, Any] = {}
    for entry in mapping["mappingEntries"]:
        op = entry["leftNodeIds"][0]
        for tf_op in entry["rightNodeIds"]:
            if op in nan_inf:
                results[tf_op] = {"value": NAN_INF_VALUE, "bgColor": NAN_INF}
            elif op in cosine and results.get(tf_op, {}).get("value", 3) > cosine[op]:
                results[tf_op] = {"value": round(cosine[op], 6)}
    return {TF_GRAPH_ID: {"name": "cosine (of its NPU op)", "results": results,
                          "thresholds": [{"value": threshold, "bgColor": ABNORMAL}, {"value": 2, "bgColor": NORMAL}]}}


def _source_line(record: Any, names: Sequence[str]) -> str | None:
    from precision_tool.formats.tf.op_sources import user_frame

    for name in names:
        stack = record.stack(name) if record is not None else None
        frame = user_frame(stack) if stack else None
        if frame is not None:
            return frame.place
    return None


def collect_explore(workspace: Any, settings: Any, files: Sequence[Path]) -> ExploreData:
    """The explore files of the result CSVs `files` (the newest result folder's): its NPU-vs-golden run."""
    from precision_tool.analysis.compare.compare_runs import result_spec, workspace_labeller
    from precision_tool.analysis.explore.golden_graph import golden_graph_file, read_golden_nodes
    from precision_tool.analysis.graphs.graph_index import index_for
    from precision_tool.analysis.graphs.graph_summary import fusion_pass_text
    from precision_tool.analysis.replay.replay import read_replay
    from precision_tool.analysis.report.report_runs import build_graph_ops, output_points
    from precision_tool.analysis.results.results import read_result_csv, summarize
    from precision_tool.errors import FormatError
    from precision_tool.formats.tf.op_sources import read_op_sources

    notes: list[str] = []
    chosen = None
    for path in files:
        spec = result_spec(Path(path))
        if spec is not None and not spec.npu_vs_npu:
            chosen = (Path(path), spec)
            break
    if chosen is None:
        raise WorkspaceError(f"no NPU-vs-golden result with its run.json among {', '.join(str(f) for f in files)}; "
                             "run `vc` (or `ac -c`) on this workspace first")
    csv_path, spec = chosen
    debug_id = workspace.run_of(workspace.relocate(spec.npu_dir))
    index = index_for(workspace)
    index.load(full=True)
    ops_by_name, graph_file, _ = build_graph_ops(index, debug_id)
    if not ops_by_name:
        raise WorkspaceError(f"the run of {csv_path} has no Build graph in the workspace (npu/debug_N/graph/); "
                             "explore draws the Build graph, so it needs one")
    ops = list(ops_by_name.values())
    threshold = settings.COSINE_THRESHOLD
    labels = workspace_labeller(workspace)(spec)
    table = read_result_csv(csv_path)
    points, _ = output_points(table.rows, labels, threshold)
    summary = summarize(table, threshold, name_only=spec.name_only, labels=labels)
    cosine, error, nan_inf = _numbers(points)
    by_op: dict[str, list[Any]] = {}
    for p in points:
        by_op.setdefault(p.op, []).append(p)

    replay, _, problem = read_replay(csv_path.parent)
    if problem:
        notes.append(f"replay: {problem}")
    verdicts = {v["op"]: v for v in replay}
    try:
        record = read_op_sources(workspace.op_sources_file)
    except FormatError as exc:
        record = None
        notes.append(f"source lines: not shown: {exc}")

    first = None
    divergent = summary.first_divergent_op
    if divergent is not None:
        label = labels.get(divergent.npu_op) if labels is not None else None
        first = label.name if label is not None else divergent.npu_op
        if first not in ops_by_name:
            first = None

    def attrs_of(op: Any) -> list[dict[str, Any]]:
        names = [n for n in (op.original_op_names or ()) if n]
        found = [kv("type", op.type), kv("graph id", "" if op.id is None else op.id)]
        if op.name == first:
            found.append(kv("first divergent", "yes: its outputs fail while its inputs pass"))
        passes = fusion_pass_text(op)
        if passes:
            found.append(kv("fusion pass", passes))
        if names:
            found.append(kv("TF ops", "\n".join(names)))
        place = _source_line(record, names or [op.name])
        if place:
            found.append(kv("source line", place))
        if op.name in cosine or op.name in nan_inf:
            found.append(kv("cosine", "NaN/Inf in the data" if op.name in nan_inf else _cell(cosine[op.name])))
        if op.name in error:
            found.append(kv("max abs error", _cell(error[op.name])))
        verdict = verdicts.get(op.name)
        if verdict is not None:
            found.append(kv("replay verdict", verdict.get("line") or verdict["verdict"]))
        return found

    def outputs_of(op: Any) -> dict[int, list[dict[str, Any]]]:
        extra: dict[int, list[dict[str, Any]]] = {}
        for p in by_op.get(op.name, ()):
            slot = p.tensor.rpartition(":")[2]
            if slot.isdigit():
                extra[int(slot)] = [kv(key, value) for key, value in p.metrics.items() if value not in ("", "NaN")] \
                    + [kv("abnormal", "NaN/Inf" if p.nan_data else ("yes" if p.abnormal else "no"))]
        return extra

    npu_graph = npu_graph_json(ops, attrs_of, outputs_of)
    tf_nodes, tf_source = None, "the TF ops the Build graph names (no golden GraphDef in the workspace)"
    golden = golden_graph_file(workspace)
    if golden is not None:
        try:
            tf_nodes, tf_source = read_golden_nodes(golden), str(golden)
        except FormatError as exc:
            notes.append(f"golden graph: {exc}; the TF ops the Build graph names are drawn instead")
    if not tf_nodes:
        tf_nodes = tf_nodes_from_npu(ops)
    tf_names = {n.name for n in tf_nodes}
    made_from: dict[str, list[str]] = {}
    for op in ops:
        for name in op.original_op_names or ():
            made_from.setdefault(name, []).append(op.name)

    def tf_attrs(name: str) -> list[dict[str, Any]]:
        found = [kv("NPU ops", "\n".join(made_from[name]))] if name in made_from else []
        place = _source_line(record, [name])
        return found + ([kv("source line", place)] if place else [])

    tf_graph = tf_graph_json(tf_nodes, tf_attrs)
    mapping = mapping_json(ops, tf_names)
    node_data = _node_data(cosine, error, nan_inf, verdicts, threshold, NPU_GRAPH_ID)
    node_data[TF_COSINE_FILE] = _tf_cosine(mapping, cosine, nan_inf, threshold)
    first_tf = tuple(n for n in (ops_by_name[first].original_op_names or ()) if n in tf_names) if first else ()
    return ExploreData(npu_graph, tf_graph, mapping, node_data, first, first_tf, csv_path, tf_source, threshold,
                       tuple(notes))


def write_explore(data: ExploreData, folder: Path) -> list[Path]:
    """The files of `data` in `folder` (each written atomically); explore.json says what opens first."""
    from precision_tool.atomic import write_text_atomic

    def dump(name: str, obj: Any) -> Path:
        path = folder / name
        write_text_atomic(path, json.dumps(obj, separators=(",", ":")))
        return path

    written = [dump(NPU_FILE, graphs_file(data.npu_graph)), dump(TF_FILE, graphs_file(data.tf_graph)),
               dump(MAPPING_FILE, data.mapping)]
    written += [dump(name, obj) for name, obj in data.node_data.items()]
    written.append(dump(INFO_FILE, {
        "npu_graph": NPU_FILE, "tf_graph": TF_FILE, "mapping": MAPPING_FILE,
        "npu_graph_id": NPU_GRAPH_ID, "tf_graph_id": TF_GRAPH_ID,
        # Model Explorer colours by the node data added last: the cosine
        "npu_node_data": sorted((n for n in data.node_data if n != TF_COSINE_FILE), key=lambda n: n == COSINE_FILE),
        "tf_node_data": [TF_COSINE_FILE], "colour_by": COSINE_FILE,
        "first_divergent": data.first_divergent, "first_tf_ops": list(data.first_tf_ops),
        "result_csv": str(data.result_csv), "tf_source": data.tf_source, "threshold": data.threshold,
        "ops": data.op_count, "notes": list(data.notes)}))
    return written
