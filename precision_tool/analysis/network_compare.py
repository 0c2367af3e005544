"""Whole-network comparison: plan (matching.py) → compare every group on all cores → result CSV → summary.

Groups are handed to worker processes in graph order, a run of neighbours at a time, so an op's output
and the next op's input (the same golden file, usually the same NPU bytes) meet in one worker: each
golden file is read once there, and an input identical to the previous output reuses its metrics.
Rows reach the CSV in graph order as soon as every earlier group is done.
"""

from __future__ import annotations

import json
import math
import signal
import time
from collections import OrderedDict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Sequence

from precision_tool.analysis.matching import (
    GroupPlan,
    MatchPlan,
    OpPlan,
    TensorMatch,
    dump_iterations,
    find_graph_dump_dir,
    index_dumps,
    plan_graph_compare,
    plan_name_compare,
    plan_npu_compare,
)
from precision_tool.analysis.metrics import (
    LEAF_ELEMENTS,
    NAN_TEXT,
    ArraySource,
    FileSource,
    TensorMetrics,
    compare_sources,
    is_scalar_shape,
    not_compared,
)
from precision_tool.analysis.results import (
    PARTIAL_SUFFIX,
    CompareRow,
    CompareSummary,
    ResultWriter,
    prepare_resume,
    read_result_csv,
    shape_text,
    summarize,
)
from precision_tool.atomic import atomic_path, write_text_atomic
from precision_tool.errors import CommandFailed, FormatError, PrecisionToolError, WorkspaceError

RUN_FILE = "run.json"
Progress = Callable[[str, int, int], None]
"""progress(label, groups_done, groups_total), called as groups finish."""


class CompareInterrupted(CommandFailed):
    """Ctrl-C during a run: the CSV so far is kept (valid, `.partial`) and `vc --resume` continues it."""


@dataclass(frozen=True)
class RunSpec:
    """One comparison to run: which dumps against which golden tensors (or which other NPU run)."""

    label: str
    npu_dir: str
    csv_name: str
    golden_dir: str | None = None
    right_dir: str | None = None
    graph_path: str | None = None
    graph_name: str | None = None
    step: int | None = None
    """Only this dump iteration (the `<iteration>` folder); None: every dump file under npu_dir."""

    @property
    def npu_vs_npu(self) -> bool:
        return self.right_dir is not None

    @property
    def name_only(self) -> bool:
        """NPU vs golden without a graph: matched by op name alone."""
        return self.right_dir is None and self.graph_path is None


def name_only_result(csv_path: Path) -> bool:
    """True when the run.json next to `csv_path` says it was matched by name only (no graph)."""
    name = csv_path.name.removesuffix(PARTIAL_SUFFIX)
    if not (csv_path.parent / RUN_FILE).is_file():
        return False
    try:
        specs = read_run_file(csv_path.parent)
    except FormatError:
        return False
    return any(spec.csv_name == name and spec.name_only for spec in specs)


@dataclass(frozen=True)
class CompareRun:
    """A finished (or interrupted) comparison: where its CSV is and what it found."""

    spec: RunSpec
    csv_path: Path
    summary: CompareSummary
    warnings: tuple[str, ...]
    groups: int
    elapsed_s: float
    bytes_read: int = 0
    unreadable: tuple[tuple[str, str], ...] = ()
    """(file, problem) for each NPU dump or golden .npy that could not be read; their rows say why in
    CompareFailReason."""

    @property
    def label(self) -> str:
        return self.spec.label


# --- reading tensors (worker side) ----------------------------------------------------------------
def npy_source(path: Path) -> tuple[Any, tuple[int, ...], str]:
    """(source, shape, dtype name) of a .npy without loading it; never unpickles."""
    import numpy as np

    try:
        with open(path, "rb") as handle:
            version = np.lib.format.read_magic(handle)
            if version == (1, 0):
                shape, fortran, dtype = np.lib.format.read_array_header_1_0(handle)
            else:
                shape, fortran, dtype = np.lib.format.read_array_header_2_0(handle)
            offset = handle.tell()
    except (OSError, ValueError) as exc:
        raise FormatError(path, f"not a readable .npy file ({exc})") from None
    if dtype.hasobject:
        raise FormatError(path, "holds Python objects; only numeric .npy files are compared (never unpickled)")
    count = int(np.prod(shape)) if shape else 1
    if path.stat().st_size < offset + count * dtype.itemsize:
        raise FormatError(path, "is shorter than its header says; the file is truncated")
    if fortran and len(shape) > 1:
        array = np.load(path, allow_pickle=False)
        return ArraySource(np.ascontiguousarray(array).reshape(-1)), tuple(shape), array.dtype.name
    return FileSource(str(path), offset, dtype, count), tuple(shape), dtype.name


