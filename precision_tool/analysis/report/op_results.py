"""What the comparison and the replays found about one op, for `ni`: its rows in each result CSV of the
newest result folder (each CSV read once; only the lines naming the op are parsed, so a 20,000-op result
costs a substring scan, not a full parse) and its newest replay verdict.

Never raises for a bad file: each unreadable CSV or replay.json is one problem line, and the rest is kept.
"""

from __future__ import annotations

import csv
import dataclasses
import io
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

from precision_tool.analysis.results.results import group_ops, read_result_text, result_files, summarize
from precision_tool.analysis.results.result_ops import NAN_DATA_TEXTS, OpResult, TensorCosine
from precision_tool.analysis.results.metric_names import NAN_TEXT
from precision_tool.errors import FormatError

GOLDEN, NPU, ACROSS, STATS = "golden", "npu", "across", "stats"
"""Kinds of run: NPU vs golden, NPU vs NPU, a rank vs rank 0 (`vc --across-ranks`), a statistics compare."""


@dataclass(frozen=True)
class RunRows:
    """One comparison run (one CSV) of the result folder and this op's tensors in it."""

    label: str  # 'debug_0 vs golden', 'debug_0 vs debug_1', 'rank 3 vs golden', 'rank 1 vs rank 0'
    path: Path
    kind: str
    op: OpResult | None  # None: the op has no row in this CSV
    rank: int | None = None
    graph: str | None = None  # the Build graph the run compared (None: any, or unknown)
    complete: bool = True


@dataclass(frozen=True)
class OpComparison:
    """The op in the newest result folder; `folder` None when there is no comparison at all."""

    folder: Path | None
    runs: tuple[RunRows, ...] = ()
    problems: tuple[str, ...] = ()
    threshold: float = 0.98
    first_ranks: tuple[int, ...] = ()
    """The rank(s) that went wrong first (ranks.RankReport.first_ranks); () for a single device."""
    first_tensor: str = ""
    """The first failing tensor of the first rank ('allreduce/fc1_kernel/HcomAllReduce:input:0')."""


@dataclass(frozen=True)
class ReplayFinding:
    """One op's entry of a replay.json (written by replay.save_results)."""

    path: Path
    op: str
    verdict: str
    line: str
    debug_id: int | None = None
    op_id: Any = None
    upstream: str | None = None
    fixes: tuple[str, ...] = ()

    @property
    def reason(self) -> str:
        """The verdict's line without its leading 'kernel: '."""
        from precision_tool.analysis.replay.replay_verdict import verdict_reason

        return verdict_reason(self.verdict, self.line)


def tensor_position(tensor_index: str) -> tuple[str, int] | None:
    """'op:input:2' → ('input', 2); None for a row without a tensor."""
    parts = tensor_index.rsplit(":", 2)
    if len(parts) == 3 and parts[1] in ("input", "output") and parts[2].isdigit():
        return parts[1], int(parts[2])
    return None


# --- the comparison -------------------------------------------------------------------------------
def newest_result_folder(workspace: Any) -> Path | None:
    """The newest result folder holding a result CSV (a failed run's empty folder is skipped, as vcs does)."""
    for folder in reversed(workspace.result_dirs()):
        if result_files(folder):
            return folder
    return None


