"""Where the comparison engine's groups run: one interface, two local executors (Dask's is in
dask_executor.py).

An executor takes a WorkerSetup and the groups still to compare, cuts them into batches of neighbours, and
yields each batch's result *in the order given*, as soon as it and every earlier batch are done, so the
engine writes rows in graph order while later groups are still being compared. `close()` stops whatever is
still running (Ctrl-C, an error). Batches of neighbours, so that an op's output and the next op's input (the
same golden file, usually the same NPU bytes) meet in one worker, and the small tensors of a batch are
measured together.
"""

from __future__ import annotations

import functools
import gc
import signal
from typing import Iterator, Protocol, Sequence

from precision_tool.analysis.compare.engine.compare_worker import GroupWorker
from precision_tool.analysis.compare.engine.worker_tasks import BatchResult, WorkerSetup, run_batch, worker_for
from precision_tool.analysis.compare.matching import GroupPlan
from precision_tool.gc_pause import without_gc


class GroupExecutor(Protocol):
    def results(self, setup: WorkerSetup, groups: Sequence[GroupPlan]) -> Iterator[BatchResult]:
        """The results of batches of `groups`, in their order (every group in exactly one batch)."""
        ...

    def close(self) -> None:
        """Stop every task still running; safe to call twice."""
        ...


BATCH_GROUPS = 256
"""Groups a worker compares in one go: their small pairs share one batch of metrics (metrics_batch.py)."""


def batches(groups: Sequence[GroupPlan], size: int = BATCH_GROUPS) -> list[Sequence[GroupPlan]]:
    return [groups[start:start + size] for start in range(0, len(groups), size)]


class SerialExecutor:
    """In this process, one batch of groups after the other (one worker, or too few groups to share)."""

    def results(self, setup: WorkerSetup, groups: Sequence[GroupPlan]) -> Iterator[BatchResult]:
        worker = GroupWorker(setup.golden_files, setup.npu_vs_npu, setup.columns)
        for batch in batches(groups):
            yield run_batch(worker, batch)

    def close(self) -> None:
        pass


_POOL_WORKER: GroupWorker | None = None
_POOL_GROUPS: Sequence[GroupPlan] = ()
"""The groups of the run, set in the parent before the pool forks: workers inherit them, so a task is two
numbers (pickling 20,000 group plans to the workers would cost the parent more than comparing them)."""


def _init_pool_worker(setup: WorkerSetup) -> None:
    global _POOL_WORKER
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the parent's to handle
    _keep_to_one_core()
    _POOL_WORKER = GroupWorker(setup.golden_files, setup.npu_vs_npu, setup.columns)


def _keep_to_one_core() -> None:
    """Keep this pool worker on one of the cores this process may use, each worker on the next one. Left
    free, the workers were moved from core to core whenever the parent woke to write their results, and came
    back to caches the other had filled: at 20,000 small ops on 2 cores, `vc` took 6-7 % longer and 9 % more
    CPU. A core busy with other work costs little: the pool hands a task to whichever worker asks, so the
    worker kept there just takes fewer. A worker that replaces one that died takes the core its number
    gives, which may be its sibling's: a slower run, never a wrong one. (Where the system has no affinity
    calls, nothing changes.)"""
    import multiprocessing
    import os

    identity = getattr(multiprocessing.current_process(), "_identity", ())  # (1, 2, ... in a pool's workers)
    if not identity or not hasattr(os, "sched_setaffinity"):
        return
    try:
        cores = sorted(os.sched_getaffinity(0))
        if len(cores) > 1:
            os.sched_setaffinity(0, {cores[(identity[-1] - 1) % len(cores)]})
    except OSError:
        pass  # (a container that forbids it: the worker stays free)


@without_gc  # (around making the span's groups too: a kept plan's are made here, thousands of objects)
def _pool_run(span: tuple[int, int]) -> BatchResult:
    assert _POOL_WORKER is not None
    return run_batch(_POOL_WORKER, _POOL_GROUPS[span[0]:span[1]])