class _Worker:
    """Per-process state: the golden index and small caches of recent tensors."""

    def __init__(self, golden_files: dict[str, str], npu_vs_npu: bool) -> None:
        self.golden_files = golden_files
        self.npu_vs_npu = npu_vs_npu
        self.golden_cache: OrderedDict[str, tuple[Any, tuple[int, ...], str]] = OrderedDict()
        self.recent: OrderedDict[tuple[str, tuple[int, ...]], tuple[Any, TensorMetrics]] = OrderedDict()
        self.bytes_read = 0
        self.unreadable: dict[str, str] = {}
        """file → why it could not be read, for the files met since the parent last collected them."""

    def note_unreadable(self, exc: PrecisionToolError, fallback: Any) -> None:
        if isinstance(exc, FormatError):
            self.unreadable.setdefault(exc.path, exc.problem)
        else:
            self.unreadable.setdefault(str(fallback), str(exc))

    def read_tensor(self, dump: Any, header: Any) -> Any:
        """The tensor's data; a file that cannot be read is noted (and the error passed on)."""
        from precision_tool.formats.npu_dump import read_tensor

        try:
            return read_tensor(dump, header)
        except PrecisionToolError as exc:
            self.note_unreadable(exc, dump.path)
            raise

    # golden tensors, read once per worker while they are recent
    def golden(self, path: str) -> tuple[Any, tuple[int, ...], str]:
        cached = self.golden_cache.get(path)
        if cached is not None:
            self.golden_cache.move_to_end(path)
            return cached
        try:
            source, shape, dtype = npy_source(Path(path))
        except PrecisionToolError as exc:
            self.note_unreadable(exc, path)
            raise
        if source.size <= LEAF_ELEMENTS:
            array = source.read(0, source.size).reshape(shape)
            self.bytes_read += array.nbytes
            entry = (array, shape, dtype)
        else:
            entry = (source, shape, dtype)
        self.golden_cache[path] = entry
        while len(self.golden_cache) > 8:
            self.golden_cache.popitem(last=False)
        return entry

    def run_group(self, group: GroupPlan) -> list[CompareRow]:
        rows: list[CompareRow] = []
        for op in group.ops:
            rows.extend(self._op_rows(group, op))
        return rows

    def _nan_row(self, group: GroupPlan, op: OpPlan, reason: str) -> CompareRow:
        return CompareRow(
            index=group.index, op_type=op.op_type or NAN_TEXT, npu_dump=group.npu_text, npu_dtype=NAN_TEXT,
            npu_address=NAN_TEXT, ground_truth=group.ground_truth_text, golden_dtype=NAN_TEXT,
            tensor_index=NAN_TEXT, shape=NAN_TEXT, metrics=not_compared(reason),
        )

    def _op_rows(self, group: GroupPlan, op: OpPlan) -> list[CompareRow]:
        from precision_tool.formats.npu_dump import read_dump_header

        if op.dump_path is None:
            return [self._nan_row(
                group, op, f'[{op.name}] There is no dump file for my output operator "{op.name}". '
                           f"The type is {op.op_type}.")]
        if self.npu_vs_npu and op.right_dump_path is None:
            # msaccucmp's single row for an op the other run did not dump
            return [CompareRow(
                index=group.index, op_type=NAN_TEXT, npu_dump=group.npu_text, npu_dtype=NAN_TEXT,
                npu_address=NAN_TEXT, ground_truth=group.ground_truth_text, golden_dtype=NAN_TEXT,
                tensor_index=NAN_TEXT, shape=NAN_TEXT,
                metrics=not_compared(f'[{op.name}] There is no the ground truth dump file for the op "{op.name}".'))]
        try:
            dump = read_dump_header(op.dump_path)
        except PrecisionToolError as exc:
            self.note_unreadable(exc, op.dump_path)
            return [self._nan_row(group, op, f"[{op.name}] {exc}")]
        right = None
        if self.npu_vs_npu and op.right_dump_path is not None:
            try:
                right = read_dump_header(op.right_dump_path)
            except PrecisionToolError as exc:
                self.note_unreadable(exc, op.right_dump_path)
                return [self._nan_row(group, op, f"[{op.name}] {exc}")]
        rows = []
        for header in () if op.skip_inputs else dump.inputs:
            rows.append(self._tensor_row(group, op, dump, header, right))
        for header in () if op.skip_outputs else dump.outputs:
            rows.append(self._tensor_row(group, op, dump, header, right))
        if not rows and (op.skip_inputs or op.skip_outputs):
            return [self._nan_row(group, op, "")]  # msaccucmp's row for a quant op with nothing compared
        if not rows:
            rows.append(self._nan_row(group, op, f"[{op.name}] the dump {op.dump_path} holds no tensors"))
        return rows

    def _tensor_row(self, group: GroupPlan, op: OpPlan, dump: Any, header: Any, right: Any) -> CompareRow:
        tensor_id = f"{op.name}:{header.kind}:{header.index}"
        base = dict(
            index=group.index, op_type=op.op_type, npu_dump=group.npu_text,
            npu_address=str(header.address), ground_truth=group.ground_truth_text, tensor_index=tensor_id,
        )
        npu_dtype = _dtype_text(header)
        try:
            if self.npu_vs_npu:
                return self._npu_pair(base, op, dump, header, right, npu_dtype)
            match = op.input_match(header.index) if header.kind == "input" else op.output_match(header.index)
            return self._golden_pair(base, op, dump, header, match, npu_dtype, tensor_id)
        except PrecisionToolError as exc:
            return CompareRow(**base, npu_dtype=NAN_TEXT, golden_dtype=NAN_TEXT,
                              shape=shape_text(header.shape), metrics=not_compared(f"[{op.name}] {exc}"))
        except (ValueError, MemoryError) as exc:
            return CompareRow(**base, npu_dtype=NAN_TEXT, golden_dtype=NAN_TEXT,
                              shape=shape_text(header.shape),
                              metrics=not_compared(f"[{op.name}] {dump.path}: {header.label}: {exc}"))

    def _npu_pair(self, base: dict, op: OpPlan, dump: Any, header: Any, right: Any, npu_dtype: str) -> CompareRow:
        if right is None:
            return CompareRow(**base, npu_dtype=npu_dtype, golden_dtype=NAN_TEXT, shape=shape_text(header.shape),
                              metrics=not_compared(f"[{op.name}] There is no dump file of {op.name} in the other run."))
        tensors = right.inputs if header.kind == "input" else right.outputs
        if header.index >= len(tensors):
            return CompareRow(**base, npu_dtype=npu_dtype, golden_dtype=NAN_TEXT, shape=shape_text(header.shape),
                              metrics=not_compared(f"[{op.name}] {right.path} has no {header.label}."))
        other = tensors[header.index]
        x, y = _without_padding(self.read_tensor(dump, header), header, self.read_tensor(right, other), other)
        x, y = _as_compared(x), _as_compared(y)
        self.bytes_read += header.size + other.size
        metrics = compare_sources(ArraySource(x.reshape(-1)), ArraySource(y.reshape(-1)), shape=header.shape,
                                  npu_file=str(dump.path), golden_file=str(right.path))
        # msaccucmp shows the dump's own (device) shape in NPU-vs-NPU results
        return CompareRow(**base, npu_dtype=npu_dtype, golden_dtype=_dtype_text(other),
                          golden_address=str(other.address), shape=shape_text(header.shape), metrics=metrics)

    def _golden_pair(
        self, base: dict, op: OpPlan, dump: Any, header: Any, match: TensorMatch, npu_dtype: str, tensor_id: str
    ) -> CompareRow:
        from precision_tool.formats.npu_dump import format_name

        golden_path = self.golden_files.get(match.golden.key) if match.golden is not None else None
        if golden_path is None:
            reasons = [f"[{op.name}] There is no the ground truth dump file for {tensor_id}."]
            if match.problem:
                reasons.append(f"[{op.name}] {match.problem}")
            return CompareRow(**base, npu_dtype=NAN_TEXT, golden_dtype=NAN_TEXT, shape=shape_text(header.shape),
                              metrics=not_compared(*reasons))
        golden, golden_shape, golden_dtype = self.golden(golden_path)
        npu_format = format_name(header.format)
        layout = (match.golden.layout or npu_format).upper()
        if match.golden.guess_layout:
            layout = _usual_host_layout(npu_format, len(golden_shape))
        # msaccucmp converts unless the target is ND from a plain layout, or the NPU shape is scalar-like
        convert = not (layout == "ND" and npu_format not in ("FRACTAL_NZ", "NDC1HWC0")) \
            and not is_scalar_shape(header.shape)
        if not convert and header.element_count > LEAF_ELEMENTS and header.data_type not in (27,):
            # big and flat: stream from the file, never hold it
            from precision_tool.formats.npu_dump import numpy_dtype_of

            x_source: Any = FileSource(str(dump.path), header.offset, numpy_dtype_of(header.data_type),
                                       header.element_count)
            shape: tuple[int, ...] = (header.element_count,)
        else:
            array = self.read_tensor(dump, header)
            self.bytes_read += header.size
            if convert:
                array = _convert(array, npu_format, layout, header, match, golden_shape, dump.path)
            shape = tuple(array.shape) if convert else (array.size,)
            x_source = ArraySource(_as_compared(array).reshape(-1))
        y_source = golden if isinstance(golden, (FileSource, ArraySource)) else ArraySource(golden.reshape(-1))
        if x_source.size != y_source.size:
            metrics = not_compared(
                f"[{op.name}] Due to the different shapes on the left and right,the left dump data({x_source.size}) "
                f"can not be compared to the right dump data({y_source.size}). Please check the batch of the dump "
                "data or the shape may be changed due to optimization."
            )
            return CompareRow(**base, npu_dtype=NAN_TEXT, golden_dtype=NAN_TEXT, shape=shape_text(header.shape),
                              metrics=metrics)
        if x_source.size == 0:
            # msaccucmp keeps the dump shape of an empty tensor and decodes it as float64 on both sides
            shape, npu_dtype, golden_dtype = tuple(header.shape), "float64", "float64"
        metrics = self._metrics(x_source, y_source, shape, str(dump.path), golden_path)
        return CompareRow(**base, npu_dtype=npu_dtype, golden_dtype=golden_dtype, shape=shape_text(shape),
                          metrics=metrics)

    def _metrics(self, x: Any, y: Any, shape: tuple[int, ...], npu_file: str, golden_file: str) -> TensorMetrics:
        """Metrics, reused when this golden was just compared with identical NPU values (output → next input)."""
        import numpy as np

        key = (golden_file, shape)
        small = isinstance(x, ArraySource)
        if small:
            seen = self.recent.get(key)
            if seen is not None and seen[0].dtype == x.array.dtype and np.array_equal(seen[0], x.array):
                return seen[1]
        metrics = compare_sources(x, y, shape=shape, npu_file=npu_file, golden_file=golden_file)
        if small and not any(npu_file in reason for reason in metrics.reasons):
            self.recent[key] = (x.array, metrics)
            while len(self.recent) > 8:
                self.recent.popitem(last=False)
        return metrics