def op_comparison(workspace: Any, names: Sequence[str], threshold: float) -> OpComparison:
    """Rows of the op (spelled as the graph or as dump files spell it: `names`) in every CSV of the newest
    result folder; for a multi-rank result also which rank went wrong first."""
    from precision_tool.analysis.compare.compare_runs import result_spec
    from precision_tool.analysis.results.stats_results import is_stats_result
    from precision_tool.formats.npu.npu_dump import sanitize_op_name

    folder = newest_result_folder(workspace)
    if folder is None:
        return OpComparison(None, threshold=threshold)
    wanted = set(names) | {sanitize_op_name(n) for n in names}
    runs: list[RunRows] = []
    problems: list[str] = []
    ranked: list[tuple[Any, Any]] = []  # (spec, summary) of each rank's run against golden
    for path in result_files(folder):
        spec = result_spec(path)
        label, kind, rank = _run_label(workspace, spec, path)
        graph = spec.graph_name if spec is not None else None
        complete = not path.name.endswith(".partial")
        if not complete:
            label += " (interrupted)"  # `vc --resume` finishes it
        if is_stats_result(path):
            runs.append(RunRows(label, path, STATS, None, rank, graph, complete))
            continue
        try:
            text = path.read_text(encoding="utf-8", errors="replace")
            rows = _op_rows(text, path, wanted)
            if kind == GOLDEN and rank is not None:
                ranked.append((spec, _leading_summary(text, path, threshold, spec.name_only)))
        except OSError as exc:
            problems.append(f"cannot read {path} ({exc.strerror or exc}); `vc` writes a new comparison")
            continue
        except FormatError as exc:
            problems.append(f"{exc}; `vc` writes a new comparison")
            continue
        runs.append(RunRows(label, path, kind, rows, rank, graph, complete))
    first_ranks, first_tensor = _first_ranks(ranked, workspace)
    runs.sort(key=lambda r: r.kind == ACROSS)  # each rank against its golden first, then against rank 0
    return OpComparison(folder, _distinct_labels(runs), tuple(problems), threshold, first_ranks, first_tensor)


def _run_label(workspace: Any, spec: Any, path: Path) -> tuple[str, str, int | None]:
    if spec is None:
        return path.name, NPU if "npu_vs_npu" in path.name else GOLDEN, None
    if spec.rank is not None:
        if spec.across_ranks:
            return f"rank {spec.rank} vs rank 0", ACROSS, spec.rank
        if spec.npu_vs_npu:  # a rank against another run's same rank
            return spec.label, NPU, spec.rank
        return f"rank {spec.rank} vs golden", GOLDEN, spec.rank
    if spec.npu_vs_npu:
        return spec.label, NPU, None
    debug_id = workspace.run_of(workspace.relocate(spec.npu_dir))
    simulated = " (simulated)" if workspace.is_simulated(debug_id) else ""
    return (f"debug_{debug_id}{simulated} vs golden" if debug_id is not None else spec.label), GOLDEN, None


def _distinct_labels(runs: list[RunRows]) -> tuple[RunRows, ...]:
    """Short labels, unless two runs would share one (several graphs): then each run's CSV name."""
    labels = [r.label for r in runs]
    return tuple(dataclasses.replace(r, label=r.path.name) if labels.count(r.label) > 1 else r for r in runs)


def _rows_naming(text: str, path: Path, names: set[str]) -> Any:
    """The ResultTable of the header and the lines that hold one of `names`: str.find over the whole text
    (C speed, no per-line Python work), then only those lines are parsed."""
    header_end = text.find("\n")
    header_end = len(text) if header_end < 0 else header_end
    if not text[:header_end].strip():
        raise FormatError(path, "the file is empty; it is not a comparison result")
    spans = set()
    for name in names:
        start = text.find(name, header_end)
        while start >= 0:
            end = text.find("\n", start)
            end = len(text) if end < 0 else end
            spans.add((text.rfind("\n", 0, start) + 1, end))
            start = text.find(name, end)
    return read_result_text("\n".join([text[:header_end]] + [text[a:b] for a, b in sorted(spans)]), path)


def _op_rows(text: str, path: Path, wanted: set[str]) -> OpResult | None:
    """This op's rows, grouped as vcs groups them."""
    table = _rows_naming(text, path, wanted)
    rows = [r for r in table.rows if r.kind and r.tensor_op in wanted]
    if not rows:
        return None
    # one op per CSV: several groups naming it (never in our CSVs) are merged, inputs and outputs in order
    ops = group_ops(dataclasses.replace(table, rows=tuple(rows)))
    first = ops[0]
    if len(ops) == 1:
        return first
    return OpResult(first.index, first.npu_op, first.golden_op, first.op_type,
                    tuple(t for op in ops for t in op.inputs), tuple(t for op in ops for t in op.outputs),
                    tuple(r for op in ops for r in op.reasons), tuple(o for op in ops for o in op.overflowed))


