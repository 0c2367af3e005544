"""What an executor runs in a worker process: the setup each worker receives once, the GroupWorker each
thread keeps for it, and a batch of groups turned into CSV text (compare_worker.py does the comparing).
The executors (compare_executors.py, dask_executor.py) call these; they never touch a GroupWorker's insides.
"""

from __future__ import annotations

from dataclasses import dataclass
from threading import local as _thread_local
from typing import Optional, Sequence

from precision_tool.analysis.compare.engine.compare_worker import GroupWorker
from precision_tool.analysis.compare.matching import GroupPlan
from precision_tool.analysis.results.result_columns import Columns
from precision_tool.analysis.results.result_writer import encode_groups
from precision_tool.analysis.results.results import RowDigest
from precision_tool.gc_pause import without_gc


@dataclass(frozen=True)
class WorkerSetup:
    """Everything a worker needs besides the groups themselves; sent to each worker once (picklable: paths
    and flags, never arrays)."""

    golden_files: dict[str, str]
    npu_vs_npu: bool
    columns: Columns = Columns()
    token: str = ""
    """Names this setup across processes (a Dask worker keeps one GroupWorker per token)."""


BatchResult = tuple[str, int, int, dict[str, str], Optional[RowDigest]]
"""A batch of neighbouring groups compared: their rows as one CSV text (encoded in the worker: text crosses
processes faster than row objects; whole groups, in order), how many groups, the bytes read, the files that
could not be read (file → problem), and what the run's summary needs of the rows (so the parent never reads
them back). One per batch, not per group: at 20,000 groups the parent's handling of each cost more than the
writing."""

_CURRENT = _thread_local()
"""Per thread (a Dask worker runs several tasks at once in threads; a GroupWorker's caches are not shared)."""


def worker_for(setup: WorkerSetup) -> GroupWorker:
    """This thread's worker for `setup`: made on first use and kept while groups of the same setup (same
    token) arrive, so its caches carry from one group to its neighbour."""
    current = getattr(_CURRENT, "worker", None)
    if current is None or not setup.token or current[0] != setup.token:
        current = _CURRENT.worker = (setup.token, GroupWorker(setup.golden_files, setup.npu_vs_npu, setup.columns))
    return current[1]


@without_gc  # (around the encoding too: the rows are gone before the collector runs again)
def run_batch(worker: GroupWorker, groups: Sequence[GroupPlan]) -> BatchResult:
    """Neighbouring groups in one worker, in order, as one BatchResult."""
    before = worker.bytes_read
    columns = worker.columns
    text, digest = encode_groups(worker.run_groups(groups), worker.npu_vs_npu, columns.overflow, columns.sequence)
    unreadable, worker.unreadable = worker.unreadable, {}
    return text, len(groups), worker.bytes_read - before, unreadable, digest


def run_groups(setup: WorkerSetup, groups: list[GroupPlan]) -> BatchResult:
    """A batch of neighbouring groups in one worker process, in order (a Dask task)."""
    return run_batch(worker_for(setup), groups)
