"""Replay NPU ops on CPU and say why they differ: plan the cases, run one TensorFlow child for all of them,
judge each, write the fixes, save the results (replay.csv, replay.json) in the replay folder.

The shell never imports TensorFlow: the child (capture/op_replay.py) does, in this interpreter unless the
caller names another. Inserted Cast/TransData ops need no TensorFlow: numpy replays them here.
"""

from __future__ import annotations

import csv
import dataclasses
import io
import json
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Sequence

from precision_tool.analysis.graphs.graph_index import GraphIndex
from precision_tool.analysis.graphs.graph_summary import OpEntry
from precision_tool.analysis.replay.replay_plan import (
    NATIVE_TYPES, RESULT_FILE, ReplayCase, case_key, dump_lookup, golden_graph_files, plan_case, read_child_result,
)
from precision_tool.analysis.replay.replay_pool import ended
from precision_tool.analysis.replay.replay_verdict import CANNOT, INHERITED, KERNEL, PRECISION, Verdict, cannot, judge
from precision_tool.atomic import write_text_atomic
from precision_tool.errors import WorkspaceError
from precision_tool.formats.ge.ge_graph import split_input
from precision_tool.workspace import Workspace, absolute_path, golden_dir_for_step

if TYPE_CHECKING:
    from precision_tool.analysis.results.results import CompareSummary
    from precision_tool.config import Settings

CHILD_TIMEOUT_S = 3600
CHILD_LOG = "replay_child.log"
"""The TensorFlow child's command, exit status, stderr and stdout, kept in the replay folder."""
CSV_NAME = "replay.csv"
JSON_NAME = "replay.json"


@dataclass(frozen=True)
class ReplayRun:
    folder: Path
    verdicts: tuple[Verdict, ...]
    csv_path: Path | None = None
    seconds: dict[str, float] = field(default_factory=dict)  # "plan", "child", "judge"
    ops_info: Path | None = None
    problems: tuple[str, ...] = ()  # fixes that could not be written


def tensorflow_missing(python: str | None = None) -> str | None:
    """Why the replay child cannot import TensorFlow (this interpreter only; another is tried as is)."""
    import importlib.util

    if python and python != sys.executable:
        return None
    if importlib.util.find_spec("tensorflow") is None:
        return (f"TensorFlow is not installed for {sys.executable}; `pip install tensorflow-cpu` "
                "(or `pip install precision-tool[tf]`) to replay ops on CPU")
    return None


Runner = Callable[[Workspace, "list[ReplayCase]", "str | None", Path], "ChildRun"]
"""Runs the TensorFlow cases (workspace, cases, python, log path) and says how it went: one child for all
(`_run_child`, the default) or many (replay_all's pool)."""
PlanProgress = Callable[[str, int, int], None]
"""(stage, done, total): "plan" while the cases are planned, "judge" while they are judged."""


