"""The answer block `ac` and `demo` end with, right above the prompt (analysis/report/answer.py gathers it): the first
divergent op and the first op to produce Inf/NaN, each with its verdict and what to do, one line per run, and
where the results and the report are. Paths and lines to paste are never wrapped by us: each sits on a line
of its own, indented under what it belongs to, and copies whole."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from rich.rule import Rule
from rich.text import Text

from precision_tool.analysis.report.answer import Answer, RunResult, Suspect
from precision_tool.render.compare.compare import made_at_lines, op_ref
from precision_tool.render.replay import VERDICT_STYLE

INDENT = "  "
TODO_INDENT = "      "  # under the text after "  do: "


def _whole(text: str, indent: str, style: str) -> Text:
    """A path or a line to paste: indented, never wrapped by us (the terminal folds it only if it must)."""
    line = Text(indent)
    line.append(text, style=style)
    line.no_wrap = True
    return line


def _code_lines(code: str, width: int | None) -> list[Text]:
    """A line to paste (`custom_op = ...keep_in_float32(custom_op, "PATH")`): one line when it fits, else
    broken inside its parentheses, where Python lets it break, with the path alone on the last line."""
    if width is None or len(TODO_INDENT) + len(code) <= width or "(" not in code or ", " not in code:
        return [_whole(code, TODO_INDENT, "green")]
    head, _, args = code.partition("(")
    first, _, last = args.partition(", ")
    return [_whole(f"{head}(", TODO_INDENT, "green"), _whole(f"{first},", TODO_INDENT + "    ", "green"),
            _whole(last, TODO_INDENT + "    ", "green")]


def suspect_lines(suspect: Suspect, width: int | None = None, sources: Any = None) -> list[Text]:
    """A suspect's head line, the user's line that made it (given the golden run's `sources`), its verdict
    and what to do."""
    head = Text(f"{suspect.role}: ", style="bold")
    head.append(op_ref(suspect.op), style="op")
    head.append(f" ({suspect.op.op_type}), {suspect.why}")
    made = made_at_lines(sources, suspect.op.golden_op) if sources is not None else []
    verdict = Text(INDENT)
    if suspect.verdict is None:
        verdict.append("not replayed", style="dim")
    else:
        verdict.append(suspect.verdict.upper(), style=VERDICT_STYLE.get(suspect.verdict, "bold"))
        verdict.append(f": {suspect.reason}")
    lines = [head, *made, verdict]
    for n, todo in enumerate(suspect.todo):
        line = Text(INDENT)
        line.append("do: " if n == 0 else "    ", style="bold")
        line.append(todo.what)
        lines.append(line)
        if todo.path:
            lines.append(_whole(todo.path, TODO_INDENT, "path"))
        if todo.code:
            lines.extend(_code_lines(todo.code, width))
    return lines


def run_line(run: RunResult) -> Text:
    """`label: first divergent op [16] bn2/FusedBatchNormV3; 94 ops (52 abnormal) · 86 outputs: ...`, in the
    words of `vc`'s run lines (a statistics compare: its first divergent tensor and verdict counts)."""
    from precision_tool.render.compare.compare import verdict_and_counts

    verdict, counts = verdict_and_counts(run.summary)
    line = Text(f"{run.label}: ")
    line.append_text(verdict)
    line.append(f"; {counts}", style="dim")
    return line


def outcome_lines(answer: Answer) -> tuple[list[Text], list[Text]]:
    """What the answer says after its suspects, for the terminal and the report alike: (the notes, or a
    multi-device comparison's rank verdict and what to run next; a line per run, where the rank that went
    wrong first, else the lowest, speaks for the others)."""
    from precision_tool.render.compare.ranks import across_lines, verdict_lines

    ranks = answer.ranks
    verdicts: list[Text] = []
    if ranks is not None and ranks.report is not None:
        # the rank verdict says where it starts; the per-rank note of the first rank would say it again
        verdicts.extend(verdict_lines(ranks.report)[:2])
        verdicts.extend(line for line in across_lines(ranks)[:1] if isinstance(line, Text))
        verdicts.extend(_rank_todo(ranks.report))
    else:
        for note in answer.notes:
            verdicts.append(Text(note, style="warning" if "no first divergent op:" in note else "ok"))
    runs = list(answer.runs)
    if ranks is not None:
        pick = ranks.first_rank if ranks.first_rank is not None else min(ranks.ranks, default=None)
        runs = [r for r in answer.runs if r.rank in (None, pick) and not r.npu_vs_npu]
    lines = [run_line(run) for run in runs]
    shown = {id(r) for r in runs}
    hidden = [r for r in answer.runs if id(r) not in shown]
    if hidden:
        golden = sum(1 for r in hidden if not r.npu_vs_npu)
        kinds = [f"{golden} more rank(s) against golden"] if golden else []
        kinds += [f"{len(hidden) - golden} NPU against NPU"] if len(hidden) > golden else []
        lines.append(Text(f"{len(hidden)} more result CSVs ({', '.join(kinds)}) in the same folder (`vcs --rank N` "
                          "shows rank N)", style="dim"))
    return verdicts, lines


def _rank_todo(report: Any) -> list[Text]:
    """What to run next on the rank that went wrong first (or, when all fail alike, on the op itself)."""
    op = next((f.first_op for f in report.findings if f.rank in report.first_ranks), None)
    if op is None or not report.first_ranks:
        return []
    rank = report.first_ranks[0]
    line = Text(INDENT)
    line.append("do: ", style="bold")
    line.append(f"`vcs --rank {rank}` lists rank {rank}'s abnormal ops; `ni {op.npu_op}` shows its tensors on "
                "every rank against golden")
    return [line]


def answer_view(answer: Answer, *, results: Path | None = None, report: Path | None = None,
                width: int | None = None, sources: Any = None) -> list[Any]:
    """The block, under a rule titled "answer". `results`: the result folder; `report`: the page just written;
    `width`: the terminal's, for the lines to paste (None: a pipe, one line each); `sources`: the golden
    run's record of where each op was made (formats/tf/op_sources.py), None when there is none."""
    parts: list[Any] = [Rule("[bold]answer[/bold]", align="left")]
    for suspect in answer.suspects:
        parts.extend(suspect_lines(suspect, width, sources))
    verdicts, runs = outcome_lines(answer)
    parts += verdicts + runs
    if results is not None:
        parts.append(Text("results (`vcs -l N` lists more abnormal ops):"))
        parts.append(_whole(str(results), INDENT, "path"))
    if report is not None:
        parts.append(Text("report (one HTML file, opens offline):"))
        parts.append(_whole(str(report), INDENT, "path"))
    return parts
