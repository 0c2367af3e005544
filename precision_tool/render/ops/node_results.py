"""What `ni` shows of the comparison and the replays of one op: the cosine similarity and max absolute
error of each of its tensors in each run of the newest result folder, the rank that went wrong first, and
its replay verdict with the fix (or how to get one).

The numbers table is laid out to fit the terminal: tensors as rows and runs as columns when they fit, else
runs as rows and tensors as columns (a multi-rank result: many runs, few tensors), else a row per tensor
and run. Failing values are marked ✗ as `vcs` marks them.
"""

from __future__ import annotations

import math
from typing import Any, Sequence

from rich.text import Text

from precision_tool.analysis.report.op_results import ACROSS, STATS, OpComparison, ReplayFinding, tensor_position
from precision_tool.render.dumps import number as number_text

LABEL = 13  # as node_info's fact labels
INDENT = "      "
GAP = "  "
FIRST = "◀ went wrong first"


def comparison_lines(found: OpComparison, name: str, width: int, graph: str | None = None,
                     golden_hint: str | None = None) -> list[Text]:
    """The 'Compared' section: where the numbers come from, then the table (or why there is none).
    `golden_hint`: what to run when the workspace has no golden tensors yet."""
    head = Text(f"  {'Compared':<{LABEL}}", style="bold")
    if found.folder is None:
        if golden_hint:
            return [head.append(f"no golden tensors yet (then `ac -c` compares the whole network): {golden_hint}",
                                style="dim"), *_problems(found.problems)]
        return [head.append("no comparison yet: `vc` (or `ac -c`) compares the whole network against golden",
                            style="dim"), *_problems(found.problems)]
    runs = [r for r in found.runs if graph is None or r.graph in (None, graph)]
    head.append("newest result folder ", style="dim").append(str(found.folder))
    head.append(f"  (✗: cosine ≤ {found.threshold:g} or Inf/NaN)", style="dim")
    out = [head, *_problems(found.problems)]
    if golden_hint:
        out.append(Text(f"    no golden tensors yet: {golden_hint}", style="dim"))
    for run in runs:
        if run.kind == STATS:
            out.append(Text(f"    {run.label}: a statistics compare (no cosine): `vcs` shows its verdicts",
                            style="dim"))
    tensor_runs = [r for r in runs if r.kind != STATS]
    if not any(r.op is not None for r in tensor_runs):
        if tensor_runs:
            out.append(Text(f"    {name} has no row in these result CSVs (not dumped, or not in the graphs compared)",
                            style="dim"))
        return out
    out.append(_table([r for r in tensor_runs if r.op is not None], found, width))
    missing = [r.label for r in tensor_runs if r.op is None]
    if missing:
        out.append(Text(f"    no row in: {', '.join(missing)}", style="dim"))
    if any(r.kind == ACROSS and r.op is not None for r in tensor_runs):
        out.append(Text("    vs rank 0 rows are not marked ✗: each rank computes its own batch, and only the ops "
                        "after the collectives must agree (`vcs` names those that do not)", style="dim"))
    if found.first_ranks:
        ranks = ", ".join(str(r) for r in found.first_ranks)
        position = tensor_position(found.first_tensor)
        op = found.first_tensor.rsplit(":", 2)[0]
        where = f"{_short(*position)} of {op}" if position else found.first_tensor
        this = " (this op)" if op == name else ""
        out.append(Text(f"    rank {ranks} went wrong first: its first failing tensor is {where}{this}",
                        style="bold"))
    return out


def _short(kind: str, number: int) -> str:
    """'in0', 'out1': as vcs and replay name tensors (and apart from the statistics table's 'input 0')."""
    return f"{'in' if kind == 'input' else 'out'}{number}"


def _problems(problems: Sequence[str]) -> list[Text]:
    from precision_tool.render.messages import warning_line

    return [Text("    ").append(warning_line(p)) for p in problems]


def _cell(tensor: Any, marked: bool, threshold: float) -> tuple[str, str, bool]:
    """(cosine text, max abs error text, failing)."""
    if tensor is None:
        return "-", "-", False
    failing = marked and tensor.fails(threshold)
    cosine = "Inf/NaN" if tensor.nan_data else "NaN" if math.isnan(tensor.cosine) else f"{tensor.cosine:.6f}"
    error = "NaN" if math.isnan(tensor.max_abs_error) else number_text(tensor.max_abs_error)
    return cosine + (" ✗" if failing else ""), error, failing


def _tensors(runs: Sequence[Any]) -> list[tuple[str, int]]:
    """Every tensor any run has, inputs then outputs, by number."""
    found = {tensor_position(t.tensor_index) for r in runs for t in (*r.op.inputs, *r.op.outputs)}
    return sorted((p for p in found if p is not None), key=lambda p: (p[0] != "input", p[1]))


def _lookup(run: Any, position: tuple[str, int]) -> Any:
    tensors = run.op.inputs if position[0] == "input" else run.op.outputs
    return next((t for t in tensors if tensor_position(t.tensor_index) == position), None)