def _usual_host_layout(npu_format: str, golden_dims: int) -> str:
    """Without a graph: where a device layout usually comes from (the .npy shape then picks NCHW/NHWC)."""
    if npu_format in ("NC1HWC0", "FRACTAL_Z") and golden_dims == 4:
        return "NCHW"
    if npu_format == "NDC1HWC0" and golden_dims == 5:
        return "NCDHW"
    if npu_format == "FRACTAL_NZ":
        return "ND"
    return npu_format if npu_format not in ("NC1HWC0", "FRACTAL_Z", "NDC1HWC0") else "ND"


def _dtype_text(header: Any) -> str:
    """The numpy name msaccucmp shows; bf16 is decoded to float32 there."""
    from precision_tool.formats.npu_dump import DataType

    if header.data_type == DataType.BF16:
        return "float32"
    try:
        return header.numpy_dtype.name
    except ValueError:
        return NAN_TEXT


def _as_compared(array: Any) -> Any:
    """bf16/fp8 (ml_dtypes) as float32, the rest unchanged (metrics cast to float32 themselves)."""
    import numpy as np

    if array.dtype.kind == "V" or array.dtype.name in ("bfloat16", "float8_e5m2", "float8_e4m3fn", "float8_e8m0fnu"):
        return array.astype(np.float32)
    return array


