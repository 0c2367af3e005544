"""What a search tries, ranked, from what the workspace already knows.

bisect precision — NPU op types to keep in float32, in this order: the types the newest replay calls a
*precision* problem (ac -c's replay.csv, `replay --all`'s ranked.csv worst ErrorRatio first), then the
types of the base round's abnormal ops in graph order (its first divergent op first), then every other type
computing in float16 in the base round, the nearest upstream of its first divergent op first. Types with a
*kernel* verdict are left out (float32 does not fix a wrong kernel) and named; so are types that move no
numbers (Cast, TransData, Reshape, Data, Const, Variable) and types the base list already keeps in float32.

bisect fusion — the passes that fired in the base round's compile (effect_times > 0 in the fusion_result.json
it left, and those named on its Build graph's ops), those that fused its first divergent op first.
"""

from __future__ import annotations

import csv
from pathlib import Path
from typing import Any, Iterable

NOT_CANDIDATES = frozenset({"Cast", "TransData", "Data", "Const", "Variable", "NetOutput", "Reshape"})


def _newest(paths: Iterable[Path]) -> Path | None:
    found = [p for p in paths if p.is_file()]
    return max(found, key=lambda p: p.stat().st_mtime) if found else None


def _rows(path: Path | None) -> list[dict[str, str]]:
    if path is None:
        return []
    try:
        with path.open(encoding="utf-8", newline="") as handle:
            return list(csv.DictReader(handle))
    except (OSError, csv.Error, UnicodeDecodeError):
        return []  # a verdict file we cannot read only loses its ranking hints


def replay_verdicts(workspace: Any) -> tuple[list[tuple[str, str]], Path | None, Path | None]:
    """([(op type, verdict)] from the newest replay.csv then ranked.csv (worst first), their paths)."""
    root = workspace.vector_compare_dir
    replays = [*(root.glob("*/replay/replay.csv") if root.is_dir() else ()),  # ac -c's, beside its comparison
               *((workspace.temp_dir / "replay").glob("*/replay.csv") if (workspace.temp_dir / "replay").is_dir()
                 else ())]  # `replay OP`'s own
    replay_csv = _newest(replays)
    ranked_csv = _newest(root.glob("*/**/ranked.csv")) if root.is_dir() else None
    found = [(r.get("OpType", ""), r.get("Verdict", "").lower()) for r in _rows(replay_csv)]
    ranked = _rows(ranked_csv)

    def ratio(row: dict[str, str]) -> float:
        try:
            return -float(row.get("ErrorRatio") or 0)
        except ValueError:
            return 0.0

    found += [(r.get("OpType", ""), r.get("Verdict", "").lower()) for r in sorted(ranked, key=ratio)]
    return [(t, v) for t, v in found if t], replay_csv, ranked_csv


def kernel_types(verdicts: list[tuple[str, str]]) -> frozenset[str]:
    precision = {t for t, v in verdicts if v == "precision"}
    return frozenset(t for t, v in verdicts if v == "kernel" and t not in precision)


def precision_candidates(verdicts: list[tuple[str, str]], base_summary: Any, already_fp32: Iterable[str],
                         kernel: frozenset[str], nearby: Iterable[str] = ()) -> list[str]:
    """The ranked op types (see the module's docstring); `nearby`: the base round's float16 types, nearest
    upstream of its first divergent op first (`float16_types`), last."""
    skip = NOT_CANDIDATES | frozenset(already_fp32) | kernel
    ranked = [t for t, v in verdicts if v == "precision"]
    if base_summary is not None:
        first = base_summary.first_divergent_op
        if first is not None:
            ranked.append(first.op_type)
        ranked += [op.op_type for op in base_summary.abnormal_ops]
    ranked += list(nearby)
    return [t for t in dict.fromkeys(ranked) if t and t not in skip]


def float16_types(workspace: Any, debug_id: int | None, first_op: str | None) -> list[str]:
    """The op types computing in float16 in the run's Build graph, those nearest upstream of `first_op` first
    (an error a first divergent op only magnifies was made there), then those after it."""
    from precision_tool.formats.ge.ge_graph import load_graph

    if debug_id is None:
        return []
    ops = []
    for path in workspace.build_graph_files(debug_id):
        ops += [op for _, op in load_graph(path).iter_ops()]
    half = [op for op in ops if any("FLOAT16" in str(d.dtype).upper() for d in op.output_descs)]
    names = [op.name for op in half]
    at = names.index(first_op) if first_op in names else len(half)
    order = list(reversed(half[:at + 1])) + half[at + 1:]
    return list(dict.fromkeys(op.type for op in order))


def fired_passes(fusion_file: Path) -> list[str]:
    """The fusion passes that changed the graph (effect_times > 0) in a fusion_result.json."""
    from precision_tool.formats.ge.fusion_result import parse_fusion_result

    names: list[str] = []
    if fusion_file.is_file():
        for graph in parse_fusion_result(fusion_file):
            names += [p.name for p in (*graph.graph_fusion, *graph.ub_fusion) if p.effect_times > 0]
    return list(dict.fromkeys(names))


def op_passes(workspace: Any, debug_id: int) -> dict[str, set[str]]:
    """Each op of the run's Build graph → the passes that made it (pass_name, pass_name_ub)."""
    from precision_tool.formats.ge.ge_graph import load_graph

    found: dict[str, set[str]] = {}
    for path in workspace.build_graph_files(debug_id):
        model = load_graph(path, light=True)
        for _, op in model.iter_ops():
            names: set[str] = set()
            for key in ("pass_name", "pass_name_ub"):
                value = op.attrs.get(key)
                if isinstance(value, bytes):
                    value = value.decode("utf-8", "replace")
                if isinstance(value, str) and value:
                    names.add(value)
                elif isinstance(value, list):
                    names.update(str(v) for v in value if v)
            if names:
                found[op.name] = names
    return found


def fusion_candidates(fired: list[str], workspace: Any, debug_id: int | None, base_summary: Any) -> list[str]:
    """The fired passes and those named on the base round's Build graph, the ones that made its first
    divergent op (then its abnormal ops) first."""
    passes = op_passes(workspace, debug_id) if debug_id is not None else {}
    fired = list(dict.fromkeys([*fired, *sorted(set().union(set(), *passes.values()))]))
    first_names = []
    if base_summary is not None:
        ops = ([base_summary.first_divergent_op] if base_summary.first_divergent_op else []) + list(
            base_summary.abnormal_ops)
        for op in ops:
            first_names += sorted(passes.get(op.npu_op, set()))
    ranked = [p for p in dict.fromkeys(first_names) if p in fired]
    return ranked + [p for p in fired if p not in ranked]