def _leading_summary(text: str, path: Path, threshold: float, name_only: bool) -> Any:
    """The summary the rank summary needs, without parsing the whole file into records: the op holding the
    first failing tensor summarized from its own rows, after a placeholder per op before it (they all pass:
    only their names count, for its position in execution order)."""
    reader = csv.reader(io.StringIO(text, newline=""))
    try:
        header = [h.strip() for h in next(reader)]
    except (StopIteration, csv.Error):
        raise FormatError(path, "the file is empty or not CSV; it is not a comparison result") from None
    if "TensorIndex" not in header or "CosineSimilarity" not in header:
        raise FormatError(path, "has no TensorIndex or CosineSimilarity column; it is not an msaccucmp/vc result CSV")
    tensor_col, cosine_col = header.index("TensorIndex"), header.index("CosineSimilarity")
    index_col = header.index("Index") if "Index" in header else tensor_col
    npu_col = header.index("NPUDump") if "NPUDump" in header else tensor_col
    type_col = header.index("OpType") if "OpType" in header else npu_col
    width = max(tensor_col, cosine_col, index_col, npu_col, type_col) + 1
    earlier: dict[tuple[str, str], str] = {}  # (Index, op) → type, in order of first appearance (as group_ops)
    failing = None
    last_index, last_prefix = None, None
    try:
        for record in reader:  # the hot loop of a 20,000-op result: as little work per row as possible
            if len(record) < width:
                continue
            tensor, index = record[tensor_col], record[index_col]
            try:
                value = float(record[cosine_col])
            except ValueError:
                value = math.nan
            if not threshold < value < math.inf:  # fails, or not computed: decide as TensorCosine does
                parts = tensor.rsplit(":", 2)
                if tensor_position(tensor) and _fails(record[cosine_col], threshold):
                    failing = (index, parts[0])
                    break
            if index == last_index and last_prefix is not None and tensor.startswith(last_prefix):
                continue  # the same op as the row before
            parts = tensor.rsplit(":", 2)
            key = (index, parts[0] if len(parts) == 3 else record[npu_col])
            earlier.setdefault(key, record[type_col])
            last_index, last_prefix = index, key[1] + ":"
    except csv.Error as exc:
        raise FormatError(path, f"line {reader.line_num}: not valid CSV ({exc})") from None
    if failing is None:  # nothing fails: no first failure
        return summarize(read_result_text(text.split("\n", 1)[0], path), threshold, name_only=name_only)
    table = _rows_naming(text, path, {failing[1]})
    table = dataclasses.replace(table, rows=tuple(r for r in table.rows if (r.index, r.tensor_op) == failing))
    summary = summarize(table, threshold, name_only=name_only)
    before = tuple(OpResult(index, name, name, op_type, (), ()) for (index, name), op_type in earlier.items()
                   if (index, name) != failing)
    return dataclasses.replace(summary, ops=before + summary.ops)


def _fails(cell: str, threshold: float) -> bool:
    """TensorCosine.fails on a raw CosineSimilarity cell (as group_ops reads it)."""
    value = cell.strip()
    try:
        cosine = float(value)
    except ValueError:
        cosine = math.nan
    nan_data = value.lower() in NAN_DATA_TEXTS and value != NAN_TEXT
    return TensorCosine("", cosine, nan_data).fails(threshold)


def _first_ranks(ranked: list[tuple[Any, Any]], workspace: Any) -> tuple[tuple[int, ...], str]:
    from precision_tool.analysis.ranks import overview_of

    if not ranked:
        return (), ""
    overview = overview_of(ranked, workspace)  # golden runs only: it reads no graph
    report = overview.report if overview is not None else None
    if report is None or not report.first_ranks:
        return (), ""
    finding = next(f for f in report.findings if f.rank == report.first_ranks[0])
    failure = finding.summary.first_failure
    return report.first_ranks, failure.tensor.tensor_index if failure is not None else ""


