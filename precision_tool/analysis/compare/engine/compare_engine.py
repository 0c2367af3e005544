"""The comparison engine: compare every group of a plan on an executor and stream the rows into a CSV.

The executor (compare_executors.py: this process or a local pool; dask_executor.py: a Dask cluster) runs
the groups on workers (compare_worker.py) in batches of neighbours and hands each batch's rows back in graph
order; they reach the CSV as soon as every earlier batch is done, whole groups in one write, so Ctrl-C keeps
a valid `.partial` CSV that `vc --resume` finishes.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterator

from precision_tool.analysis.compare.engine.compare_executors import GroupExecutor, local_executor
from precision_tool.analysis.compare.engine.worker_tasks import BatchResult, WorkerSetup
from precision_tool.analysis.compare.matching import MatchPlan
from precision_tool.analysis.results.digest_cache import CsvDigest, remember_written
from precision_tool.analysis.results.result_columns import Columns
from precision_tool.analysis.results.result_writer import ResultWriter, prepare_resume
from precision_tool.analysis.results.results import PARTIAL_SUFFIX, RowDigest
from precision_tool.errors import CommandFailed
from precision_tool.gc_pause import without_gc_keeping

Progress = Callable[[str, int, int], None]
"""progress(label, groups_done, groups_total), called as batches of groups finish."""


class CompareInterrupted(CommandFailed):
    """Ctrl-C during a run: the CSV so far is kept (valid, `.partial`) and `vc --resume` continues it.

    Says what was kept: `complete` result CSVs, the `partial` one (`done` of `total` ops in it), and the
    labels of the runs `not_started`."""

    def __init__(self, message: str, *, partial: Path | None = None, done: int = 0, total: int = 0,
                 complete: tuple[Path, ...] = (), not_started: tuple[str, ...] = ()) -> None:
        super().__init__(message)
        self.partial = partial
        self.done = done
        self.total = total
        self.complete = complete
        self.not_started = not_started


def execute_plan(
    plan: MatchPlan,
    golden_files: dict[str, str],
    csv_path: Path,
    *,
    workers: int = 1,
    progress: Progress | None = None,
    label: str = "compare",
    resume: bool = False,
    unreadable: dict[str, str] | None = None,
    columns: Columns = Columns(),
    executor: GroupExecutor | None = None,
) -> int:
    """Compare every group of `plan`, streaming rows into `csv_path` (.partial until done). Returns bytes read;
    files that could not be read are added to `unreadable` (file → problem). `executor`: where the groups
    run (default: a local pool of `workers` processes)."""
    started = start_plan(plan, golden_files, csv_path, workers=workers, resume=resume, columns=columns,
                         executor=executor)
    return finish_plan(started, progress=progress, label=label, unreadable=unreadable)


@dataclass
class StartedPlan:
    """A plan whose groups are with the executor: a pool compares them while the caller plans the next run
    (run_specs); finish_plan writes their rows."""

    plan: MatchPlan
    csv_path: Path
    resume: bool
    columns: Columns
    total: int
    finished: int
    results: Iterator[BatchResult]
    runner: GroupExecutor
    owned: bool


def start_plan(plan: MatchPlan, golden_files: dict[str, str], csv_path: Path, *, workers: int = 1,
               resume: bool = False, columns: Columns = Columns(),
               executor: GroupExecutor | None = None) -> StartedPlan:
    """Hand the groups of `plan` still to compare (all, or those a `.partial` CSV lacks) to the executor."""
    done: set[int] = set()
    partial = csv_path.with_name(csv_path.name + PARTIAL_SUFFIX)
    resume = resume and partial.exists()
    if resume:
        done = prepare_resume(partial)
    # (all groups: the plan's own sequence, whose groups may be made as they are used, plan_cache._KeptGroups)
    todo = [g for g in plan.groups if g.index not in done] if done else plan.groups
    setup = WorkerSetup(golden_files, plan.npu_vs_npu, columns, token=uuid.uuid4().hex)
    owned = executor is None  # an executor passed in serves later runs too: closed here only on failure
    runner = executor if executor is not None else local_executor(workers, len(todo))
    if todo and hasattr(runner, "prepare"):
        runner.prepare(setup, todo)  # checks that fail the run before its CSV exists (Dask: the shared files)
    results = runner.results(setup, todo) if todo else iter(())
    return StartedPlan(plan, csv_path, resume, columns, len(plan.groups), len(plan.groups) - len(todo),
                       results, runner, owned)


@without_gc_keeping  # (the collector would rescan the plan for every few results received: 0.15 s at 20,000 ops)
def finish_plan(started: StartedPlan, *, progress: Progress | None = None, label: str = "compare",
                unreadable: dict[str, str] | None = None, digest: RowDigest | None = None) -> int:
    """Write the rows of a started plan as its groups come back; the bytes read. `digest`: gathers what the
    summary needs of the rows written (a resumed run's earlier rows are not in it)."""
    csv_path, runner = started.csv_path, started.runner
    partial = csv_path.with_name(csv_path.name + PARTIAL_SUFFIX)
    writer = ResultWriter(csv_path, started.plan.npu_vs_npu, resume=started.resume,
                          overflow=started.columns.overflow, sequence=started.columns.sequence)
    finished, total = started.finished, started.total
    bytes_read = 0
    if progress:
        progress(label, finished, total)
    try:
        try:
            for text, count, nbytes, bad_files, rows in started.results:
                writer.write_text(text)
                finished += count  # (with its rows: a Ctrl-C while the batch is digested still counts them)
                bytes_read += nbytes
                if digest is not None and rows is not None:
                    digest.extend(rows)
                if unreadable is not None:
                    for name, problem in bad_files.items():
                        unreadable.setdefault(name, problem)
                if progress:
                    progress(label, finished, total)
        except BaseException:
            runner.close()
            raise
        if started.owned:
            runner.close()
    except KeyboardInterrupt:
        writer.close()
        raise CompareInterrupted(
            f"interrupted after {finished} of {total} ops; the rows so far are in {partial} "
            "(`vc --resume` finishes the run)", partial=partial, done=finished, total=total,
        ) from None
    except BaseException:
        writer.close()
        raise
    writer.finish()
    if digest is not None and writer.stamp is not None:
        # held for the summaries after it in this process (`vcs` after `vc` in the shell): no CSV to parse.
        # (A plain RowDigest of the same ops: the run's own digest also holds its labels, not needed there.)
        remember_written(csv_path, CsvDigest(RowDigest(digest.ops, digest.rows, digest.compared),
                                             started.plan.npu_vs_npu, started.columns.overflow), writer.stamp)
    return bytes_read
