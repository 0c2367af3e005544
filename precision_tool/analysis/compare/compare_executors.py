"""Where the comparison engine's groups run: one interface, two local executors (Dask's is in
dask_executor.py).

An executor takes a WorkerSetup and the groups still to compare, and yields each group's result *in the
order given*, as soon as it and every earlier group are done, so the engine writes rows in graph order
while later groups are still being compared. `close()` stops whatever is still running (Ctrl-C, an error).
Groups go to workers in runs of neighbours so an op's output and the next op's input (the same golden
file, usually the same NPU bytes) meet in one worker.
"""

from __future__ import annotations

import signal
from typing import Iterator, Protocol, Sequence

from precision_tool.analysis.compare.compare_worker import GroupResult, GroupWorker, WorkerSetup, run_group
from precision_tool.analysis.compare.matching import GroupPlan


class GroupExecutor(Protocol):
    def results(self, setup: WorkerSetup, groups: Sequence[GroupPlan]) -> Iterator[GroupResult]:
        """Each group's result, in the order of `groups`."""
        ...

    def close(self) -> None:
        """Stop every task still running; safe to call twice."""
        ...


class SerialExecutor:
    """In this process, one group after the other (one worker, or too few groups to share)."""

    def results(self, setup: WorkerSetup, groups: Sequence[GroupPlan]) -> Iterator[GroupResult]:
        worker = GroupWorker(setup.golden_files, setup.npu_vs_npu, setup.columns)
        for group in groups:
            yield run_group(worker, group)

    def close(self) -> None:
        pass


_POOL_WORKER: GroupWorker | None = None


def _init_pool_worker(setup: WorkerSetup) -> None:
    global _POOL_WORKER
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the parent's to handle
    _POOL_WORKER = GroupWorker(setup.golden_files, setup.npu_vs_npu, setup.columns)


def _pool_run(group: GroupPlan) -> GroupResult:
    assert _POOL_WORKER is not None
    return run_group(_POOL_WORKER, group)


class PoolExecutor:
    """Forked worker processes on this machine (the default for `vc`)."""

    def __init__(self, workers: int) -> None:
        self.workers = workers
        self._pool = None

    def results(self, setup: WorkerSetup, groups: Sequence[GroupPlan]) -> Iterator[GroupResult]:
        import multiprocessing

        context = multiprocessing.get_context("fork")
        self._pool = context.Pool(min(self.workers, len(groups)), initializer=_init_pool_worker,
                                  initargs=(setup,))
        chunk = max(1, min(32, len(groups) // (self.workers * 4)))
        yield from self._pool.imap(_pool_run, groups, chunksize=chunk)

    def close(self) -> None:
        if self._pool is not None:
            self._pool.terminate()
            self._pool.join()
            self._pool = None


def local_executor(workers: int, groups: int) -> GroupExecutor:
    """The pool for `workers` > 1 and enough groups to share, else this process."""
    return PoolExecutor(workers) if workers > 1 and groups >= 4 else SerialExecutor()
