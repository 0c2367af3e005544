"""`vc --scheduler` on a real Dask cluster (a LocalCluster of worker processes, started once here): the CSV is
byte-identical to the local pool's, a worker killed mid-run loses nothing, Ctrl-C cancels the tasks and
`vc --resume --scheduler` finishes the .partial, and every failure is one line."""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytest.importorskip("distributed")

from precision_tool.analysis.compare import network_compare as nc  # noqa: E402
from precision_tool.analysis.compare.engine.dask_executor import DaskError, connect  # noqa: E402

ROOT = Path(__file__).resolve().parents[3]
PREFIX = "precision-tool-compare-"


def _cli(*args: str, data: Path, env: dict[str, str] | None = None, python: list[str] | None = None):  # type: ignore[no-untyped-def]
    """The one-shot command in a subprocess, as a user runs it; (status, stdout + stderr)."""
    full = {k: v for k, v in os.environ.items() if k not in ("PRECISION_TOOL_CONFIG", "PRECISION_DATA")}
    full.update({"COLUMNS": "200", "NO_COLOR": "1", **(env or {})})
    command = (python or [sys.executable, str(ROOT / "precision_tool" / "cli.py")]) + ["--data", str(data), *args]
    proc = subprocess.run(command, capture_output=True, text=True, cwd=ROOT, env=full, timeout=300)
    return proc.returncode, proc.stdout + proc.stderr


def _only_csv(folder: Path, partial: bool = False) -> Path:
    found = sorted(folder.glob("*/*.csv.partial" if partial else "*/*.csv"))
    assert len(found) == 1, found
    return found[0]


@pytest.fixture(scope="module")
def cluster():  # type: ignore[no-untyped-def]
    """Two worker processes of one thread each; a task may outlive one dead worker, not two."""
    import dask
    from distributed import Client, LocalCluster

    with dask.config.set({"distributed.scheduler.allowed-failures": 1}):
        local = LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None)
    client = Client(local, set_as_default=False)
    try:
        yield local, client
    finally:
        client.close()
        local.close()


@pytest.fixture(scope="module")
def net(tmp_path_factory):  # type: ignore[no-untyped-def]
    """A workspace of ~320 ops (the conftest network with a chain) and its CSVs from the local pool: the
    command's (`vc`) and the engine's (one RunSpec)."""
    import importlib.util

    # the folder's conftest, loaded under a name of its own (a module-scoped fixture cannot ask for make_net)
    found = importlib.util.spec_from_file_location("compare_conftest_for_dask", Path(__file__).with_name("conftest.py"))
    assert found is not None and found.loader is not None
    conftest = sys.modules[found.name] = importlib.util.module_from_spec(found)
    found.loader.exec_module(conftest)
    make_network = conftest.make_network
    root = tmp_path_factory.mktemp("dask")
    network = make_network(root / "pd", chain=300, elements=512)
    status, out = _cli("vc", "-o", str(root / "local"), data=root / "pd")
    assert status == 0, out
    spec_dir = root / "local_spec"
    spec_dir.mkdir()
    nc.run_specs([_spec(network)], spec_dir, workers=2, threshold=0.98)
    network.cli_csv = _only_csv(root / "local").read_bytes()  # type: ignore[attr-defined]
    network.spec_csv = (spec_dir / "r.csv").read_bytes()  # type: ignore[attr-defined]
    return network


def _spec(net) -> nc.RunSpec:  # type: ignore[no-untyped-def]
    return nc.RunSpec("test", str(net.dump_dir), "r.csv", golden_dir=str(net.golden_dir), graph_path=str(net.graph_txt))


def _our_tasks(client) -> list[str]:  # type: ignore[no-untyped-def]
    return client.run_on_scheduler(lambda dask_scheduler: [k for k in dask_scheduler.tasks
                                                           if isinstance(k, str) and k.startswith(PREFIX)])


def _settle(client, workers: int = 2) -> None:  # type: ignore[no-untyped-def]
    """Back to `workers` live workers and none of our tasks left on the scheduler."""
    client.wait_for_workers(workers, timeout=60)
    deadline = time.monotonic() + 20
    while _our_tasks(client) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert _our_tasks(client) == []