def replay_ops(index: GraphIndex, entries: Sequence[OpEntry], folder: Path, settings: "Settings", *,
               summary: "CompareSummary | None" = None, python: str | None = None,
               runner: Runner | None = None, progress: PlanProgress | None = None,
               step: int | None = None) -> ReplayRun:
    """Replay each op (one child for all unless `runner` says otherwise), judge it, write its fix; results
    saved in `folder`. `step`: the dump iteration and golden step folder to replay from (docs/steps.md), else
    the newest dump. Planning and judging stay in this process: forked, BERT's 4,173 ops took longer (the
    cases and verdicts pickled back cost more than the work)."""
    from precision_tool.analysis.compare.listing_cache import cached_golden_paths

    workspace = index.workspace
    folder = absolute_path(folder)  # the child runs in the workspace: a relative folder would land below it
    Workspace.ensure_dir(folder, "replay folder")
    started = time.perf_counter()
    # (text: no Path per file; kept with vc's listing while the folder is unchanged)
    golden = cached_golden_paths(golden_dir_for_step(workspace.golden_dir, step), workspace.cache_dir)
    graph_defs = golden_graph_files(workspace)
    for entry in entries:  # a case folder holds one replay: never an earlier run's results
        shutil.rmtree(folder / case_key(entry), ignore_errors=True)
    lookup = dump_lookup(workspace, {e.debug_id for e in entries}) if len(entries) > 8 else None
    cases = []
    for done, entry in enumerate(entries, 1):
        cases.append(plan_case(index, entry, folder / case_key(entry), golden, graph_defs, lookup, step))
        if progress is not None:
            progress("plan", done, len(entries))
    planned = time.perf_counter()
    missing_tf = tensorflow_missing(python)
    for case in cases:
        if case.problem is None and case.mode == "native":
            _replay_native(case)
    tf_cases = [c for c in cases if c.problem is None and c.mode == "tf"]
    child = ChildRun()
    if tf_cases and missing_tf is None:
        child = (runner or _run_child)(workspace, tf_cases, python, folder / CHILD_LOG)
    ran = time.perf_counter()

    def judged(case: ReplayCase) -> Verdict:
        if case.problem is None and case.mode == "tf" and missing_tf:
            return cannot(case, missing_tf, failed=True)
        result = read_child_result(Path(case.folder)) if case.problem is None else None
        if result is None and case.problem is None and case.mode == "tf":
            return cannot(case, child.why_no_result(case.folder), failed=True)
        verdict = judge(case, result, settings)
        if verdict.failed and child.log is not None:
            verdict = dataclasses.replace(verdict, line=f"{verdict.line}; the replay process's output: {child.log}")
        return verdict

    verdicts = []
    for done, case in enumerate(cases, 1):
        verdicts.append(judged(case))
        if progress is not None:
            progress("judge", done, len(cases))
    ops = {op.npu_op: op for op in summary.ops} if summary is not None else {}
    verdicts = [_with_upstream(index, v, summary, ops) for v in verdicts]
    verdicts, ops_info, problems = _write_fixes(workspace, verdicts)
    csv_path = save_results(folder, verdicts)
    done = time.perf_counter()
    return ReplayRun(folder, tuple(verdicts), csv_path,
                     {"plan": planned - started, "child": ran - planned, "judge": done - ran},
                     ops_info, tuple(problems))


def _replay_native(case: ReplayCase) -> None:
    """A Cast or TransData from its own dumped input. float32 replay: the input's value (to a float output,
    exactly; to an integer or bool, converted); the NPU's dtype: the input converted as the op converts it.
    Layouts are already undone on both sides, so the values must be equal."""
    import numpy as np

    folder = Path(case.folder)

    def failed(reason: str) -> None:
        write_text_atomic(folder / RESULT_FILE, json.dumps({"status": "failed", "reason": reason}))

    if not case.inputs or not case.outputs:
        return failed("its dump holds no input or no output")
    value = np.load(folder / case.inputs[0].file, allow_pickle=False)
    out = case.outputs[0]
    if value.size != int(np.prod(out.shape)):
        return failed(f"its input has {value.size} values and its output {int(np.prod(out.shape))}: the dump's "
                      "layouts could not both be brought back")
    exact = value.astype(np.float32) if value.dtype.kind == "f" and np.dtype(out.dtype).kind == "f" else value
    with np.errstate(over="ignore", invalid="ignore"):
        converted = value.astype(out.dtype).reshape(out.shape)
        np.save(folder / "replay_float32_output_0.npy",
                (exact if np.dtype(out.dtype).kind == "f" else converted).reshape(out.shape), allow_pickle=False)
        variants = {"float32": {"0": "replay_float32_output_0.npy"}}
        if case.fp16:
            np.save(folder / "replay_float16_output_0.npy", converted, allow_pickle=False)
            variants["float16"] = {"0": "replay_float16_output_0.npy"}
    inserted = " (inserted by the compiler)" if case.op_name.startswith("trans_") else ""
    write_text_atomic(folder / RESULT_FILE, json.dumps({
        "status": "ok", "variants": variants, "fp16": "numpy" if case.fp16 else "none",
        "notes": [f"{case.op_type}{inserted}: replayed by numpy from its own input"]}))


@dataclass(frozen=True)
class ChildRun:
    """How the TensorFlow child went: why it failed as a whole (None: it ran) and where its output is."""

    failure: str | None = None
    log: Path | None = None
    last_error: str | None = None
    case_failures: dict[str, str] = field(default_factory=dict)
    """Case folder → why it has no result, where a pool of children knows it case by case."""

    def why_no_result(self, folder: str | None = None) -> str:
        """The reason of a case the child wrote no result.json for: the child's own error, and its log."""
        if folder is not None and folder in self.case_failures:
            return self.case_failures[folder]
        if self.failure is not None:
            return self.failure
        said = f" (its last error line: {self.last_error[:200]})" if self.last_error else ""
        where = f"; its output: {self.log}" if self.log is not None else ""
        return f"the replay process wrote no result for it{said}{where}"