def _convert(array: Any, npu_format: str, layout: str, header: Any, match: TensorMatch,
             golden_shape: tuple[int, ...], dump_path: Path) -> Any:
    """Device layout → the golden layout, padding cut to the golden .npy's shape (compare.md §1)."""
    from precision_tool.formats.layouts import LayoutError, from_device

    target = header.original_shape or (match.golden.origin_shape if match.golden else None) or ()
    # The original shape is written in the graph's origin layout; naming it lets small weights whose
    # shape fits several readings (3x3x3x16 FRACTAL_Z) convert instead of being refused as ambiguous.
    original_format = match.golden.layout if match.golden and not match.golden.guess_layout else None
    if layout in ("NCHW", "NHWC") and len(golden_shape) == 4 and len(target) == 4 \
            and tuple(golden_shape) != tuple(target):
        swapped = (target[0], target[2], target[3], target[1]) if layout == "NCHW" \
            else (target[0], target[3], target[1], target[2])
        if tuple(golden_shape) == swapped:
            layout = "NHWC" if layout == "NCHW" else "NCHW"
    try:
        converted = from_device(array, npu_format, layout, target or None,
                                original_format=original_format, sub_format=header.sub_format)
    except LayoutError as exc:
        raise FormatError(dump_path, f"{header.label}: cannot convert {npu_format} to {layout}: {exc}") from None
    if converted.ndim == len(golden_shape) and converted.shape != tuple(golden_shape) and all(
        c >= g for c, g in zip(converted.shape, golden_shape)
    ):
        converted = converted[tuple(slice(0, g) for g in golden_shape)]
    return converted


# --- the engine -----------------------------------------------------------------------------------
_WORKER: _Worker | None = None


def _init_worker(golden_files: dict[str, str], npu_vs_npu: bool) -> None:
    global _WORKER
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the parent's to handle
    _WORKER = _Worker(golden_files, npu_vs_npu)


