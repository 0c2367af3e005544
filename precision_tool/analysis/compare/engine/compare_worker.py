"""The worker side of the comparison engine: one process's reading and comparing of groups.

A GroupWorker holds what a worker process keeps between groups (the golden index, the last golden files
read, the metrics of recent outputs) and turns a batch of GroupPlans into their CSV rows: small pairs wait
in a MetricsBatch and are measured together when the batch's rows are complete (metrics_batch.py). The
executors (compare_executors.py, dask_executor.py) decide where workers run, through worker_tasks.py; this
module never knows.
"""

from __future__ import annotations

from collections import OrderedDict
from pathlib import Path
from typing import Any, Sequence

from precision_tool.analysis.compare.engine.golden_layout import (
    as_compared, to_golden_layout, usual_host_layout, without_padding,
)
from precision_tool.analysis.compare.engine.golden_source import npy_source
from precision_tool.analysis.compare.engine.tensor_recipes import Recipes
from precision_tool.analysis.compare.matching import GroupPlan, OpPlan, TensorMatch
from precision_tool.analysis.results.metrics import (
    LEAF_ELEMENTS,
    NAN_TEXT,
    ArraySource,
    FileSource,
    TensorMetrics,
    compare_sources,
    is_scalar_shape,
    not_compared,
)
from precision_tool.analysis.results.metrics_batch import (
    NOT_YET, CopiedMetrics, MetricsBatch, PendingMetrics, batchable,
)
from precision_tool.analysis.results.metrics_sweeps import keep_freed_memory
from precision_tool.analysis.results.result_columns import Columns, overflow_text
from precision_tool.analysis.results.result_writer import CompareRow
from precision_tool.errors import FormatError, PrecisionToolError
from precision_tool.formats.npu.dump_types import format_name
from precision_tool.formats.npu.npu_dump import read_dump_start, read_tensor
from precision_tool.gc_pause import without_gc
from precision_tool.shapes import shape_text


# --- reading tensors ----------------------------------------------------------------
SMALL_FILE = 1 << 20
"""Dump and golden files up to this size are read whole, in one call with their headers (real networks
are mostly many small tensors, where each extra open and read costs more than the bytes)."""
TINY_PAIR = 4096
"""Pairs of at most this many elements skip the search for an identical recent pair (an output read again as
the next op's input): the batch measures them for less than the byte comparison costs."""
BATCH_QUEUE_ELEMENTS = 1 << 22
"""Pairs queued for batched metrics hold at most this many elements a side (16 MB of float32)."""


