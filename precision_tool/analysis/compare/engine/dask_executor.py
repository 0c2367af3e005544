"""Comparison groups as Dask tasks (`vc --scheduler ADDRESS` / the DASK_SCHEDULER setting).

`connect(address)` opens a client for the whole command and yields a DaskExecutor, the GroupExecutor of a
cluster (compare_executors.py has the local ones). Each task is a batch of neighbouring groups, run by
worker_tasks.run_groups in a worker process that reads the dump and golden files itself from a
filesystem it shares with this machine: tasks carry paths, never arrays. The WorkerSetup (the golden
index) is one task per run whose result every worker fetches once (a lost copy is made again); each
worker thread keeps one GroupWorker per setup token.

- Order: batches are submitted in graph order with falling priority, at most `ahead` batches past the
  oldest one not yet handed back (memory stays flat whatever the plan's size); batches that finish early
  are held here until every earlier one is in, so the engine writes rows in graph order.
- Lost workers: the scheduler runs a dead worker's tasks again elsewhere (up to its allowed-failures);
  `retries=` covers errors a task raises. A batch that fails for good is one PrecisionToolError naming its
  ops; the engine keeps the CSV so far as a valid .partial that `vc --resume` finishes.
- Ctrl-C / errors: `close()` cancels every task not yet handed back.

Dask is optional (`pip install precision-tool[dask]`): it is imported inside functions only.
"""

from __future__ import annotations

import os
from contextlib import contextmanager
from typing import Any, Iterator, Sequence

from precision_tool.analysis.compare.engine.worker_tasks import BatchResult, WorkerSetup
from precision_tool.analysis.compare.matching import GroupPlan
from precision_tool.errors import PrecisionToolError

INSTALL_HINT = "pip install precision-tool[dask]"
BATCHES_PER_THREAD = 4
"""Batches per worker thread in a run (a few each: balance, and little to redo for a lost worker)."""
MAX_BATCH = 256
"""Groups in one task at most (a 20,000-group plan on a small cluster is still many tasks)."""
RETRIES = 2
"""Times a task that raised is run again before its batch fails the run."""
WORKERS_WAIT = 30.0
"""Seconds to wait for a first worker to join the scheduler."""
DOCS = "docs/dask.md"


class DaskError(PrecisionToolError):
    """The Dask cluster cannot run the comparison (not installed, unreachable, no workers, a failed task)."""


def _distributed() -> Any:
    try:
        import distributed
    except ImportError as exc:
        raise DaskError(f"--scheduler / DASK_SCHEDULER needs Dask's distributed package ({exc}); "
                        f"`{INSTALL_HINT}` installs it, or leave the scheduler out to compare with the local "
                        "process pool") from None
    return distributed


def _connect_timeout() -> float:
    """Dask's own connect timeout (distributed.comm.timeouts.connect, 30 s unless configured)."""
    import dask
    from dask.utils import parse_timedelta

    return float(parse_timedelta(dask.config.get("distributed.comm.timeouts.connect", "30s"), default="s"))


@contextmanager
def connect(address: str, timeout: float | None = None,
            workers_timeout: float = WORKERS_WAIT) -> Iterator["DaskExecutor"]:
    """A DaskExecutor on the scheduler at `address`, closed on leaving. Waits up to `timeout` seconds for the
    scheduler (default: Dask's connect timeout) and `workers_timeout` for a first worker; each failure is one
    DaskError saying what to check."""
    import gc

    distributed = _distributed()
    timeout = _connect_timeout() if timeout is None else timeout
    problem = None
    try:
        client = distributed.Client(address, timeout=timeout, set_as_default=False)
    except (OSError, ValueError, TypeError) as exc:
        problem = str(exc) or type(exc).__name__
    if problem is not None:
        gc.collect()  # the half-made client closes now, while its event loop runs (not noisily at exit)
        why = "" if problem.startswith("Timed out") else f" ({problem})"
        raise DaskError(
            f"cannot reach the Dask scheduler at {address} in {timeout:g} s{why}: check that `dask scheduler` runs "
            "there, that this is the address it printed (tcp://HOST:PORT, port 8786 by default) and that this "
            "machine can reach that port; a slow network needs a longer DASK_DISTRIBUTED__COMM__TIMEOUTS__CONNECT "
            "(or leave --scheduler / DASK_SCHEDULER out: the local process pool)")
    try:
        executor = DaskExecutor(client, address, workers_timeout)
        executor.wait_for_workers()
        yield executor
    finally:
        client.close()