def _table(runs: Sequence[Any], found: OpComparison, width: int) -> Text:
    tensors = _tensors(runs)
    cells = {(i, j): _cell(_lookup(run, pos), run.kind != ACROSS, found.threshold)
             for i, run in enumerate(runs) for j, pos in enumerate(tensors)}
    run_names = [r.label + (f"  {FIRST}" if r.rank in found.first_ranks and r.kind != ACROSS else "")
                 for r in runs]
    tensor_names = [_short(kind, number) for kind, number in tensors]
    by_tensor = _matrix(tensor_names, "tensor", run_names,
                        [[cells[i, j] for i in range(len(runs))] for j in range(len(tensors))])
    if _fits(by_tensor, width):
        return by_tensor
    by_run = _matrix([r.label for r in runs], "run", tensor_names,
                     [[cells[i, j] for j in range(len(tensors))] for i in range(len(runs))],
                     [FIRST if name != run.label else "" for name, run in zip(run_names, runs)])
    if _fits(by_run, width):
        return by_run
    return _long(tensor_names, run_names, cells)


def _fits(text: Text, width: int) -> bool:
    return all(len(line) <= width for line in text.plain.split("\n"))


def _matrix(rows: list[str], corner: str, groups: list[str], cells: list[list[tuple[str, str, bool]]],
            marks: Sequence[str] = ()) -> Text:
    """Row labels down the left; per group (a run or a tensor) a cosine and a max-error column."""
    row_w = max(len(corner), *(len(r) for r in rows))
    cos_w = max([len("cosine")] + [len(c[0]) for line in cells for c in line])
    err_w = max([len("max abs err")] + [len(c[1]) for line in cells for c in line])
    group_w = [max(len(g), cos_w + len(GAP) + err_w) for g in groups]
    text = Text()
    text.append(INDENT + " " * row_w + GAP + GAP.join(g.ljust(w) for g, w in zip(groups, group_w)).rstrip() + "\n",
                style="dim")
    text.append(INDENT + corner.ljust(row_w) + GAP + GAP.join(
        f"{'cosine':<{cos_w}}{GAP}{'max abs err':>{err_w}}".ljust(w) for w in group_w).rstrip() + "\n", style="dim")
    for number, (label, line) in enumerate(zip(rows, cells)):
        text.append(INDENT + label.ljust(row_w))
        for (cosine, error, failing), w in zip(line, group_w):
            text.append(GAP)
            text.append(f"{cosine:<{cos_w}}", style="bad" if failing else None)
            text.append(f"{GAP}{error:>{err_w}}".ljust(w - cos_w))
        mark = marks[number] if number < len(marks) else ""
        if mark:
            text.append(f"{GAP}{mark}", style="bad")
        text.rstrip()
        text.append("\n")
    text.rstrip()
    return text


def _long(tensors: list[str], runs: list[str], cells: dict[tuple[int, int], tuple[str, str, bool]]) -> Text:
    """A row per tensor and run: fits any width a run label fits."""
    run_w = max(len("run"), *(len(r) for r in runs))
    cos_w = max([len("cosine")] + [len(c[0]) for c in cells.values()])
    text = Text(f"{INDENT}{'tensor / run':<{run_w + 2}}{GAP}{'cosine':<{cos_w}}{GAP}max abs err\n", style="dim")
    for j, tensor in enumerate(tensors):
        text.append(f"{INDENT}{tensor}\n")
        for i, run in enumerate(runs):
            cosine, error, failing = cells[i, j]
            text.append(f"{INDENT}  {run:<{run_w}}{GAP}")
            text.append(f"{cosine:<{cos_w}}", style="bad" if failing else None)
            text.append(f"{GAP}{error}\n")
    text.rstrip()
    return text


# --- the replay verdict ---------------------------------------------------------------------------
def replay_lines(finding: ReplayFinding | None, problems: Sequence[str], name: str) -> list[Text]:
    """The 'Replay' section: the verdict word, its reason, the fix or the op to look at next, and the file;
    or how to replay the op when it never was."""
    from precision_tool.render.replay import VERDICT_STYLE

    head = Text(f"  {'Replay':<{LABEL}}", style="bold")
    if finding is None:
        head.append(f"not replayed yet: `ni -c {name}` (or `replay {name}`) replays it on CPU and says why it "
                    "differs", style="dim")
        return [head, *_problems(problems)]
    where = f" (debug_{finding.debug_id})" if finding.debug_id is not None else ""
    head.append(finding.verdict.upper(), style=VERDICT_STYLE.get(finding.verdict, "bold"))
    head.append(f"{where}  {finding.reason}")
    out = [head]
    pad = " " * (2 + LABEL)
    if finding.verdict == "kernel":
        out += [Text(f"{pad}reproducer for the op's vendor: ").append(f, style="path") for f in finding.fixes]
    elif finding.verdict == "precision":
        from precision_tool.analysis.replay.replay_fixes import tf_config_line

        for path in finding.fixes:  # as `replay` says it: the file, then the line that applies it
            out.append(Text(f"{pad}fix: ").append(path, style="path").append(" keeps the op type in float32:"))
            out.append(Text(f"{pad}  {tf_config_line(path)}", style="green"))
    elif finding.fixes:
        out += [Text(f"{pad}fix: ").append(f, style="path") for f in finding.fixes]
    if finding.upstream:
        out.append(Text(f"{pad}look at next: ").append(finding.upstream, style="op"))
    out.append(Text(f"{pad}from ", style="dim").append(str(finding.path)))
    return out + _problems(problems)