# --- the replay verdict ---------------------------------------------------------------------------
def replay_files(workspace: Any, result_folder: Path | None) -> list[Path]:
    """The replay.json files `ac -c` (<result folder>/replay/), `ac -c --precheck` (<result folder>/precheck/),
    `replay OP` and `replay --all` (temp/replay/<time>/) wrote, newest first."""
    from precision_tool.analysis.replay.replay import JSON_NAME

    found = []
    if result_folder is not None:
        found += [result_folder / "replay" / JSON_NAME, result_folder / "precheck" / JSON_NAME]
    root = workspace.temp_dir / "replay"
    if root.is_dir():
        found += [folder / JSON_NAME for folder in root.iterdir() if folder.is_dir()]
    dated = []
    for path in found:
        try:
            dated.append((path.stat().st_mtime, str(path), path))
        except OSError:
            continue  # no such file: nothing replayed there
    return [path for _, _, path in sorted(dated, reverse=True)]


def _newest_replays(workspace: Any, result_folder: Path | None,
                    debug_ids: set[int]) -> tuple[dict[str, tuple[Path, dict[str, Any]]], list[FormatError]]:
    """Per op of the runs `debug_ids` (empty: any), its newest verdict among replay_files with the file that
    holds it: a replay that failed (no finding about the op) only when no other verdict exists. Also each
    replay.json that could not be read."""
    from precision_tool.analysis.replay.replay import read_replay_file

    found: dict[str, tuple[Path, dict[str, Any]]] = {}
    failed: dict[str, tuple[Path, dict[str, Any]]] = {}
    unread: list[FormatError] = []
    for path in replay_files(workspace, result_folder):  # newest first
        try:
            verdicts = read_replay_file(path)
        except FormatError as exc:
            unread.append(exc)
            continue
        for verdict in verdicts:
            debug_id = verdict.get("debug_id")
            if debug_ids and isinstance(debug_id, int) and debug_id not in debug_ids:
                continue
            (failed if verdict.get("failed") else found).setdefault(verdict["op"], (path, verdict))
    return {**failed, **found}, unread


def _fixes(workspace: Any, verdict: dict[str, Any]) -> tuple[str, ...]:
    fixes = verdict.get("fixes")
    return tuple(str(_moved(workspace, str(f))) for f in fixes) if isinstance(fixes, list) else ()


def newest_verdicts(workspace: Any, result_folder: Path | None, debug_ids: set[int]) -> list[dict[str, Any]]:
    """Per op, its newest replay verdict (as `_newest_replays` chooses it), as replay.json writes it, its fix
    paths in this workspace (a copied one included); a replay.json that cannot be read counts as none (`ni`
    names it)."""
    chosen, _ = _newest_replays(workspace, result_folder, debug_ids)
    return [{**verdict, "fixes": list(_fixes(workspace, verdict))} for _, verdict in chosen.values()]


def op_replay(workspace: Any, name: str, debug_ids: Sequence[int],
              result_folder: Path | None = None) -> tuple[ReplayFinding | None, tuple[str, ...]]:
    """The op's verdict as `ac`'s answer and the report see it (newest_verdicts), and a line per replay.json
    that could not be read."""
    chosen, unread = _newest_replays(workspace, result_folder, set(debug_ids))
    problems = tuple(f"{exc}; `ni -c {name}` replays the op again" for exc in unread)
    if name not in chosen:
        return None, problems
    path, item = chosen[name]
    debug_id, upstream = item.get("debug_id"), item.get("upstream")
    return ReplayFinding(path, name, item["verdict"], str(item.get("line") or item["verdict"]),
                         debug_id if isinstance(debug_id, int) else None, item.get("op_id"),
                         upstream if isinstance(upstream, str) else None, _fixes(workspace, item)), problems


def _moved(workspace: Any, recorded: str) -> Path:
    """A fix path as replay.json records it (absolute): in a copied workspace, the copy's own fix/ file."""
    path = Path(recorded)
    parts = path.parts
    if "fix" in parts:  # (workspace.relocate knows npu/, tf/, temp/...; the fixes live in fix/)
        moved = workspace.fix_dir.joinpath(*parts[len(parts) - parts[::-1].index("fix"):])
        if moved.exists():
            return moved
    return workspace.relocate(path)