def _run_group(group: GroupPlan) -> tuple[list[CompareRow], int, dict[str, str]]:
    assert _WORKER is not None
    before = _WORKER.bytes_read
    rows = _WORKER.run_group(group)
    unreadable, _WORKER.unreadable = _WORKER.unreadable, {}
    return rows, _WORKER.bytes_read - before, unreadable


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
) -> int:
    """Compare every group of `plan`, streaming rows into `csv_path` (.partial until done). Returns bytes read;
    files that could not be read are added to `unreadable` (file → problem)."""
    import multiprocessing

    done: set[int] = set()
    partial = csv_path.with_name(csv_path.name + PARTIAL_SUFFIX)
    if resume and partial.exists():
        done = prepare_resume(partial)
    todo = [g for g in plan.groups if g.index not in done]
    total = len(plan.groups)
    writer = ResultWriter(csv_path, plan.npu_vs_npu, resume=resume and partial.exists())
    finished = total - len(todo)
    bytes_read = 0
    if progress:
        progress(label, finished, total)
    try:
        if workers <= 1 or len(todo) < 4:
            _init_local(golden_files, plan.npu_vs_npu)
            results = map(_run_group, todo)
            pool = None
        else:
            context = multiprocessing.get_context("fork")
            pool = context.Pool(min(workers, len(todo)), initializer=_init_worker,
                                initargs=(golden_files, plan.npu_vs_npu))
            chunk = max(1, min(32, len(todo) // (workers * 4)))
            results = pool.imap(_run_group, todo, chunksize=chunk)
        try:
            for rows, nbytes, bad_files in results:
                writer.write_group(rows)
                bytes_read += nbytes
                if unreadable is not None:
                    for name, problem in bad_files.items():
                        unreadable.setdefault(name, problem)
                finished += 1
                if progress:
                    progress(label, finished, total)
        finally:
            if pool is not None:
                pool.terminate()
                pool.join()
    except KeyboardInterrupt:
        writer.close()
        raise CompareInterrupted(
            f"interrupted after {finished} of {total} ops; the rows so far are in {partial} "
            "(`vc --resume` finishes the run)"
        ) from None
    except BaseException:
        writer.close()
        raise
    writer.finish()
    return bytes_read


def _init_local(golden_files: dict[str, str], npu_vs_npu: bool) -> None:
    global _WORKER
    _WORKER = _Worker(golden_files, npu_vs_npu)


# --- planning runs ----------------------------------------------------------------------------------
def has_golden_files(folder: Path) -> bool:
    from precision_tool.formats.golden import scan_golden_dir

    return bool(scan_golden_dir(folder))


def plan_run(spec: RunSpec) -> tuple[MatchPlan, dict[str, str]]:
    """Build the plan of one run (reads graph and folder listings, no tensor data)."""
    from precision_tool.formats.golden import scan_golden_dir

    npu_dir = Path(spec.npu_dir)
    if not npu_dir.is_dir():
        raise WorkspaceError(f"NPU dump folder {npu_dir} does not exist; pass one with -lt DIR")
    dumps = index_dumps(npu_dir, with_graph=spec.graph_path is not None, step=spec.step)
    if not dumps.by_op:
        raise WorkspaceError(f"no NPU dump files in {npu_dir}; is it the dump folder of an NPU run?")
    if spec.right_dir is not None:
        right = index_dumps(Path(spec.right_dir), step=spec.step)
        if not right.by_op:
            raise WorkspaceError(f"no NPU dump files in {spec.right_dir}")
        return plan_npu_compare(dumps, right), {}
    golden_dir = Path(spec.golden_dir or "")
    golden = {k: str(v) for k, v in scan_golden_dir(golden_dir).items()}
    if not golden:
        raise WorkspaceError(
            f"no golden .npy tensors (<op>.<slot>.<timestamp>.npy) in {golden_dir}; run `tf_dump` first"
        )
    if spec.graph_path is None:
        return plan_name_compare(dumps, golden), golden
    from precision_tool.formats.ge_graph import load_graph

    model = load_graph(spec.graph_path)
    all_ops = [op for _, op in model.iter_ops()]
    graphs = [g for g in model.graphs if spec.graph_name in (None, g.name)]
    ops = [op for g in graphs for op in g.ops]
    return plan_graph_compare(ops, dumps, all_ops=all_ops), golden


def run_specs(
    specs: Sequence[RunSpec],
    result_dir: Path,
    *,
    workers: int,
    threshold: float,
    progress: Progress | None = None,
    resume: bool = False,
    on_warning: Callable[[str], None] | None = None,
) -> list[CompareRun]:
    """Run each spec into `result_dir` (its run.json records them so `--resume` can continue).

    A fresh run that fails before any result CSV exists leaves no folder behind (discard_empty_result_dir),
    so a failed `vc` never becomes the newest result that `vcs`/`ac` would read."""
    specs = [absolute_spec(spec) for spec in specs]
    if not resume:
        _write_run_file(result_dir, specs)
    try:
        return _run_specs(specs, result_dir, workers=workers, threshold=threshold, progress=progress,
                          resume=resume, on_warning=on_warning)
    except BaseException:
        if not resume:
            discard_empty_result_dir(result_dir)
        raise


def discard_empty_result_dir(result_dir: Path) -> bool:
    """Remove `result_dir` when it holds no result CSV (not even a .partial one); True when removed."""
    if not result_dir.is_dir():
        return False
    entries = list(result_dir.iterdir())
    if any(".csv" in p.name for p in entries):
        return False
    for entry in entries:
        if entry.is_file():
            entry.unlink()
    try:
        result_dir.rmdir()
    except OSError:
        return False
    return True


def _run_specs(
    specs: Sequence[RunSpec],
    result_dir: Path,
    *,
    workers: int,
    threshold: float,
    progress: Progress | None,
    resume: bool,
    on_warning: Callable[[str], None] | None,
) -> list[CompareRun]:
    runs = []
    for spec in specs:
        started = time.perf_counter()
        csv_path = result_dir / spec.csv_name
        plan, golden = plan_run(spec)
        for warning in plan.warnings:
            if on_warning:
                on_warning(f"{spec.label}: {warning}")
        nbytes = 0
        unreadable: dict[str, str] = {}
        if not (resume and csv_path.exists()):
            nbytes = execute_plan(plan, golden, csv_path, workers=workers, progress=progress, label=spec.label,
                                  resume=resume, unreadable=unreadable)
        summary = summarize(read_result_csv(csv_path), threshold, name_only=spec.name_only)
        runs.append(CompareRun(spec, csv_path, summary, plan.warnings, len(plan.groups),
                               time.perf_counter() - started, nbytes, tuple(sorted(unreadable.items()))))
    return runs


PATH_FIELDS = ("npu_dir", "golden_dir", "right_dir", "graph_path")
"""RunSpec fields that are paths: stored absolute in run.json so `vc --resume` works from any folder."""


def absolute_spec(spec: RunSpec, base: Path | None = None) -> RunSpec:
    """`spec` with absolute paths; relative ones are taken relative to `base` (default: the current folder)."""
    import os

    changes = {}
    for name in PATH_FIELDS:
        value = getattr(spec, name)
        if value is not None and not os.path.isabs(value):
            changes[name] = os.path.abspath(os.path.join(base, value) if base is not None else value)
    return RunSpec(**{**spec.__dict__, **changes}) if changes else spec


def _old_relative_spec(spec: RunSpec, workspace: Any) -> RunSpec:
    """run.json files of older versions hold paths relative to where `vc` ran: usually the folder holding
    precision_data, or precision_data itself; take the first base under which the NPU folder exists."""
    import os

    root = Path(workspace.root).resolve()
    if os.path.isabs(spec.npu_dir):
        return spec
    for base in (root.parent, root, Path.cwd()):
        candidate = absolute_spec(spec, base)
        if Path(candidate.npu_dir).is_dir():
            return candidate
    return absolute_spec(spec, root.parent)


def _write_run_file(result_dir: Path, specs: Sequence[RunSpec]) -> None:
    data = {"runs": [spec.__dict__ for spec in specs]}
    write_text_atomic(result_dir / RUN_FILE, json.dumps(data, indent=1))


def read_run_file(result_dir: Path) -> list[RunSpec]:
    path = result_dir / RUN_FILE
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        return [RunSpec(**item) for item in data["runs"]]
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise FormatError(path, f"cannot read the run description ({exc}); start a new run with `vc`") from None


def interrupted_result_dir(workspace: Any) -> Path | None:
    """The newest result folder with an unfinished run (a .partial CSV or a run not yet started)."""
    for folder in reversed(workspace.result_dirs()):
        if not (folder / RUN_FILE).is_file():
            continue
        try:
            specs = read_run_file(folder)
        except FormatError:
            continue
        if any(not (folder / s.csv_name).exists() for s in specs):
            return folder
    return None


def choose_step(folders: Sequence[Path], step: int | None, notes: list[str], what: str) -> int | None:
    """The one dump iteration to compare in `folders`: `step`, else the lowest; a note when others exist.

    Returns None when the folders hold a single iteration (or none: flat folders), so nothing is filtered.
    """
    found: set[int] = set()
    for folder in folders:
        found.update(dump_iterations(folder))
    if step is not None:
        if found and step not in found:
            raise WorkspaceError(f"{what} has no dump iteration {step}; it holds iterations "
                                 f"{', '.join(map(str, sorted(found)))} (vc --step N)")
        return step if found else None
    if len(found) <= 1:
        return None
    chosen = min(found)
    notes.append(f"{what} holds dump iterations {', '.join(map(str, sorted(found)))}: comparing iteration "
                 f"{chosen} only (`vc --step N` picks another; iterations are never mixed)")
    return chosen


def graph_specs(workspace: Any, debug_id: int, npu_dir: Path, golden_dir: Path, stamp: str, notes: list[str],
                step: int | None = None) -> list[RunSpec]:
    """NPU-vs-golden runs of dump folder `npu_dir` (of npu/debug_<debug_id>) through that run's Build graphs,
    each graph against its own dump subfolder; [] when the run has no Build graph."""
    from precision_tool.formats.ge_graph import load_graph

    specs: list[RunSpec] = []
    graph_files = workspace.build_graph_files(debug_id)
    jsons = {p.stem for p in graph_files if p.suffix == ".json"}
    graph_files = [p for p in graph_files if not (p.suffix == ".txt" and p.stem in jsons)]
    first = True
    for graph_file in graph_files:
        model = load_graph(graph_file)
        for graph in model.graphs:
            folder = npu_dir if graph.name in npu_dir.parts else find_graph_dump_dir(npu_dir, graph.name)
            if folder is None:
                if len(graph_files) == 1 and len(model.graphs) == 1:
                    folder = npu_dir
                else:
                    notes.append(f"graph {graph.name} ({graph_file.name}) has no dump folder in {npu_dir}; skipped")
                    continue
            try:
                chosen = choose_step([folder], step, notes, f"the dump of graph {graph.name}")
            except WorkspaceError as exc:
                notes.append(f"{exc}; graph {graph.name} skipped")
                continue
            name = f"result_{stamp}.csv" if first else f"result_{stamp}_{_safe(graph.name)}.csv"
            first = False
            specs.append(RunSpec(f"{graph.name} vs golden", str(folder), name, golden_dir=str(golden_dir),
                                 graph_path=str(graph_file), graph_name=graph.name, step=chosen))
    return specs


def workspace_specs(workspace: Any, stamp: str, notes: list[str] | None = None,
                    step: int | None = None) -> list[RunSpec]:
    """What `vc` with no arguments compares (see the module doc of the command); one dump iteration each."""
    notes = notes if notes is not None else []
    npu_dir = workspace.newest_dump_dir(0)
    if npu_dir is None:
        raise WorkspaceError(
            f"no NPU dumps in {workspace.dump_root(0)}; dump an NPU run first (tf_config), or pass -lt DIR"
        )
    specs: list[RunSpec] = []
    golden_dir = workspace.golden_dir
    if has_golden_files(golden_dir):
        specs.extend(graph_specs(workspace, 0, npu_dir, golden_dir, stamp, notes, step))
        if not specs:
            chosen = choose_step([npu_dir], step, notes, f"the dump {npu_dir}")
            specs.append(RunSpec("NPU vs golden (by name)", str(npu_dir), f"result_{stamp}.csv",
                                 golden_dir=str(golden_dir), step=chosen))
    else:
        notes.append(f"no golden tensors in {golden_dir}: NPU-vs-golden skipped (run `tf_dump` to make them)")
    if 1 in workspace.debug_ids():
        right = workspace.newest_dump_dir(1)
        if right is not None:
            chosen = common_step(npu_dir, right, step, notes)
            specs.append(RunSpec("debug_0 vs debug_1", str(npu_dir), f"result_{stamp}_npu_vs_npu.csv",
                                 right_dir=str(right), step=chosen))
    if not specs:
        raise WorkspaceError(
            f"nothing to compare: no golden tensors in {golden_dir} and no second NPU run (npu/debug_1)"
        )
    return specs


def workspace_debug_id(workspace: Any, folder: Path) -> int | None:
    """N when `folder` lies inside the workspace's npu/debug_N/dump, else None."""
    try:
        target = folder.resolve()
    except OSError:
        return None
    for debug_id in workspace.debug_ids():
        root = workspace.dump_root(debug_id).resolve()
        if target == root or root in target.parents:
            return debug_id
    return None


def common_step(left: Path, right: Path, step: int | None, notes: list[str]) -> int | None:
    """NPU vs NPU: one iteration present in both runs (`step`, else the lowest common one); None when each
    run holds a single iteration (they are compared whatever their numbers)."""
    ours, theirs = set(dump_iterations(left)), set(dump_iterations(right))
    both = (ours & theirs) if ours and theirs else (ours or theirs)
    listed = f"(left: {', '.join(map(str, sorted(ours))) or '-'}; right: {', '.join(map(str, sorted(theirs))) or '-'})"
    if step is not None:
        if step not in both:
            raise WorkspaceError(f"dump iteration {step} is not in both NPU runs {listed}")
        return step
    if len(ours) <= 1 and len(theirs) <= 1:
        return None
    if not both:
        raise WorkspaceError(f"the NPU runs share no dump iteration {listed}; pick the folders with -lt/-rt")
    chosen = min(both)
    notes.append(f"the NPU runs hold several dump iterations {listed}: comparing iteration {chosen} only "
                 "(`vc --step N` picks another; iterations are never mixed)")
    return chosen


def _safe(name: str) -> str:
    return "".join(c if c.isalnum() or c in "-_" else "_" for c in name)


def stamp_of(result_dir: Path) -> str:
    return result_dir.name


def compare_workspace(
    workspace: Any, settings: Any, *, progress: Progress | None = None,
    on_warning: Callable[[str], None] | None = None, step: int | None = None,
) -> list[CompareRun]:
    """`vc` with no arguments: newest debug_0 dump vs golden through debug_0's Build graphs (each graph
    against its own dump subfolder), and debug_0 vs debug_1 when both exist."""
    notes: list[str] = []
    specs = workspace_specs(workspace, "{stamp}", notes, step)  # plan first: no result folder for a failed start
    for note in notes:
        if on_warning:
            on_warning(note)
    result_dir = workspace.new_result_dir()
    specs = [RunSpec(**{**s.__dict__, "csv_name": s.csv_name.replace("{stamp}", result_dir.name)}) for s in specs]
    return run_specs(specs, result_dir, workers=settings.workers, threshold=settings.COSINE_THRESHOLD,
                     progress=progress, on_warning=on_warning)


def resume_workspace(
    workspace: Any, settings: Any, *, workers: int | None = None, progress: Progress | None = None,
    on_warning: Callable[[str], None] | None = None,
) -> list[CompareRun]:
    folder = interrupted_result_dir(workspace)
    if folder is None:
        raise WorkspaceError("no interrupted comparison to resume in " + str(workspace.vector_compare_dir))
    specs = [_old_relative_spec(spec, workspace) for spec in read_run_file(folder)]
    return run_specs(specs, folder, workers=workers or settings.workers, threshold=settings.COSINE_THRESHOLD,
                     progress=progress, resume=True, on_warning=on_warning)


def nan_safe(value: float) -> float | None:
    return None if math.isnan(value) else value


# --- two tensors (`cp`) -----------------------------------------------------------------------------
@dataclass(frozen=True)
class PairReport:
    """`cp A B`: how two tensors differ, element by element and by the ten metrics."""

    left_name: str
    right_name: str
    left_shape: tuple[int, ...]
    right_shape: tuple[int, ...]
    left_dtype: str
    right_dtype: str
    size: int
    allclose: bool
    atol: float
    rtol: float
    error_count: int
    error_items: tuple[tuple[int, float, float], ...]
    first_items: tuple[tuple[int, float, float], ...]
    metrics: TensorMetrics
    saved: tuple[Path, ...] = field(default=())
    conversions: tuple[str, ...] = ()
    """Device layouts turned into host layouts before comparing (one line each)."""


@dataclass(frozen=True)
class LoadedTensor:
    """A tensor named on the `cp` command line; `device_format`/`original_shape` are set for dump tensors."""

    array: Any
    name: str
    device_format: str | None = None
    """The dump's layout when it is a device layout (NC1HWC0 ...), else None (already a host layout)."""
    original_shape: tuple[int, ...] = ()
    sub_format: int = 0


HOST_CANDIDATES: dict[str, tuple[str, ...]] = {
    "NC1HWC0": ("NCHW", "NHWC"),
    "FRACTAL_Z": ("NCHW", "NHWC", "HWCN"),
    "FRACTAL_NZ": ("ND",),
    "NDC1HWC0": ("NCDHW", "NDHWC"),
}
"""Host layouts a device layout can come from, the usual one first (what `cp` converts to)."""


def load_tensor(spec: str) -> LoadedTensor:
    """`x.npy`, or `DUMPFILE:output:0` / `DUMPFILE:input:1` (device layout, with its original shape)."""
    import numpy as np

    from precision_tool.formats.npu_dump import format_name, read_dump_header, read_tensor

    path = Path(spec)
    if path.is_file() and path.suffix == ".npy":
        try:
            return LoadedTensor(np.load(path, allow_pickle=False), path.name)
        except (OSError, ValueError) as exc:
            raise FormatError(path, f"not a readable numeric .npy file ({exc})") from None
    if path.is_file():
        dump = read_dump_header(path)
        if not dump.outputs:
            raise FormatError(path, "has no outputs; name the tensor as FILE:input:N")
        tensor, name = dump.outputs[0], f"{path.name}:output:0"
    else:
        head, sep, index = spec.rpartition(":")
        file_part, sep2, kind = head.rpartition(":")
        if not (sep and sep2 and kind in ("input", "output") and index.isdigit()):
            raise FormatError(spec, "is neither a file nor FILE:input:N / FILE:output:N")
        dump = read_dump_header(file_part)
        tensor, name = dump.tensor(kind, int(index)), f"{Path(file_part).name}:{kind}:{index}"
    array = _as_compared(read_tensor(dump, tensor))
    layout = format_name(tensor.format)
    if layout in HOST_CANDIDATES:
        return LoadedTensor(array, name, layout, tuple(tensor.original_shape), tensor.sub_format)
    return LoadedTensor(array, name)


def _without_padding(x: Any, x_header: Any, y: Any, y_header: Any) -> tuple[Any, Any]:
    """Two NPU tensors in the same device layout, with its zero padding cut the same way on both sides
    (so means and deviations are those of the real values); unchanged when the shapes do not decide it."""
    from precision_tool.formats.layouts import LayoutError, format_label, from_device

    layout = format_label(x_header.format)
    if (layout not in HOST_CANDIDATES or format_label(y_header.format) != layout or not x_header.original_shape
            or tuple(x_header.original_shape) != tuple(y_header.original_shape)):
        return x, y
    host = HOST_CANDIDATES[layout][0]
    try:
        return (from_device(x, layout, host, x_header.original_shape, sub_format=x_header.sub_format),
                from_device(y, layout, host, y_header.original_shape, sub_format=y_header.sub_format))
    except LayoutError:
        return x, y


def to_host_layout(tensor: LoadedTensor, wanted_shape: tuple[int, ...] | None) -> tuple[Any, str]:
    """A device-layout dump tensor in its host layout: the one whose shape is `wanted_shape` when one
    fits (the other side of `cp`), else the usual one (NCHW, ND, NCDHW). Returns (array, what was done)."""
    from precision_tool.formats.layouts import LayoutError, from_device

    assert tensor.device_format is not None
    original = tensor.original_shape or None
    results: list[tuple[str, Any]] = []
    errors: list[str] = []
    for layout in HOST_CANDIDATES[tensor.device_format]:
        try:
            converted = from_device(tensor.array, tensor.device_format, layout, original,
                                    sub_format=tensor.sub_format)
        except LayoutError as exc:
            errors.append(f"{layout}: {exc}")
            continue
        results.append((layout, converted))
        if wanted_shape is not None and tuple(converted.shape) == tuple(wanted_shape):
            break
    if not results:
        raise FormatError(tensor.name, f"cannot convert its {tensor.device_format} layout to a host layout "
                                       f"(original shape {shape_text(tensor.original_shape)}): " + "; ".join(errors))
    fitting = [r for r in results if wanted_shape is not None and tuple(r[1].shape) == tuple(wanted_shape)]
    layout, converted = fitting[0] if fitting else results[0]
    note = (f"{tensor.name}: {tensor.device_format} {shape_text(tensor.array.shape)} converted to {layout} "
            f"{shape_text(converted.shape)} (original shape {shape_text(tensor.original_shape)})")
    return converted, note


def compare_pair(
    left: str, right: str, *, items: int = 20, atol: float = 1e-4, rtol: float = 1e-4,
    save_dir: Path | None = None,
) -> PairReport:
    """Compare two tensors element by element; device layouts are turned into host layouts first;
    `save_dir` also writes both as .txt."""
    import numpy as np

    first, second = load_tensor(left), load_tensor(right)
    conversions: list[str] = []
    a, b = first.array, second.array
    if first.device_format is not None:
        a, note = to_host_layout(first, None if second.device_format else tuple(b.shape))
        conversions.append(note)
    if second.device_format is not None:
        b, note = to_host_layout(second, tuple(a.shape))
        conversions.append(note)
    a_name, b_name = first.name, second.name
    if conversions and tuple(a.shape) != tuple(b.shape):
        raise FormatError(right, f"shape {shape_text(b.shape)} differs from {a_name}'s {shape_text(a.shape)} after "
                                 f"converting the device layout ({'; '.join(conversions)}); they cannot be "
                                 "compared element by element")
    if a.size != b.size:
        raise FormatError(right, f"has {b.size} elements but {a_name} has {a.size}; they cannot be compared")
    x = a.reshape(-1).astype(np.float64)
    y = b.reshape(-1).astype(np.float64)
    with np.errstate(all="ignore"):
        bad = ~(np.abs(x - y) <= atol + rtol * np.abs(y))
    bad_index = np.flatnonzero(bad)
    error_items = tuple((int(i), float(x[i]), float(y[i])) for i in bad_index[:items])
    first_items = tuple((int(i), float(x[i]), float(y[i])) for i in range(min(items, x.size)))
    from precision_tool.analysis.metrics import compare_arrays

    metrics = compare_arrays(a.reshape(-1), b.reshape(-1), shape=a.shape, npu_file=a_name, golden_file=b_name)
    saved: list[Path] = []
    if save_dir is not None:
        save_dir.mkdir(parents=True, exist_ok=True)
        for array, name in ((a, a_name), (b, b_name)):
            target = save_dir / (name.replace(":", ".").replace("/", "_") + ".txt")
            with atomic_path(target) as temp:
                np.savetxt(temp, array.reshape(-1).astype(np.float64), fmt="%.8g")
            saved.append(target)
    return PairReport(a_name, b_name, tuple(a.shape), tuple(b.shape), a.dtype.name, b.dtype.name, int(a.size),
                      int(bad_index.size) == 0, atol, rtol, int(bad_index.size), error_items, first_items,
                      metrics, tuple(saved), tuple(conversions))


def run_specs_cann(specs: Sequence[RunSpec], result_dir: Path, command: list[str], *, threshold: float) -> list[CompareRun]:
    """The same runs done by CANN's msaccucmp (backends/cann.py); its CSVs are read like ours."""
    specs = [absolute_spec(spec) for spec in specs]
    _write_run_file(result_dir, specs)
    try:
        return _run_specs_cann(specs, result_dir, command, threshold=threshold)
    except BaseException:
        discard_empty_result_dir(result_dir)
        raise


def _run_specs_cann(specs: Sequence[RunSpec], result_dir: Path, command: list[str], *,
                    threshold: float) -> list[CompareRun]:
    from precision_tool.backends import cann

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
            other = cann.dump_folder(other)
        csv_path = cann.run_compare(command, cann.dump_folder(Path(spec.npu_dir)), other,
                                    Path(spec.graph_path) if spec.graph_path else None, result_dir,
                                    result_dir / spec.csv_name)
        summary = summarize(read_result_csv(csv_path), threshold, name_only=spec.name_only)
        runs.append(CompareRun(spec, csv_path, summary, (), len(summary.ops), time.perf_counter() - started))
    return runs