def test_vc_on_the_cluster_writes_the_local_csv(net, cluster, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    local, client = cluster
    status, out = _cli("vc", "--scheduler", local.scheduler_address, "-o", str(tmp_path), data=net.root)
    assert status == 0, out
    assert f"comparing on the Dask cluster at {local.scheduler_address} (2 workers, 2 threads)" in out
    assert _only_csv(tmp_path).read_bytes() == net.cli_csv
    _settle(client)


def test_the_dask_scheduler_setting_is_used_without_the_option(net, cluster, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    local, client = cluster
    config = tmp_path / "config.py"
    config.write_text(f"DASK_SCHEDULER = {local.scheduler_address!r}\n")
    status, out = _cli("vc", "-o", str(tmp_path / "out"), data=net.root, env={"PRECISION_TOOL_CONFIG": str(config)})
    assert status == 0, out
    assert f"comparing on the Dask cluster at {local.scheduler_address}" in out
    assert _only_csv(tmp_path / "out").read_bytes() == net.cli_csv


def test_a_worker_killed_mid_run_loses_nothing(net, cluster, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    local, client = cluster
    killed: list[tuple[str, int, int]] = []

    def kill_a_busy_worker(label: str, done: int, total: int) -> None:
        if done == 0 or killed:
            return
        busy = {worker: keys for worker, keys in client.processing().items()
                if any(str(k).startswith(PREFIX) for k in keys)}
        if not busy:
            return
        worker = sorted(busy)[0]
        pid = client.run(os.getpid, workers=[worker])[worker]
        os.kill(pid, signal.SIGKILL)
        killed.append((worker, pid, len(busy[worker])))

    with connect(local.scheduler_address) as executor:
        runs = nc.run_specs([_spec(net)], tmp_path, workers=2, threshold=0.98, progress=kill_a_busy_worker,
                            executor=executor)
    assert killed and killed[0][2] >= 1, "no worker was running our tasks when the first rows arrived"
    assert (tmp_path / "r.csv").read_bytes() == net.spec_csv
    assert runs[0].summary.complete
    _settle(client)
    assert killed[0][1] not in client.run(os.getpid).values()  # the nanny started a new process


def test_ctrl_c_cancels_the_tasks_and_resume_on_the_cluster_finishes(net, cluster, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    from precision_tool.workspace import new_result_dir

    local, client = cluster
    cut_dir = new_result_dir(tmp_path / "out")
    seen: list[list[str]] = []
    written: list[int] = []

    def ctrl_c(label: str, done: int, total: int) -> None:
        if done >= 60:  # (at the end of the batch holding the 60th group: progress comes batch by batch)
            seen.append(_our_tasks(client))
            written.append(done)
            raise KeyboardInterrupt

    with connect(local.scheduler_address) as executor:
        with pytest.raises(nc.CompareInterrupted) as caught:
            nc.run_specs([_spec(net)], cut_dir, workers=2, threshold=0.98, progress=ctrl_c, executor=executor)
        assert executor._outstanding == {}
    assert seen and seen[0], "the run should still have had tasks on the cluster when interrupted"
    assert 60 <= caught.value.done == written[0] < caught.value.total
    partial = cut_dir / "r.csv.partial"
    assert partial.exists() and not (cut_dir / "r.csv").exists()
    kept = {line.split(",", 1)[0] for line in partial.read_text().splitlines()[1:]}
    assert len(kept) == written[0]  # the groups the count says, whole
    _settle(client)  # every task of the run is gone from the scheduler (cancelled, not left running)
    status, out = _cli("vc", "--resume", "--scheduler", local.scheduler_address, "-o", str(tmp_path / "out"),
                       data=net.root)
    assert status == 0, out
    assert (cut_dir / "r.csv").read_bytes() == net.spec_csv


def test_a_task_that_kills_every_worker_is_one_line_and_resume_finishes(net, cluster, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """The third batch's task kills each worker that starts it (as an out-of-memory kill would): the run
    stops with one line naming its ops, the rows before it stay in a valid .partial, and --resume (the
    worker healthy again) finishes it to the very bytes."""
    from distributed import WorkerPlugin

    local, client = cluster

    class DiesOnTheThirdBatch(WorkerPlugin):  # defined here: shipped to the workers by value
        name = "dies-on-the-third-batch"

        def transition(self, key, start, finish, **kwargs):  # type: ignore[no-untyped-def]
            if finish == "executing" and isinstance(key, str) and key.startswith(PREFIX) and "-2-index-" in key:
                os._exit(1)

    client.register_plugin(DiesOnTheThirdBatch())
    try:
        status, out = _cli("vc", "--scheduler", local.scheduler_address, "-o", str(tmp_path / "out"), data=net.root)
    finally:
        client.unregister_worker_plugin(DiesOnTheThirdBatch.name)
    assert status == 1, out
    assert "Traceback" not in out
    error = [line for line in out.splitlines() if "Dask task" in line]
    assert len(error) == 1 and "was lost with every worker that ran it" in error[0], out
    assert "vc --resume" in error[0]
    partial = _only_csv(tmp_path / "out", partial=True)
    kept = partial.read_bytes()
    # whole rows, in order, the local run's (maybe the header only: a task queued on a worker the third batch
    # killed twice fails with it)
    assert kept.startswith(b"Index,") and kept.endswith(b"\r\n") and net.cli_csv.startswith(kept)
    _settle(client)
    status, out = _cli("vc", "--resume", "--scheduler", local.scheduler_address, "-o", str(tmp_path / "out"),
                       data=net.root)
    assert status == 0, out
    assert _only_csv(tmp_path / "out").read_bytes() == net.cli_csv


# --- one line for each way the cluster can be missing -----------------------------------------------------
def _error_lines(out: str) -> list[str]:
    assert "Traceback" not in out, out
    return [line for line in out.splitlines() if line.strip()]


def test_an_unreachable_scheduler_is_one_line(net, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    address = f"tcp://127.0.0.1:{port}"
    started = time.monotonic()
    status, out = _cli("vc", "--scheduler", address, "-o", str(tmp_path / "out"), data=net.root,
                       env={"DASK_DISTRIBUTED__COMM__TIMEOUTS__CONNECT": "1s"})
    assert status != 0 and time.monotonic() - started < 30
    lines = _error_lines(out)
    assert len(lines) == 1 and f"cannot reach the Dask scheduler at {address}" in lines[0], out
    assert "dask scheduler" in lines[0] and " in 1 s" in lines[0]
    assert not list((tmp_path / "out").glob("*/*.csv*"))


def test_without_distributed_the_option_says_what_to_install(net, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    # `distributed` made unimportable in the child (None in sys.modules), the rest of the environment as is
    blocked = [sys.executable, "-c", "import runpy, sys; sys.modules['distributed'] = None; "
               "sys.argv = ['precision-tool'] + sys.argv[1:]; runpy.run_module('precision_tool.cli', "
               "run_name='__main__')"]
    status, out = _cli("vc", "--scheduler", "tcp://127.0.0.1:8786", "-o", str(tmp_path), data=net.root,
                       python=blocked)
    assert status != 0
    lines = _error_lines(out)
    assert len(lines) == 1 and "pip install precision-tool[dask]" in lines[0], out
    assert "distributed" in lines[0]


@pytest.fixture
def bare_scheduler():  # type: ignore[no-untyped-def]
    """A scheduler no worker has joined (yet)."""
    from distributed import LocalCluster

    scheduler = LocalCluster(n_workers=0, processes=False, protocol="tcp://", dashboard_address=":0")
    try:
        yield scheduler.scheduler_address
    finally:
        scheduler.close()


def test_no_workers_is_one_error_after_a_bounded_wait(bare_scheduler: str) -> None:
    started = time.monotonic()
    with pytest.raises(DaskError) as caught:
        with connect(bare_scheduler, workers_timeout=1):
            pass
    assert time.monotonic() - started < 15
    assert f"no Dask workers are connected to the scheduler at {bare_scheduler}" in str(caught.value)
    assert f"dask worker {bare_scheduler}" in str(caught.value)


def test_a_worker_without_the_shared_filesystem_is_named(net, bare_scheduler: str, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """A worker in its own mount namespace, an empty tmpfs over the dump folder: it sees none of the dumps."""
    if shutil.which("unshare") is None or subprocess.run(
            ["unshare", "-m", "--propagation", "private", "sh", "-c", f"mount -t tmpfs none {tmp_path}"],
            capture_output=True).returncode != 0:
        pytest.skip("needs unshare -m and mount (root in a mount namespace)")
    from distributed import Client

    hidden = net.root / "npu"
    worker = subprocess.Popen(
        ["unshare", "-m", "--propagation", "private", "sh", "-c",
         f"mount -t tmpfs none {hidden} && exec {sys.executable} -m distributed.cli.dask_worker {bare_scheduler} "
         "--nthreads 1 --no-nanny --no-dashboard"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        with Client(bare_scheduler, set_as_default=False) as client:
            client.wait_for_workers(1, timeout=30)
            worker_address = next(iter(client.nthreads()))
        status, out = _cli("vc", "--scheduler", bare_scheduler, "-o", str(tmp_path / "out"), data=net.root)
    finally:
        worker.terminate()
        worker.wait(timeout=30)
    assert status != 0
    line = [line for line in _error_lines(out) if "cannot read" in line]
    assert len(line) == 1, out
    assert f"the Dask worker {worker_address} cannot read {net.dump_dir}" in line[0]
    assert "shared filesystem" in line[0]
    assert not list((tmp_path / "out").glob("*/*.csv*"))  # failed before any row: no result folder left
