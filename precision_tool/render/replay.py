"""How `ni -c`, `replay` and `ac -c` show replay verdicts: the verdict in one line, the evidence below
it, then what to do (the fix written, the reproducer, the op to look at next)."""

from __future__ import annotations

from typing import Any

from rich.text import Text

VERDICT_STYLE = {"kernel": "bold red", "precision": "bold yellow", "inherited": "bold cyan", "ok": "bold green",
                 "cannot replay": "bold magenta"}


def verdict_text(verdict: Any, *, evidence: bool = True) -> Text:
    """One op's verdict: '[16] bn2/FusedBatchNormV3 (BatchNorm): KERNEL — ...' then evidence and advice."""
    from precision_tool.analysis.replay.replay_fixes import tf_config_line
    from precision_tool.analysis.replay.replay_verdict import verdict_reason

    case = verdict.case
    text = Text()
    text.append(f"replay {case.label}", style="bold")
    made_of = f" ← {', '.join(case.tf_nodes)}" if case.tf_nodes and list(case.tf_nodes) != [case.op_name] else ""
    text.append(f" ({case.op_type}{made_of}): ")
    text.append(verdict.verdict.upper(), style=VERDICT_STYLE.get(verdict.verdict, "bold"))
    text.append(f"\n  {verdict_reason(verdict.verdict, verdict.line)}")
    if evidence:
        for item in evidence_lines(verdict):
            text.append(f"\n    {item}", style="dim")
    if verdict.verdict == "precision":
        for path in verdict.fixes:
            text.append("\n  fix: ", style="bold")
            text.append(path, style="path")
            text.append(f" puts {case.op_type} on the mixed-precision block list (kept in float32); in the "
                        "training script's session config:")
            text.append(f"\n    {tf_config_line(path)}", style="green")
            text.append("\n  or build the op inside npu_scope.keep_dtype_scope() (TF2: npu.keep_dtype_scope()); "
                        "both need a mixed precision mode (allow_mix_precision)")
    elif verdict.verdict == "kernel":
        for path in verdict.fixes:
            text.append("\n  reproducer for the op's vendor: ", style="bold")
            text.append(path, style="path")
            text.append(" (inputs, NPU output, the TF ops; `python3 run.py` prints both)")
    elif verdict.verdict == "inherited" and verdict.upstream:
        text.append("\n  look at next: ", style="bold")
        text.append(verdict.upstream)
    return text


def _short(agreement: Any) -> str:
    if agreement.size_mismatch:
        return "sizes differ"
    text = f"cos {agreement.cosine:.6f} err {agreement.error:.1e}"
    if agreement.nonfinite_mismatch:
        text += f" {agreement.nonfinite_mismatch} Inf/NaN apart"
    return text + ("" if agreement.agrees else " ✗")


def evidence_lines(verdict: Any) -> list[str]:
    """Per output: how it compares with each replay and golden (outputs that agree everywhere in one line);
    per input that has a golden tensor: how far it is from it; then the replay's notes."""
    lines: list[str] = []
    quiet = [o for o in verdict.outputs if all(a.agrees for k, a in o.against.items() if k != "golden")
             and o.kind == "ok" and verdict.verdict != "ok"]
    for output in verdict.outputs:
        if output in quiet:
            continue
        parts = "; ".join(f"{name} {_short(a)}" for name, a in output.against.items())
        lines.append(f"out{output.index} {output.tf_tensor} {output.dtype}: {parts}")
    if quiet:
        lines.append(f"out{', out'.join(str(o.index) for o in quiet)}: agree with the replays")
    for item in verdict.inputs:
        if item.vs_golden is not None:
            # named as `ni` names it (the NPU graph's input), with the TF tensor its golden is when that differs
            name = item.npu_name or item.tf_tensor
            tf = f" (TF {item.tf_tensor})" if item.npu_name and item.tf_tensor and item.tf_tensor != item.npu_name else ""
            lines.append(f"in{item.index} {name}{tf} vs golden: {_short(item.vs_golden)}")
    lines += [note for note in verdict.evidence if not note.startswith(("output ", "input "))]
    return lines