def _pool_run_sent(task: tuple[WorkerSetup, list[GroupPlan]]) -> BatchResult:
    """A batch of a later, small plan sent to a pool forked for an earlier one (its setup with it)."""
    setup, groups = task
    return run_batch(worker_for(setup), groups)


SENT_GROUPS = 2000
"""A pool kept from an earlier run of the same command takes a plan of at most this many groups sent to
it (cheaper than forking again: the 64 runs of a 64-rank dump share one pool); a bigger plan gets a pool
forked with it."""


class PoolExecutor:
    """Forked worker processes on this machine (the default for `vc`). One executor can serve the runs of
    one command in turn (run_specs): the first run's workers inherit its plan; later small plans are
    sent to the same workers; `close()` ends them."""

    def __init__(self, workers: int) -> None:
        self.workers = workers
        self._pool = None

    def keeps_workers(self, groups: int) -> bool:
        """True when a plan of `groups` groups goes to the workers running now: it may be handed over while
        they still work on the previous run (else results() ends them and forks new ones)."""
        return self._pool is not None and groups <= SENT_GROUPS

    def results(self, setup: WorkerSetup, groups: Sequence[GroupPlan]) -> Iterator[BatchResult]:
        """Hands the groups to the workers now (queued behind any earlier run's); the results come in order."""
        import multiprocessing

        global _POOL_GROUPS
        # small batches while there are few groups, so every worker gets some; at most BATCH_GROUPS. (Tasks that
        # shrink towards the end let the workers finish together, but each extra boundary has an output measured
        # again, in the other worker, as the next op's input: no faster on 300 big tensors.)
        size = max(1, min(BATCH_GROUPS, len(groups) // (self.workers * 4)))
        spans = [(start, min(start + size, len(groups))) for start in range(0, len(groups), size)]
        if self.keeps_workers(len(groups)):
            tasks = [(setup, list(groups[start:stop])) for start, stop in spans]
            return self._pool.imap(_pool_run_sent, tasks)
        self.close()  # workers forked for an earlier plan cannot see this one
        context = multiprocessing.get_context("fork")
        _POOL_GROUPS = groups
        # The parent's objects (the plan, a parsed graph) go to the collector's permanent generation while
        # the workers fork: a collection in a worker would otherwise touch every one of them and copy the
        # parent's whole heap page by page (copy-on-write), seconds on a 100,000-op graph.
        gc.freeze()
        try:
            self._pool = _quiet_pool_class()(self.workers, initializer=_init_pool_worker, initargs=(setup,),
                                             context=context)
        finally:
            gc.unfreeze()
            _POOL_GROUPS = ()  # the forked workers have their copy; the parent keeps no second reference
        return self._pool.imap(_pool_run, spans)

    def close(self) -> None:
        if self._pool is not None:
            self._pool.terminate()
            self._pool.join()
            self._pool = None


@functools.lru_cache(maxsize=None)
def _quiet_pool_class() -> type:
    from multiprocessing.pool import Pool  # (here: its import is not paid by commands that never compare)

    class QuietPool(Pool):
        """multiprocessing's Pool whose worker-maintenance thread wakes only when a worker exits or the pool
        changes. CPython's also waits on the result pipe, so while a result waits to be read it loops
        without sleeping, taking the GIL from the thread that reads results: 0.15 s of CPU at 20,000 ops,
        on 2 cores taken from the workers. (A Python without this private hook keeps that loop: no harm.)"""

        def _get_sentinels(self) -> list:  # type: ignore[type-arg]
            return [self._change_notifier._reader]  # type: ignore[attr-defined]

    return QuietPool


def local_executor(workers: int, groups: int) -> GroupExecutor:
    """The pool for `workers` > 1 and enough groups to share, else this process."""
    return PoolExecutor(workers) if workers > 1 and groups >= 4 else SerialExecutor()
