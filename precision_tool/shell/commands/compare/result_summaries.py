"""The comparison results `vcs` and `ac` show: which result CSVs (a file, a result folder, or the newest
folder under a root, skipping failed and empty runs with a warning), each read and summarised with the
workspace's op labels (a tensor compare or a statistics compare)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from precision_tool.shell.command import Context


@dataclass(frozen=True)
class Shown:
    """One result as vcs/ac show it: the run's label (from run.json, else the CSV name) and its summary."""

    label: str
    summary: Any
    """CompareSummary, or StatsSummary for a statistics compare (dump_data="stats")."""
    stats_rows: tuple[Any, ...] = ()
    npu_vs_npu: bool = False
    spec: Any = None
    """The RunSpec from run.json (its rank for a multi-device dump); None for a CSV without one."""


def summaries(ctx: Context, path: str | None, threshold: float) -> list[Shown]:
    """The results `vcs` (or `ac`) shows: `path` (a CSV, a result folder, or a folder of result folders:
    its newest), else the workspace's newest result folder. Ops are named as in the Build graph."""
    from precision_tool.analysis.compare.compare_runs import result_spec, workspace_labeller
    from precision_tool.analysis.results.digest_cache import summarize_result_csv
    from precision_tool.analysis.compare.stats_compare import is_stats_result, read_stats_result, summarize_stats

    files = chosen_results(ctx, path)
    labeller = workspace_labeller(ctx.workspace)
    # digests kept in the workspace's cache (none for a CSV read with no workspace around it)
    cache_dir = ctx.workspace.cache_dir if ctx.workspace.root.is_dir() else None
    shown = []
    for f in files:
        spec = result_spec(f)
        labels = labeller(spec) if spec is not None else None
        label = spec.label if spec is not None else f.name
        if is_stats_result(f):
            rows = read_stats_result(f)
            npu_vs_npu = spec.npu_vs_npu if spec is not None else any(r.ground_truth == r.tensor_index for r in rows)
            shown.append(Shown(label, summarize_stats(rows, f), rows, npu_vs_npu, spec))
            continue
        summary = summarize_result_csv(f, threshold, name_only=spec is not None and spec.name_only, labels=labels,
                                       cache_dir=cache_dir)
        shown.append(Shown(label, summary, npu_vs_npu=spec is not None and spec.npu_vs_npu, spec=spec))
    return shown


def run_summaries(runs: list[Any]) -> list[Shown] | None:
    """What `summaries` would read back from the CSVs the comparison runs just wrote, from the runs
    themselves (their summaries were made from those CSVs, with the same labels), in the same order;
    None when a run compared statistics (their rows are read from the CSV) or did not finish."""
    from precision_tool.analysis.results.results import CompareSummary

    if not runs or not all(isinstance(run.summary, CompareSummary) and run.csv_path.suffix == ".csv" for run in runs):
        return None
    return [Shown(run.spec.label, run.summary, npu_vs_npu=run.spec.npu_vs_npu, spec=run.spec)
            for run in sorted(runs, key=lambda run: run.csv_path.name)]


def chosen_results(ctx: Context, path: str | None) -> list[Path]:
    """The result CSVs named by `path` (a CSV, a result folder, or a folder of result folders: its newest),
    else those of the workspace's newest result folder."""
    from precision_tool.analysis.results.results import result_files
    from precision_tool.errors import WorkspaceError

    if path is None:
        return newest_results(ctx, ctx.workspace.vector_compare_dir)[1]
    target = Path(path).expanduser()
    if target.is_dir():
        return result_files(target) or newest_results(ctx, target, given=True)[1]
    if target.is_file():
        return [target]
    raise WorkspaceError(f"{target} does not exist; give a result CSV or a result folder")


def newest_results(ctx: Context, root: Path, given: bool = False) -> tuple[Path, list[Path]]:
    """The newest result folder under `root` that holds a result CSV; folders without one (a failed run) are
    skipped, with a warning naming them. `given`: the user named `root` (vcs -f), so say which was used."""
    from precision_tool.workspace import result_dirs
    from precision_tool.analysis.results.results import result_files
    from precision_tool.errors import WorkspaceError
    from precision_tool.render.messages import note_line, warning_line

    folders = result_dirs(root)
    if not folders:
        if given:
            raise WorkspaceError(f"no result CSVs (result_*.csv) in {root}, nor result folders holding them; "
                                 "give a result CSV or a result folder")
        raise WorkspaceError(f"no comparison results in {root}; run `vc` (or `ac -c`) first")
    skipped: list[Path] = []
    empty: list[Path] = []  # interrupted before the first row: nothing to show, so the older results are
    for folder in reversed(folders):
        files = result_files(folder)
        if files and all(_holds_no_rows(f) for f in files):
            empty.append(folder)
            continue
        if files:
            if skipped:
                ctx.note(warning_line(
                    f"skipped {len(skipped)} newer result folder(s) with no result CSV (a failed run): "
                    + ", ".join(str(p) for p in skipped)))
            if empty:
                ctx.note(warning_line(
                    f"skipped {len(empty)} newer run(s) interrupted before any row was compared "
                    "(`vc --resume` finishes the newest): " + ", ".join(str(p) for p in empty)))
            if given:
                ctx.note(note_line(f"showing the newest of {len(folders)} result folder(s) "
                                   f"(`vcs -f` on another picks it): {folder}"))
            return folder, files
        skipped.append(folder)
    if empty:
        raise WorkspaceError(f"the only comparison in {root} was interrupted before any row was compared; "
                             "`vc --resume` finishes it")
    raise WorkspaceError(f"no result CSVs (result_*.csv) in any folder of {root}; run `vc` (or `ac -c`) first")


def _holds_no_rows(csv_path: Path) -> bool:
    """An interrupted result CSV that holds its header only."""
    from precision_tool.analysis.results.results import PARTIAL_SUFFIX

    if not csv_path.name.endswith(PARTIAL_SUFFIX):
        return False
    try:
        with open(csv_path, "rb") as handle:
            return len(handle.read(1 << 16).splitlines()) <= 1
    except OSError:
        return False