class GroupWorker:
    """Per-process state: the golden index and small caches of recent tensors."""

    def __init__(self, golden_files: dict[str, str], npu_vs_npu: bool, columns: Columns = Columns()) -> None:
        keep_freed_memory()  # glibc: keep freed tensor memory for the next tensor (no page faults per read)
        self.golden_files = golden_files
        self.npu_vs_npu = npu_vs_npu
        self.columns = columns
        self.golden_cache: OrderedDict[str, tuple[Any, tuple[int, ...], str]] = OrderedDict()
        self.recent: OrderedDict[tuple[str, tuple[int, ...]], tuple[Any, TensorMetrics]] = OrderedDict()
        self.bytes_read = 0
        self.unreadable: dict[str, str] = {}
        """file → why it could not be read, for the files met since the parent last collected them."""
        self.batch = MetricsBatch()
        """Small pairs waiting for their metrics: computed together when the groups' rows are complete."""
        self._pending: list[PendingMetrics] = []
        """The rows' metrics waiting for the batch, in the batch's order."""
        self._copies: list[CopiedMetrics] = []
        """Pairs identical to a queued one (an output read again as the next op's input): filled from it."""
        self._whole: dict[int, bytes] = {}
        """id(DumpFile) → the whole file, for the dumps of the op being compared that were read whole."""
        self.recipes = Recipes()
        self._kinds: dict[tuple[Any, ...], Any] = {}
        """_small_pair's decisions by kind of tensor (None: the kind takes the general way)."""
        self._twins: dict[tuple[str, bytes], tuple[Any, PendingMetrics, str]] = {}
        """(golden file, a small tensor's stored bytes) → its kind, metrics and NPU file, for the last
        KEPT_TWINS pairs _small_pair queued."""
        self._batched = type(self).measure is GroupWorker.measure  # (a subclass sees every pair: report_tensors.py)
        import numpy as np

        self._ndarray = np.ndarray

    def note_unreadable(self, exc: PrecisionToolError, fallback: Any) -> None:
        if isinstance(exc, FormatError):
            self.unreadable.setdefault(exc.path, exc.problem)
        else:
            self.unreadable.setdefault(str(fallback), str(exc))

    def read_dump(self, path: Path) -> Any:
        """A dump's header, its bytes kept for read_tensor when the file is small."""
        dump, whole = read_dump_start(path, whole_below=SMALL_FILE, parse_name=False)
        if whole is not None:
            self._whole[id(dump)] = whole
        return dump

    def read_tensor(self, dump: Any, header: Any) -> Any:
        """The tensor's data; a file that cannot be read is noted (and the error passed on)."""
        try:
            return read_tensor(dump, header, self._whole.get(id(dump)))
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
            source, shape, dtype = npy_source(path, SMALL_FILE)
        except PrecisionToolError as exc:
            self.note_unreadable(exc, path)
            raise
        if source.__class__ is ArraySource:  # (read whole already)
            array = source.array.reshape(shape)
            self.bytes_read += array.nbytes
            entry = (array, shape, dtype)
        elif source.size <= LEAF_ELEMENTS:
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
        return self.run_groups([group])[0]

    @without_gc
    def run_groups(self, groups: Sequence[GroupPlan]) -> list[list[CompareRow]]:
        """Each group's rows; the small pairs of all of them get their metrics in one batch at the end."""
        out: list[list[CompareRow]] = []
        for group in groups:
            rows: list[CompareRow] = []
            for op in group.ops:
                rows.extend(self._op_rows(group, op))
                self._whole.clear()
            out.append(rows)
        self._measure_batch()
        return out

    def _measure_batch(self) -> None:
        """The queued pairs' metrics, each into its row."""
        if len(self.batch):
            for pending, metrics in zip(self._pending, self.batch.compute()):
                pending.fill(metrics)
            self._pending = []
        for copy in self._copies:
            if any(copy.source_file in reason for reason in copy.source.reasons):
                # the reasons name the first pair's NPU file: this pair's own must be named, so measure it
                copy.fill(self.measure(*copy.pair()))
            else:
                copy.fill(copy.source)
        self._copies = []

    def _nan_row(self, group: GroupPlan, op: OpPlan, reason: str) -> CompareRow:
        return CompareRow(
            index=group.index, op_type=op.op_type or NAN_TEXT, npu_dump=group.npu_text, npu_dtype=NAN_TEXT,
            npu_address=NAN_TEXT, ground_truth=group.ground_truth_text, golden_dtype=NAN_TEXT,
            tensor_index=NAN_TEXT, shape=NAN_TEXT, metrics=not_compared(reason),
        )

    def _op_rows(self, group: GroupPlan, op: OpPlan) -> list[CompareRow]:
        rows = self._plain_op_rows(group, op)
        if not (self.columns.overflow or self.columns.sequence):
            return rows
        import dataclasses

        flagged = op.name in self.columns.overflow_ops
        out = []
        for row in rows:
            if self.columns.overflow and flagged and (row.tensor_index == NAN_TEXT or ":output:" in row.tensor_index):
                row = dataclasses.replace(row, overflow="YES")  # the run's Opdebug record names this op
            out.append(dataclasses.replace(row, op_sequence=str(op.sequence)))
        return out

    def _with_overflow(self, row: CompareRow, dump: Any, header: Any) -> CompareRow:
        import dataclasses

        from precision_tool.formats.npu.dump_types import numpy_dtype_of

        def read() -> Any:
            if header.element_count > LEAF_ELEMENTS:
                return FileSource(str(dump.path), header.offset, numpy_dtype_of(header.data_type),
                                  header.element_count)
            return self.read_tensor(dump, header).reshape(-1)

        try:
            return dataclasses.replace(row, overflow=overflow_text(header, read))
        except (PrecisionToolError, ValueError, OSError):
            return row  # the row already says why the tensor could not be read

    def _plain_op_rows(self, group: GroupPlan, op: OpPlan) -> list[CompareRow]:
        if op.skip_reason is not None:  # a group of inner nodes: msaccucmp skips them, dumped or not
            return [self._nan_row(group, op, op.skip_reason)]
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
            dump = self.read_dump(op.dump_path)
        except PrecisionToolError as exc:
            self.note_unreadable(exc, op.dump_path)
            return [self._nan_row(group, op, f"[{op.name}] {exc}")]
        right = None
        if self.npu_vs_npu and op.right_dump_path is not None:
            try:
                right = self.read_dump(op.right_dump_path)
            except PrecisionToolError as exc:
                self.note_unreadable(exc, op.right_dump_path)
                return [self._nan_row(group, op, f"[{op.name}] {exc}")]
        headers = (*(() if op.skip_inputs else dump.inputs), *(() if op.skip_outputs else dump.outputs))
        if self.columns.overflow:
            rows = [self._with_overflow(self._tensor_row(group, op, dump, header, right), dump, header)
                    for header in headers]
        else:
            rows = [self._tensor_row(group, op, dump, header, right) for header in headers]
        if not rows and (op.skip_inputs or op.skip_outputs):
            return [self._nan_row(group, op, "")]  # msaccucmp's row for a quant op with nothing compared
        if not rows:
            rows.append(self._nan_row(group, op, f"[{op.name}] the dump {op.dump_path} holds no tensors"))
        return rows

    def _tensor_row(self, group: GroupPlan, op: OpPlan, dump: Any, header: Any, right: Any) -> CompareRow:
        tensor_id = f"{op.name}:{header.kind}:{header.index}"
        try:
            if self.npu_vs_npu:
                cells = self._npu_pair(op, dump, header, right)
            else:
                match = op.input_match(header.index) if header.kind == "input" else op.output_match(header.index)
                cells = self._golden_pair(op, dump, header, match, tensor_id)
        except PrecisionToolError as exc:
            cells = _failed(header, f"[{op.name}] {exc}")
        except (ValueError, MemoryError) as exc:
            cells = _failed(header, f"[{op.name}] {dump.path}: {header.label}: {exc}")
        npu_dtype, golden_dtype, shape, metrics, golden_address = cells
        # (positional: a row per tensor, where keywords cost a third more)
        return CompareRow(group.index, op.op_type, group.npu_text, npu_dtype, str(header.address),
                          group.ground_truth_text, golden_dtype, tensor_id, shape, metrics, golden_address)

    def _npu_pair(self, op: OpPlan, dump: Any, header: Any, right: Any) -> PairCells:
        npu_dtype = _dtype_text(header)
        if right is None:
            return (npu_dtype, NAN_TEXT, shape_text(header.shape),
                    not_compared(f"[{op.name}] There is no dump file of {op.name} in the other run."), NAN_TEXT)
        tensors = right.inputs if header.kind == "input" else right.outputs
        if header.index >= len(tensors):
            return (npu_dtype, NAN_TEXT, shape_text(header.shape),
                    not_compared(f"[{op.name}] {right.path} has no {header.label}."), NAN_TEXT)
        other = tensors[header.index]
        x, y = without_padding(self.read_tensor(dump, header), header, self.read_tensor(right, other), other)
        x, y = as_compared(x), as_compared(y)
        self.bytes_read += header.size + other.size
        metrics = self.measure(ArraySource(x.reshape(-1)), ArraySource(y.reshape(-1)), tuple(header.shape),
                               str(dump.path), str(right.path))
        # msaccucmp shows the dump's own (device) shape in NPU-vs-NPU results
        return npu_dtype, _dtype_text(other), shape_text(header.shape), metrics, str(other.address)

    def _golden_pair(self, op: OpPlan, dump: Any, header: Any, match: TensorMatch, tensor_id: str) -> PairCells:
        golden_path = self.golden_files.get(match.golden.key) if match.golden is not None else None
        if golden_path is None:
            reasons = [f"[{op.name}] There is no the ground truth dump file for {tensor_id}."]
            if match.problem:
                reasons.append(f"[{op.name}] {match.problem}")
            return _failed(header, *reasons)
        golden, golden_shape, golden_dtype = self.golden(golden_path)
        whole = self._whole.get(id(dump))
        if whole is not None and self._batched and golden.__class__ is self._ndarray:
            cells = self._small_pair(dump, header, match, golden, golden_shape, golden_dtype, whole, golden_path)
            if cells is not None:
                return cells
        npu_format, layout, convert = _conversion(header, match.golden, golden_shape)
        if not convert and header.element_count > LEAF_ELEMENTS and header.data_type not in (27,):
            # big and flat: stream from the file, never hold it
            from precision_tool.formats.npu.dump_types import numpy_dtype_of

            x_source: Any = FileSource(str(dump.path), header.offset, numpy_dtype_of(header.data_type),
                                       header.element_count)
            shape: tuple[int, ...] = (header.element_count,)
        else:
            recipe = None if whole is None else \
                self.recipes.get(header, match, npu_format, layout, convert, golden_shape, dump.path)
            if recipe is not None:  # a small tensor of a kind already worked out (tensor_recipes.py)
                x_source = ArraySource(recipe.values(whole, header.offset))
                shape = recipe.shape
            else:
                array = self.read_tensor(dump, header)
                if convert:
                    array = to_golden_layout(array, npu_format, layout, header, match, golden_shape, dump.path)
                shape = tuple(array.shape) if convert else (array.size,)
                x_source = ArraySource(as_compared(array).reshape(-1))
            self.bytes_read += header.size
        y_source = golden if isinstance(golden, (FileSource, ArraySource)) else ArraySource(golden.reshape(-1))
        if x_source.size != y_source.size:
            metrics = not_compared(
                f"[{op.name}] Due to the different shapes on the left and right,the left dump data({x_source.size}) "
                f"can not be compared to the right dump data({y_source.size}). Please check the batch of the dump "
                "data or the shape may be changed due to optimization."
            )
            return NAN_TEXT, NAN_TEXT, shape_text(header.shape), metrics, NAN_TEXT
        npu_dtype = _dtype_text(header)
        if x_source.size == 0:
            # msaccucmp keeps the dump shape of an empty tensor and decodes it as float64 on both sides
            shape, npu_dtype, golden_dtype = tuple(header.shape), "float64", "float64"
        metrics = self._metrics(x_source, y_source, shape, str(dump.path), golden_path)
        return npu_dtype, golden_dtype, shape_text(shape), metrics, NAN_TEXT

    def _small_pair(self, dump: Any, header: Any, match: TensorMatch, golden: Any, golden_shape: tuple[int, ...],
                    golden_dtype: str, whole: bytes, golden_path: str) -> PairCells | None:
        """_golden_pair's answer for a small tensor read whole, queued for the batch; None: take the general
        way. Everything but the bytes is decided once per kind of tensor (`_kind`), not per tensor: at 20,000
        small ops those decisions cost more than the tensor's own reading."""
        ref = match.golden
        key = (header.data_type, header.format, header.shape, header.original_shape, header.size,
               header.sub_format, ref.layout, ref.origin_shape, ref.guess_layout, golden_shape)
        kind = self._kinds.get(key, _UNSEEN)
        if kind is _UNSEEN:
            if len(self._kinds) >= KEPT_KINDS:
                self._kinds.clear()
            kind = self._kinds[key] = self._kind(dump, header, match, golden, golden_shape)
        if kind is None or golden.dtype.kind not in "iuf":
            return None
        recipe, npu_dtype, shape_cells, scalar = kind
        self.bytes_read += header.size
        npu_file = str(dump.path)
        # an output read again as the next op's input: the same bytes, kind and golden give the same metrics
        stored = whole[header.offset:header.offset + header.size]
        twin = self._twins.get((golden_path, stored))
        if twin is not None and twin[0] is kind:
            earlier, earlier_file = twin[1], twin[2]
            if earlier.values is NOT_YET:  # still queued: filled from it when the batch is measured
                offset = header.offset  # (the pair is made only if it must be measured on its own: rarely)
                metrics: TensorMetrics = CopiedMetrics(NOT_YET, source=earlier, source_file=earlier_file, pair=lambda: (
                    ArraySource(recipe.values(whole, offset)), ArraySource(golden.reshape(-1)), recipe.shape,
                    npu_file, golden_path))
                self._copies.append(metrics)  # type: ignore[arg-type]
                return npu_dtype, golden_dtype, shape_cells, metrics, NAN_TEXT
            if not any(earlier_file in reason for reason in earlier.reasons):
                return npu_dtype, golden_dtype, shape_cells, earlier, NAN_TEXT
        self.batch.add_flat(recipe.values(whole, header.offset), golden.reshape(-1), scalar, npu_file, golden_path)
        metrics = PendingMetrics(NOT_YET)
        self._pending.append(metrics)  # (as _metrics queues a tiny pair: the batch is measured at the end)
        self._twins[(golden_path, stored)] = (kind, metrics, npu_file)
        if len(self._twins) > KEPT_TWINS:
            del self._twins[next(iter(self._twins))]
        return npu_dtype, golden_dtype, shape_cells, metrics, NAN_TEXT

    def _kind(self, dump: Any, header: Any, match: TensorMatch, golden: Any,
              golden_shape: tuple[int, ...]) -> tuple[Any, str, str, bool] | None:
        """What every small tensor of this kind gets in _golden_pair (the same steps, taken once): its recipe,
        dtype text, compared shape and scalar rule; None when the kind takes the general way (no recipe,
        sizes that differ, a pair too big for the batch)."""
        npu_format, layout, convert = _conversion(header, match.golden, golden_shape)
        if not convert and header.element_count > LEAF_ELEMENTS:
            return None
        recipe = self.recipes.get(header, match, npu_format, layout, convert, golden_shape, dump.path)
        if recipe is None:
            return None
        size = recipe.count if recipe.index is None else recipe.index.size
        if not 0 < size <= TINY_PAIR or size != golden.size or recipe.dtype.kind not in "iuf":
            return None
        return recipe, _dtype_text(header), shape_text(recipe.shape), is_scalar_shape(recipe.shape)

    def _metrics(self, x: Any, y: Any, shape: tuple[int, ...], npu_file: str, golden_file: str) -> TensorMetrics:
        """Metrics, reused when this golden was just compared with identical NPU values (output → next input);
        a small pair is queued for the batch (run_groups fills its row in)."""
        key = (golden_file, shape)
        small = isinstance(x, ArraySource)
        batched = type(self).measure is GroupWorker.measure  # (a subclass sees every pair: report_tensors.py)
        if batched and small and x.size <= TINY_PAIR and isinstance(y, ArraySource) and batchable(x.array, y.array):
            # measured in the batch for less than the comparison with a recent pair would cost
            self.batch.add(x.array, y.array, shape, npu_file, golden_file)
            metrics: TensorMetrics = PendingMetrics(NOT_YET)
            self._pending.append(metrics)
            return metrics
        seen = self.recent.get(key) if small else None
        if seen is not None and _same_bytes(seen[0], x.array):
            earlier, earlier_file = seen[1], seen[2]
            if isinstance(earlier, PendingMetrics) and earlier.values is NOT_YET:
                copy = CopiedMetrics(NOT_YET, source=earlier, source_file=earlier_file,
                                     pair=lambda: (x, y, shape, npu_file, golden_file))
                self._copies.append(copy)
                return copy
            if not any(earlier_file in reason for reason in earlier.reasons):
                return earlier
        if batched and small and isinstance(y, ArraySource) and batchable(x.array, y.array):
            self.batch.add(x.array, y.array, shape, npu_file, golden_file)
            metrics = PendingMetrics(NOT_YET)
            self._pending.append(metrics)
        else:
            metrics = self.measure(x, y, shape, npu_file, golden_file)
        if small:
            self.recent[key] = (x.array, metrics, npu_file)
            while len(self.recent) > 8:
                self.recent.popitem(last=False)
        if self.batch.elements >= BATCH_QUEUE_ELEMENTS:
            self._measure_batch()  # big tensors: measure now rather than hold hundreds of them
        return metrics

    def measure(self, x: Any, y: Any, shape: tuple[int, ...], npu_file: str, golden_file: str) -> TensorMetrics:
        """The ten metrics of one pair of tensors as compared (NPU side in the golden layout, padding cut);
        the one place a subclass (the report's statistics) sees both sides of every pair."""
        return compare_sources(x, y, shape=shape, npu_file=npu_file, golden_file=golden_file)