BRIEF_AFTER = 10  # more verdicts than this (`ac --replay N`): the unremarkable ones are counted, not shown


def run_lines(run: Any, *, evidence: bool = True, brief: bool = False) -> list[Any]:
    """Every verdict of a replay run, then where the results were saved and how long it took. `brief` (many
    ops): the first verdict and every one that is not *inherited* or *ok* in full, the others counted."""
    from precision_tool.render.messages import note_line, warning_line

    verdicts = list(run.verdicts)
    if brief and len(verdicts) > BRIEF_AFTER:
        shown = [v for n, v in enumerate(verdicts) if n == 0 or v.verdict not in ("inherited", "ok")]
        out: list[Any] = [verdict_text(v, evidence=evidence) for v in shown]
        counted: dict[str, int] = {}
        for v in verdicts:
            if all(v is not s for s in shown):
                counted[v.verdict] = counted.get(v.verdict, 0) + 1
        if counted:
            counts = ", ".join(f"{n} {kind.upper()}" for kind, n in sorted(counted.items()))
            out.append(note_line(f"and {counts} (each in the replay CSV below; `ni -c OP` shows one)"))
    else:
        out = [verdict_text(v, evidence=evidence) for v in verdicts]
    out += [warning_line(problem) for problem in run.problems]
    seconds = sum(run.seconds.values())
    if run.csv_path is not None:
        out.append(note_line(f"replay results ({seconds:.1f} s, {run.seconds.get('child', 0):.1f} s in TensorFlow): "
                             f"{run.csv_path}"))
    return out


# --- replay --all ----------------------------------------------------------------------------------------
def _num(value: float | None) -> str:
    import math

    if value is None:
        return "-"
    if math.isinf(value):
        return "inf"
    if math.isnan(value):
        return "nan"
    if value >= 100:
        return f"{value:,.0f}"
    return f"{value:.3g}" if value >= 0.01 or value == 0 else f"{value:.1e}"


def _nonfinite(error: Any) -> str:
    if not error.apart:
        return ""
    if error.unexplained:
        return f"{error.unexplained} Inf/NaN float16 does not make"
    return f"{error.apart} Inf/NaN, as float16 makes them"


def _findings_below(errors: list[Any], limit: int) -> list[tuple[int, Any]]:
    """The kernel and precision ops ranked below the first `limit`, with their ranks, kernel ones first."""
    below = [(n, e) for n, e in enumerate(errors[limit:], limit + 1) if e.verdict.verdict in ("kernel", "precision")]
    return sorted(below, key=lambda item: (item[1].verdict.verdict != "kernel", item[0]))


def ranked_table(errors: list[Any], limit: int) -> Any:
    """The worst `limit` ops by ErrorRatio, then up to `limit` kernel or precision ops further down."""
    from rich.table import Table

    shown = list(enumerate(errors[:limit], 1))
    shown += _findings_below(errors, limit)[:limit]
    table = Table(show_edge=False, padding=(0, 1), title_justify="left",
                  title="worst by their own error (ratio: local error ÷ what the dtype does on the same inputs)")
    for name, justify in (("#", "right"), ("verdict", "left"), ("ratio", "right"), ("local err", "right"),
                          ("fp16 err", "right"), ("op", "left")):
        table.add_column(name, justify=justify, overflow="fold", no_wrap=name != "op")
    for rank, e in shown:
        case = e.verdict.case
        note = _nonfinite(e)
        table.add_row(str(rank), Text(e.verdict.verdict.upper(), style=VERDICT_STYLE.get(e.verdict.verdict, "bold")),
                      _num(e.ratio), _num(e.error), _num(e.float16_error),
                      f"[{case.op_id}] {case.op_name} ({case.op_type})" + (f"; {note}" if note else ""))
    return table