def batch_size(groups: int, threads: int) -> int:
    """Groups per task: about BATCHES_PER_THREAD tasks per worker thread, at most MAX_BATCH groups each."""
    share = -(-groups // max(1, threads * BATCHES_PER_THREAD))
    return max(1, min(MAX_BATCH, share))


def _task_key(token: str, number: int, batch: Sequence[GroupPlan]) -> str:
    return f"precision-tool-compare-{token[:12]}-{number}-index-{batch[0].index}-{batch[-1].index}"


class DaskExecutor:
    """The groups of a plan as Dask tasks; results handed back in the order given (GroupExecutor)."""

    def __init__(self, client: Any, address: str, workers_timeout: float = WORKERS_WAIT) -> None:
        self.client = client
        self.address = address
        self.workers_timeout = workers_timeout
        self.retries = RETRIES
        self._outstanding: dict[str, Any] = {}
        """task key → future, for every batch submitted and not yet handed back (close() cancels them)."""
        self._setup_future: Any = None
        self._prepared = ""
        """The token of the setup prepare() last checked."""

    # --- the cluster ---------------------------------------------------------------------------------
    def threads(self) -> dict[str, int]:
        """Worker address → threads, as the scheduler knows them now."""
        return dict(self.client.nthreads())

    def describe(self) -> str:
        threads = self.threads()
        count, total = len(threads), sum(threads.values())
        return f"{count} worker{'s' if count != 1 else ''}, {total} thread{'s' if total != 1 else ''}"

    def wait_for_workers(self) -> None:
        """Return once a worker is connected; a DaskError after `workers_timeout` seconds without one."""
        if self.threads():
            return
        try:
            self.client.wait_for_workers(1, timeout=self.workers_timeout)
        except (TimeoutError, OSError):
            raise DaskError(
                f"no Dask workers are connected to the scheduler at {self.address} (waited "
                f"{self.workers_timeout:g} s); start them with `dask worker {self.address}` on machines that "
                f"see the dump files at the same paths as this one ({DOCS})") from None

    def prepare(self, setup: WorkerSetup, groups: Sequence[GroupPlan]) -> None:
        """Before the engine opens the CSV: a worker is connected and the workers see the files."""
        self.wait_for_workers()
        self.check_files(setup, groups)
        self._prepared = setup.token

    def check_files(self, setup: WorkerSetup, groups: Sequence[GroupPlan]) -> None:
        """One dump file and one golden file that this machine reads, stat'ed on every worker: a worker
        without the shared filesystem is one DaskError naming it and the path (not a CSV of unread rows)."""
        paths: list[str] = []
        for group in groups:
            for op in group.ops:
                for path in (op.dump_path, op.right_dump_path):
                    if path is not None and len(paths) < 2 and _problem(str(path)) is None:
                        paths.append(str(path))
            if paths:
                break
        golden = next(iter(setup.golden_files.values()), None)
        if golden is not None and _problem(golden) is None:
            paths.append(golden)
        if not paths:
            return
        sizes = {path: os.stat(path).st_size for path in paths}
        try:
            answers = self.client.run(_worker_view, paths, on_error="return")
        except (OSError, TimeoutError) as exc:
            raise DaskError(f"the Dask cluster at {self.address} did not answer a check of the workers ({exc})") \
                from None
        for worker, answer in sorted(answers.items()):
            if isinstance(answer, BaseException):
                raise DaskError(
                    f"the Dask worker {worker} could not run PrecisionTool's file check ({type(answer).__name__}: "
                    f"{answer}); every worker needs precision-tool installed, the same version as here "
                    f"(`{INSTALL_HINT}`)")
            for path, seen in zip(paths, answer):
                if isinstance(seen, str):
                    raise DaskError(
                        f"the Dask worker {worker} cannot read {path} ({seen}), which this machine reads: workers "
                        "read the dump and golden files themselves, so they need the same files at the same paths "
                        f"(a shared filesystem mounted at the same place on every machine; {DOCS})")
                if seen != sizes[path]:
                    raise DaskError(
                        f"the Dask worker {worker} sees {path} with {seen} bytes, this machine with {sizes[path]}: "
                        f"the workers must share this machine's files, not hold copies of other runs ({DOCS})")

    # --- GroupExecutor -------------------------------------------------------------------------------
    def results(self, setup: WorkerSetup, groups: Sequence[GroupPlan]) -> Iterator[BatchResult]:
        from precision_tool.analysis.compare.engine.worker_tasks import run_groups

        distributed = _distributed()
        groups = list(groups)
        if not groups:
            return
        if self._prepared != setup.token:
            self.prepare(setup, groups)
        threads = max(1, sum(self.threads().values()))
        size = batch_size(len(groups), threads)
        batches = [groups[start:start + size] for start in range(0, len(groups), size)]
        ahead = 2 * threads + 1
        # the setup as a task of its own (not scattered data): a scheduler that loses every copy of it (its
        # workers all died) runs it again from the graph; each worker fetches it once and keeps it
        setup_future = self._setup_future = self.client.submit(
            _setup_of, setup, key=f"precision-tool-setup-{setup.token}", priority=1)
        numbers: dict[str, int] = {}
        done: dict[int, Any] = {}
        """batch number → its results (or its DaskError), held until every earlier batch is handed back."""
        arrived = distributed.as_completed(loop=self.client.loop)
        submitted = handed = 0
        try:
            while handed < len(batches):
                while submitted < len(batches) and submitted - handed < ahead:
                    key = _task_key(setup.token, submitted, batches[submitted])
                    future = self.client.submit(run_groups, setup_future, batches[submitted], key=key,
                                                retries=self.retries, priority=-submitted)
                    numbers[key] = submitted
                    self._outstanding[key] = future
                    arrived.add(future)
                    submitted += 1
                while handed not in done:
                    future = next(arrived)
                    number = numbers.pop(future.key)
                    try:
                        done[number] = self._result(future, batches[number])
                    except DaskError as exc:
                        done[number] = exc  # raised in its turn: the batches before it still reach the CSV
                    self._outstanding.pop(future.key, None)
                    future.release()
                batch = done.pop(handed)
                if isinstance(batch, DaskError):
                    raise batch
                yield batch
                handed += 1
        finally:
            arrived.clear()
            self.close()

    def close(self) -> None:
        """Cancel every task not yet handed back (Ctrl-C, an error, or the run's end: then none is left)."""
        futures = list(self._outstanding.values())
        self._outstanding.clear()
        try:
            if futures:
                self.client.cancel(futures, force=True)
            if self._setup_future is not None:
                self._setup_future.release()
        except Exception:  # noqa: BLE001 - a client already gone has nothing left to cancel
            pass
        self._setup_future = None

    def _result(self, future: Any, batch: Sequence[GroupPlan]) -> BatchResult:
        try:
            return future.result()
        except (KeyboardInterrupt, SystemExit, GeneratorExit):
            raise
        except PrecisionToolError:
            raise
        except BaseException as exc:  # noqa: BLE001 - asyncio's CancelledError is a BaseException
            raise DaskError(self._failure(batch, exc)) from None

    def _failure(self, batch: Sequence[GroupPlan], exc: BaseException) -> str:
        first, last = batch[0], batch[-1]
        names = [op.name for group in (first, last) for op in group.ops[:1]] or ["?"]
        where = (f"the Dask task comparing CSV Index {first.index}-{last.index} (ops {names[0]} to {names[-1]})")
        then = "; the rows before them are kept as a .partial CSV that `vc --resume` finishes"
        kind = type(exc).__name__
        if kind == "KilledWorker":
            return (f"{where} was lost with every worker that ran it (each died while running it: out of memory, "
                    f"or killed; the scheduler's allowed-failures was reached); see the workers' logs{then}")
        if isinstance(exc, (_cancelled_types())):
            return (f"{where} was cancelled by the Dask cluster at {self.address} (the scheduler restarted or "
                    f"the connection to it was lost: {exc}){then}")
        text = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
        return f"{where} failed after {self.retries} retries: {kind}{': ' + text if text else ''}{then}"


def _setup_of(setup: WorkerSetup) -> WorkerSetup:
    """On a worker: the run's setup, a task result every compare task of the run depends on."""
    return setup


def _cancelled_types() -> tuple[type, ...]:
    import asyncio
    import concurrent.futures

    return (asyncio.CancelledError, concurrent.futures.CancelledError)


def _problem(path: str) -> str | None:
    """Why `path` cannot be read here (None when it can)."""
    try:
        with open(path, "rb") as handle:
            handle.read(1)
    except OSError as exc:
        return exc.strerror or str(exc)
    return None


def _worker_view(paths: list[str]) -> list[Any]:
    """On a worker: each path's size, or why it cannot be read there (stat and one byte; never unpickled)."""
    seen: list[Any] = []
    for path in paths:
        problem = _problem(path)
        seen.append(problem if problem is not None else os.stat(path).st_size)
    return seen