_UNSEEN = object()
KEPT_KINDS = 1024
"""Kinds of small tensor remembered at once (a network has tens; forgotten all at once past this)."""
KEPT_TWINS = 64
"""Small pairs remembered for an identical pair read again (an op's output is its consumers' input: the
next ops, mostly). Their bytes come from files read whole, mostly a few KB each."""


def _same_bytes(a: Any, b: Any) -> bool:
    """Same dtype, shape and bytes (so the metrics are the same too; NaN included, unlike np.array_equal,
    and an order of magnitude faster than it on float16)."""
    import numpy as np

    if a.dtype != b.dtype or a.shape != b.shape:
        return False
    if a is b:
        return True
    if not (a.flags.c_contiguous and b.flags.c_contiguous) or a.dtype.hasobject:
        return bool(np.array_equal(a, b))
    if a.nbytes % 8 == 0:
        return bool(np.array_equal(a.reshape(-1).view(np.uint64), b.reshape(-1).view(np.uint64)))
    return bool(np.array_equal(a.reshape(-1).view(np.uint8), b.reshape(-1).view(np.uint8)))


_DTYPE_TEXTS: dict[int, str] = {}


def _dtype_text(header: Any) -> str:
    """The numpy name msaccucmp shows; bf16 is decoded to float32 there."""
    text = _DTYPE_TEXTS.get(header.data_type)
    if text is None:
        from precision_tool.formats.npu.dump_types import DataType

        if header.data_type == DataType.BF16:
            text = "float32"
        else:
            try:
                text = header.numpy_dtype.name
            except ValueError:
                text = NAN_TEXT
        _DTYPE_TEXTS[header.data_type] = text
    return text


def _conversion(header: Any, golden: Any, golden_shape: tuple[int, ...]) -> tuple[str, str, bool]:
    """(NPU format, golden layout, whether the NPU tensor is converted to that layout) as msaccucmp decides:
    it converts unless the target is ND from a plain layout, or the NPU shape is scalar-like."""
    npu_format = format_name(header.format)
    layout = (golden.layout or npu_format).upper()
    if golden.guess_layout:
        layout = usual_host_layout(npu_format, len(golden_shape))
    convert = not (layout == "ND" and npu_format not in ("FRACTAL_NZ", "NDC1HWC0")) \
        and not is_scalar_shape(header.shape)
    return npu_format, layout, convert


PairCells = tuple[str, str, str, TensorMetrics, str]
"""A tensor row's NPU dtype, golden dtype, Shape, metrics and golden address (NPU vs NPU only)."""


def _failed(header: Any, *reasons: str) -> PairCells:
    """The cells of a tensor that could not be compared."""
    return NAN_TEXT, NAN_TEXT, shape_text(header.shape), not_compared(*reasons), NAN_TEXT