def _run_child(workspace: Workspace, cases: list[ReplayCase], python: str | None, log: Path) -> ChildRun:
    """One child for every case. Its output is always kept in `log`: a case it wrote no result for, or one
    it crashed on, then points there."""
    from precision_tool.child_env import tf_child_env

    python = python or sys.executable
    command = [python, "-m", "precision_tool.capture.op_replay", *(c.folder for c in cases)]
    try:
        proc = subprocess.run(command, cwd=workspace.root if workspace.root.is_dir() else None,
                              env=tf_child_env(workspace.root), capture_output=True, text=True,
                              timeout=CHILD_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        return ChildRun(f"the replay process did not finish in {CHILD_TIMEOUT_S} s")
    except OSError as error:
        return ChildRun(f"cannot run {python} ({error.strerror or error}); name a Python that has TensorFlow")
    try:
        write_text_atomic(log, f"$ {' '.join(command)}\nexit {proc.returncode}\n--- stderr\n{proc.stderr}\n"
                               f"--- stdout\n{proc.stdout}")
        saved: Path | None = log
    except OSError:
        saved = None
    lines = [line.strip() for line in proc.stderr.strip().splitlines() if line.strip()]
    last = lines[-1] if lines else None
    if proc.returncode == 0:
        return ChildRun(None, saved, last)
    if "No module named 'tensorflow'" in proc.stderr:
        return ChildRun(f"TensorFlow is not installed for {python}; `pip install tensorflow-cpu`", saved, last)
    where = f"its output: {saved}" if saved is not None else "its output could not be saved"
    return ChildRun(f"the replay process {ended(proc.returncode)}: {(last or 'no error output')[:200]}; {where}",
                    saved, last)


# --- following the divergence back ------------------------------------------------------------------
def _producer(index: GraphIndex, entry: OpEntry, input_index: int) -> OpEntry | None:
    """The op that computes an input, looking through inserted Cast/TransData ops."""
    refs = [t for t in entry.inputs if t and not t.endswith(":-1") and not t.startswith("^")]
    if input_index >= len(refs):
        return None
    current = index.entry(entry.file, entry.graph, split_input(refs[input_index])[0])
    for _ in range(32):
        if current is None or current.type not in NATIVE_TYPES:
            return current
        inner = [t for t in current.inputs if t and not t.startswith("^")]
        current = index.entry(current.file, current.graph, split_input(inner[0])[0]) if inner else None
    return current


def _with_upstream(index: GraphIndex, verdict: Verdict, summary: "CompareSummary | None",
                   ops: dict[str, Any]) -> Verdict:
    """For *inherited*: the op to look at next, walking back while the comparison (`ops`: its results by
    NPU op name) says its inputs fail."""
    if verdict.verdict != INHERITED:
        return verdict
    differing = next((i for i in verdict.inputs if i.vs_golden is not None and not i.vs_golden.agrees), None)
    if differing is None:
        return verdict
    entry = index.entry(Path(verdict.case.graph_file), verdict.case.graph, verdict.case.op_name)
    current = _producer(index, entry, differing.index) if entry is not None else None
    seen = set()
    born = ""
    while current is not None and current.name not in seen:
        seen.add(current.name)
        result = ops.get(current.name)
        failing = result.failing_inputs(summary.threshold) if result is not None and summary is not None else []
        if result is not None and not failing:
            born = " (its inputs pass: the divergence is born there)"
        if result is not None and result.nan_data_outputs and not any(t.nan_data for t in result.inputs):
            born = " (its Inf/NaN is born there)"  # a new failure on top of the inherited one: stop here
            break
        if not failing:
            break
        position = _input_position(failing[0].tensor_index)
        following = _producer(index, current, position) if position is not None else None
        if following is None:
            break
        current = following
    if current is None:
        return verdict
    return dataclasses.replace(verdict, upstream=f"[{current.id}] {current.name} ({current.type}){born}")


def _input_position(tensor_index: str) -> int | None:
    _, _, tail = tensor_index.rpartition(":input:")
    return int(tail) if tail.isdigit() else None


# --- fixes and results ------------------------------------------------------------------------------
def _write_fixes(workspace: Workspace, verdicts: list[Verdict]) -> tuple[list[Verdict], Path | None, list[str]]:
    from precision_tool.analysis.replay.replay_fixes import write_ops_info, write_reproducer

    problems: list[str] = []
    ops_info = None
    # a Cast or TransData that loses float16 range has no float32 version to choose: its producer has
    precision_types = sorted({v.case.op_type for v in verdicts if v.verdict == PRECISION and v.case.mode == "tf"})
    if precision_types:
        try:
            ops_info = write_ops_info(workspace, precision_types)
        except (WorkspaceError, OSError) as exc:
            problems.append(f"fix/ops_info.json not written: {exc}")
    out = []
    for verdict in verdicts:
        fixes: tuple[str, ...] = ()
        if verdict.verdict == PRECISION and ops_info is not None:
            fixes = (str(ops_info),)
        elif verdict.verdict == KERNEL and verdict.case.mode == "tf":  # numpy replays have no TF ops to send
            try:
                fixes = (str(write_reproducer(workspace, verdict)),)
            except (WorkspaceError, OSError) as exc:
                problems.append(f"reproducer of {verdict.case.op_name} not written: {exc}")
        out.append(dataclasses.replace(verdict, fixes=fixes) if fixes else verdict)
    return out, ops_info, problems


CSV_COLUMNS = ("OpId", "Op", "OpType", "Verdict", "Output", "TfTensor", "DataType", "Against", "Agrees")


def save_results(folder: Path, verdicts: Sequence[Verdict]) -> Path:
    """replay.csv (a row per output and reference, the ten metrics) and replay.json (verdicts, evidence)."""
    from precision_tool.analysis.results.metrics import METRIC_NAMES

    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow([*CSV_COLUMNS, *METRIC_NAMES])
    for verdict in verdicts:
        case = verdict.case
        if verdict.verdict == CANNOT:
            writer.writerow([case.op_id, case.op_name, case.op_type, verdict.verdict, "", "", "", "", "",
                             *["NaN"] * len(METRIC_NAMES)])
            continue
        for output in verdict.outputs:
            for against, agreement in output.against.items():
                metrics = output.metrics.get(against)
                values = list(metrics.values) if metrics is not None else ["NaN"] * len(METRIC_NAMES)
                writer.writerow([case.op_id, case.op_name, case.op_type, verdict.verdict, output.index,
                                 output.tf_tensor or "", output.dtype, against,
                                 "YES" if agreement.agrees else "NO", *values])
    path = folder / CSV_NAME
    write_text_atomic(path, buffer.getvalue())
    summary = [{"op_id": v.case.op_id, "op": v.case.op_name, "op_type": v.case.op_type, "debug_id": v.case.debug_id,
                "verdict": v.verdict, "line": v.line, "evidence": list(v.evidence), "upstream": v.upstream,
                "fixes": list(v.fixes), "tf_nodes": list(v.case.tf_nodes), "case_folder": v.case.folder,
                "failed": v.failed}
               for v in verdicts]
    write_text_atomic(folder / JSON_NAME, json.dumps(summary, indent=1) + "\n")
    return path


def read_replay_file(path: Path) -> tuple[dict[str, Any], ...]:
    """The verdicts of one replay.json (as save_results wrote them); FormatError naming the file when it cannot
    be read or is not a list of verdicts."""
    from precision_tool.errors import FormatError

    try:
        verdicts = json.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise FormatError(path, f"cannot be read ({exc.strerror or exc})") from None
    except ValueError as exc:
        raise FormatError(path, f"cannot be read as JSON ({exc})") from None
    if not isinstance(verdicts, list) or not all(isinstance(v, dict) and isinstance(v.get("op"), str)
                                                 and isinstance(v.get("verdict"), str) for v in verdicts):
        raise FormatError(path, "is not a list of verdicts (each with its op and verdict)")
    return tuple(verdicts)


def read_replay(result_dir: Path | None) -> tuple[tuple[dict[str, Any], ...], Path | None, str | None]:
    """The verdicts `ac -c` wrote beside the comparison in `result_dir` (replay/replay.json, or precheck/ for
    `ac -c --precheck`; the newer), if any: (verdicts, the file, why it could not be read)."""
    from precision_tool.errors import FormatError

    if result_dir is None:
        return (), None, None
    found = [p for p in (result_dir / "replay" / JSON_NAME, result_dir / "precheck" / JSON_NAME) if p.is_file()]
    if not found:
        return (), None, None
    path = max(found, key=lambda p: p.stat().st_mtime)
    try:
        return read_replay_file(path), path, None
    except FormatError as exc:
        return (), path, f"{exc}; run `ac -c` again to rewrite it"
