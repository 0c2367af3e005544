"""Run CANN's own msaccucmp instead of our engine (`vc --backend cann`, or auto when CMD_ROOT_PATH has it).

msaccucmp needs the graph as atc-style JSON for `-f`, so text graphs are converted first; its CSV is
moved to the name our result folder expects, and `vcs` reads it like ours (columns found by header).
It exits 2 whenever a graph op (a Data op, always) has no dump although its CSV is complete: we judge
success by the CSV, not by the exit status.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Sequence

from precision_tool.analysis.compare.compare_runs import (
    CompareRun,
    Labeller,
    RunSpec,
    write_run_file,
    absolute_spec,
    discard_empty_result_dir,
)
from precision_tool.analysis.results.digest_cache import summarize_result_csv
from precision_tool.errors import CommandFailed, WorkspaceError

_MAX_DEPTH = 8


def find_msaccucmp(root: str | os.PathLike[str]) -> list[str] | None:
    """The command that runs msaccucmp under `root`: an `msaccucmp` wrapper, or `python msaccucmp.py`."""
    base = Path(root).expanduser()
    if not base.is_dir():
        return None
    wrapper = base / "msaccucmp"
    if wrapper.is_file() and os.access(wrapper, os.X_OK):
        return [str(wrapper)]
    for dirpath, dirnames, filenames in os.walk(base):
        depth = len(Path(dirpath).relative_to(base).parts)
        if depth >= _MAX_DEPTH:
            dirnames[:] = []
        dirnames.sort()
        if "msaccucmp.py" in filenames:
            script = Path(dirpath) / "msaccucmp.py"
            return [_python_for(script), str(script)]
    return None


def _python_for(script: Path) -> str:
    """The Python of the virtualenv the script is installed in, else this one."""
    for parent in script.parents:
        if (parent / "pyvenv.cfg").is_file() and (parent / "bin" / "python").exists():
            return str(parent / "bin" / "python")
    return sys.executable


def run_compare(
    command: list[str],
    npu_dir: Path,
    other_dir: Path,
    graph_path: Path | None,
    out_dir: Path,
    csv_path: Path,
    timeout_s: float = 24 * 3600,
) -> Path:
    """Run `msaccucmp compare` and move its result CSV to `csv_path`."""
    args = [*command, "compare", "-m", str(npu_dir), "-g", str(other_dir), "-out", str(out_dir)]
    if graph_path is not None:
        args += ["-f", str(_graph_json(graph_path, out_dir))]
    before = set(out_dir.glob("result_*.csv"))
    try:
        proc = subprocess.run(args, capture_output=True, text=True, timeout=timeout_s)
    except OSError as exc:
        raise WorkspaceError(f"cannot run msaccucmp ({' '.join(command)}): {exc.strerror}") from None
    written = sorted(set(out_dir.glob("result_*.csv")) - before)
    if not written:
        tail = (proc.stdout + proc.stderr).strip().splitlines()[-3:]
        raise CommandFailed(
            f"msaccucmp wrote no result (exit {proc.returncode}): {' | '.join(tail) or 'no output'}"
        )
    os.replace(written[-1], csv_path)
    return csv_path


def _graph_json(graph_path: Path, out_dir: Path) -> Path:
    """msaccucmp reads only atc JSON; convert a text graph (JSON is passed through)."""
    if graph_path.suffix == ".json":
        return graph_path
    from precision_tool.formats.ge.ge_graph import load_graph, write_graph_json

    target = out_dir / (graph_path.stem + ".json")
    write_graph_json(load_graph(graph_path), target)
    return target


def dump_folder(npu_dir: Path) -> Path:
    """msaccucmp lists a dump folder flat: the one folder that holds the dump files, if there is one."""
    from precision_tool.analysis.compare.matching import index_dumps

    parents = {path.parent for path in index_dumps(npu_dir).by_op.values()}
    return parents.pop() if len(parents) == 1 else npu_dir


def run_specs_cann(specs: Sequence[RunSpec], result_dir: Path, command: list[str], *, threshold: float,
                   labels: Labeller | None = None) -> list[CompareRun]:
    """The same runs done by CANN's msaccucmp; its CSVs are read like ours (vcs, ac)."""
    specs = [absolute_spec(spec) for spec in specs]
    write_run_file(result_dir, specs)
    try:
        return _run_specs_cann(specs, result_dir, command, threshold=threshold, labels=labels)
    except BaseException:
        discard_empty_result_dir(result_dir)
        raise


def _run_specs_cann(specs: Sequence[RunSpec], result_dir: Path, command: list[str], *,
                    threshold: float, labels: Labeller | None = None) -> list[CompareRun]:
    runs = []
    for spec in specs:
        started = time.perf_counter()
        if spec.right_dir is None and spec.graph_path is None:
            raise WorkspaceError(
                f"{spec.label}: msaccucmp cannot compare NPU dumps with golden tensors without a graph; "
                "use the native backend (--backend native) or give -g GRAPH"
            )
        other = Path(spec.right_dir) if spec.right_dir else Path(spec.golden_dir or "")
        if spec.right_dir:
            other = dump_folder(other)
        csv_path = run_compare(command, dump_folder(Path(spec.npu_dir)), other,
                               Path(spec.graph_path) if spec.graph_path else None, result_dir,
                               result_dir / spec.csv_name)
        summary = summarize_result_csv(csv_path, threshold, name_only=spec.name_only,
                                       labels=labels(spec) if labels is not None else None)
        runs.append(CompareRun(spec, csv_path, summary, (), len(summary.ops), time.perf_counter() - started))
    return runs