def all_lines(result: Any, *, limit: int = 10, evidence: bool = False) -> list[Any]:
    """What `replay --all` shows: how many ops ran where, the verdicts counted, the ranking, the comparison's
    abnormal ops explained, the ops that could not be replayed grouped by why, and where the results are."""
    from precision_tool.analysis.replay.replay_all import cannot_reasons, describe_abnormal
    from precision_tool.render.messages import note_line, warning_line

    run = result.run
    verdicts = list(run.verdicts)
    out: list[Any] = []
    replayed = len(verdicts) - len(result.cannot)
    seconds = sum(run.seconds.values())
    head = Text()
    at = f", step {result.step}" if result.step is not None else ""
    head.append(f"replay --all (npu/debug_{result.debug_id}{at}): ", style="bold")
    head.append(f"{replayed} of {len(verdicts)} compute ops replayed on CPU from their own NPU inputs "
                f"({result.not_computed} data, variables and constants left out) by {result.where} in "
                f"{seconds:.1f} s")
    out.append(head)
    counts: dict[str, int] = {}
    for v in verdicts:
        counts[v.verdict] = counts.get(v.verdict, 0) + 1
    line = Text("  ")
    for n, kind in enumerate(k for k in ("kernel", "precision", "inherited", "ok", "cannot replay") if k in counts):
        line.append(", " if n else "")
        line.append(f"{counts[kind]} {kind.upper()}", style=VERDICT_STYLE.get(kind, "bold"))
    out.append(line)
    errors = list(result.ranked)
    if errors:
        out.append(ranked_table(errors, limit))
        hidden = len(_findings_below(errors, limit)) - limit
        if hidden > 0:
            out.append(note_line(f"and {hidden} more KERNEL or PRECISION op(s) further down (each in the ranking "
                                 "below; `replay --all -l N` shows more)"))
    findings = sorted((e for e in errors if e.verdict.verdict in ("kernel", "precision")),
                      key=lambda e: e.verdict.verdict != "kernel")  # kernel first, each in rank order
    for e in findings[:limit]:
        out.append(verdict_text(e.verdict, evidence=evidence))
    if len(findings) > limit:
        out.append(note_line(f"{len(findings) - limit} more verdict(s) in full: `ni -c OP`, or replay.json"))
    if result.explained:
        kinds = describe_abnormal(result.explained)
        parts = [f"{kinds[k]} {label}" for k, label in (("own", "by their own error"),
                                                       ("inherited", "inherit it from upstream"),
                                                       ("ok", "within tolerance on their own inputs"),
                                                       ("not replayed", "not replayed")) if kinds.get(k)]
        out.append(Text(f"the comparison's {len(result.explained)} abnormal ops: {', '.join(parts)}", style="bold"))
        for item in [e for e in result.explained if e.kind == "own"][:limit]:
            out.append(Text(f"  [{item.op_id}] {item.op_name}: {item.text}"))
        inherited = [e for e in result.explained if e.kind == "inherited"]
        if inherited:
            first = inherited[0]
            out.append(Text(f"  [{first.op_id}] {first.op_name} and {len(inherited) - 1} more: {first.text}"
                            if len(inherited) > 1 else f"  [{first.op_id}] {first.op_name}: {first.text}"))
    if result.cannot:
        out.append(Text(f"cannot replay {len(result.cannot)} op(s):", style="bold"))
        groups = cannot_reasons(result.cannot)
        for reason, group in groups[:limit]:
            names = ", ".join(v.case.op_name for v in group[:3]) + (", ..." if len(group) > 3 else "")
            out.append(Text(f"  {len(group)} × {reason}  ({names})"))
        if len(groups) > limit:
            left = sum(len(group) for _, group in groups[limit:])
            out.append(Text(f"  and {left} more for {len(groups) - limit} other reason(s): the Reason column of the ranking"))
    out += [warning_line(problem) for problem in run.problems]
    out.append(note_line(f"ranking: {result.ranked_csv}; every output against every replay: {run.csv_path}"))
    return out
