"""Two tensors (`cp A B`): device layouts turned into host layouts, the elements that differ most, the ten
metrics."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from precision_tool.analysis.compare.engine.golden_layout import HOST_CANDIDATES, as_compared
from precision_tool.analysis.results.metrics import TensorMetrics
from precision_tool.shapes import shape_text
from precision_tool.atomic import atomic_path
from precision_tool.errors import FormatError, UsageError


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
    worst_items: tuple["WorstItem", ...]
    """The elements that differ most, worst first (see `worst_elements`)."""
    metrics: TensorMetrics
    saved: tuple[Path, ...] = field(default=())
    conversions: tuple[str, ...] = ()
    """Device layouts turned into host layouts before comparing (one line each)."""
    first_error: tuple[int, ...] | None = None
    """Where in A's shape the first element outside the tolerances is; None when there is none."""
    tolerance_dtype: str | None = None
    """The dtype whose default tolerances were used (TOLERANCES); None when -al and -rl were both given."""
    tolerances_given: tuple[bool, bool] = (False, False)
    """Whether rtol and atol came from the command line."""


@dataclass(frozen=True)
class WorstItem:
    """One of the elements that differ most: where it is in the tensor's shape, both values, how far apart."""

    index: tuple[int, ...]
    a: float | complex
    b: float | complex
    abs_error: float
    """|A-B|; inf when one side is NaN or Inf and the other is not the same."""
    rel_error: float
    """|A-B| / |B|; inf when B is 0 (or not finite) and they differ."""
    error: bool
    """Outside the tolerances (|A-B| > atol + rtol·|B|)."""


CHUNK_ELEMENTS = 1 << 20
"""Elements compared at a time (8 MB per float64 temporary): a 2 GB tensor is never copied whole."""


@dataclass(frozen=True)
class LoadedTensor:
    """A tensor named on the `cp` command line; `device_format`/`original_shape` are set for dump tensors."""

    array: Any
    name: str
    device_format: str | None = None
    """The dump's layout when it is a device layout (NC1HWC0 ...), else None (already a host layout)."""
    original_shape: tuple[int, ...] = ()
    sub_format: int = 0
    dtype: str = ""
    """The tensor's own dtype name (bfloat16 stays bfloat16 although `array` holds it as float32)."""


TOLERANCES: dict[str, tuple[float, float]] = {
    # (rtol, atol): about one epsilon of the dtype (the gap between 1 and the next value), rounded up to
    # 1, 2 or 5 times a power of ten; an NPU result rounded once more than the golden one stays inside.
    "float16": (1e-3, 1e-3),  # epsilon 2^-10 = 9.8e-4
    "bfloat16": (1e-2, 1e-2),  # epsilon 2^-7 = 7.8e-3: 8 bits of mantissa
    "float8_e4m3fn": (0.2, 0.2),  # epsilon 2^-3 = 0.125
    "float8_e5m2": (0.5, 0.5),  # epsilon 2^-2 = 0.25
    # epsilon 1.2e-7 (2.2e-16): numpy's allclose defaults, what users of float32/64 results expect
    "float32": (1e-5, 1e-8),
    "float64": (1e-5, 1e-8),
}
"""Default `cp` tolerances by dtype; the less precise dtype of the two tensors decides."""


def default_tolerances(dtypes: tuple[str, ...]) -> tuple[float, float, str]:
    """(rtol, atol, the dtype that decided) for comparing tensors of these dtypes: the loosest float
    entry of TOLERANCES; integers and booleans alone are compared exactly."""
    known = [d for d in dtypes if d in TOLERANCES]
    if not known:
        floats = [d for d in dtypes if d.startswith(("float", "bfloat", "complex"))]
        if floats:  # a float dtype without an entry (float8 variants ...): numpy's defaults
            return 1e-5, 1e-8, floats[0]
        return 0.0, 0.0, dtypes[0] if dtypes else "?"
    loosest = max(known, key=lambda d: TOLERANCES[d])
    rtol, atol = TOLERANCES[loosest]
    return rtol, atol, loosest


def load_tensor(spec: str) -> LoadedTensor:
    """`x.npy`, or `DUMPFILE:output:0` / `DUMPFILE:input:1` (device layout, with its original shape)."""

    from precision_tool.formats.npu.dump_types import format_name
    from precision_tool.formats.npu.npu_dump import read_dump_header, read_tensor

    path = Path(spec)
    if path.is_file() and path.suffix == ".npy":
        from precision_tool.formats.tf.golden import load_npy

        array = load_npy(path)  # FormatError naming the file for a damaged or hostile header
        return LoadedTensor(as_compared(array), path.name, dtype=array.dtype.name)
    if path.is_file():
        dump = read_dump_header(path)
        if not dump.outputs:
            raise FormatError(path, "has no outputs; name the tensor as FILE:input:N")
        tensor, name = dump.outputs[0], f"{path.name}:output:0"
    else:
        head, sep, index = spec.rpartition(":")
        file_part, sep2, kind = head.rpartition(":")
        if not (sep and sep2 and kind in ("input", "output") and index.isascii() and index.isdigit()):
            raise FormatError(spec, "is neither a file nor FILE:input:N / FILE:output:N")
        dump = read_dump_header(file_part)
        tensor, name = dump.tensor(kind, int(index)), f"{Path(file_part).name}:{kind}:{index}"
    raw = read_tensor(dump, tensor)
    array = as_compared(raw)
    layout = format_name(tensor.format)
    if layout in HOST_CANDIDATES:
        return LoadedTensor(array, name, layout, tuple(tensor.original_shape), tensor.sub_format, raw.dtype.name)
    return LoadedTensor(array, name, dtype=raw.dtype.name)


def to_host_layout(tensor: LoadedTensor, wanted_shape: tuple[int, ...] | None,
                   graph_layout: str | None = None) -> tuple[Any, str]:
    """A device-layout dump tensor in its host layout: the one the Build graph names (`graph_layout`, its
    origin_format) when given, else the one whose shape is `wanted_shape` when one fits (the other side of
    `cp`), else the usual one (NCHW, ND, NCDHW). Returns (array, what was done).

    The graph decides where it can: [8,16,16,16] reads as NCHW and as NHWC alike."""
    from precision_tool.formats.npu.layouts import LayoutError, from_device

    assert tensor.device_format is not None
    original = tensor.original_shape or None
    results: list[tuple[str, Any]] = []
    errors: list[str] = []
    candidates = list(HOST_CANDIDATES[tensor.device_format])
    if graph_layout in candidates:
        candidates = [graph_layout]
    for layout in candidates:
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
    why = "the Build graph's origin layout; original shape" if graph_layout == layout else "original shape"
    note = (f"{tensor.name}: {tensor.device_format} {shape_text(tensor.array.shape)} converted to {layout} "
            f"{shape_text(converted.shape)} ({why} {shape_text(tensor.original_shape)})")
    return converted, note


def compare_pair(
    left: str, right: str, *, items: int = 20, atol: float | None = None, rtol: float | None = None,
    save_dir: Path | None = None, graph_layouts: dict[str, str] | None = None,
) -> PairReport:
    """Compare two tensors element by element; device layouts are turned into host layouts first (the
    layout `graph_layouts` gives for a spec, from the Build graph, else by shape); `save_dir` also writes
    both as .txt. A tolerance not given comes from the dtypes (TOLERANCES)."""
    import numpy as np

    first, second = load_tensor(left), load_tensor(right)
    default_rtol, default_atol, decided_by = default_tolerances((first.dtype, second.dtype))
    tolerance_dtype = decided_by if rtol is None or atol is None else None
    given = (rtol is not None, atol is not None)
    rtol = default_rtol if rtol is None else rtol
    atol = default_atol if atol is None else atol
    conversions: list[str] = []
    a, b = first.array, second.array
    layouts = graph_layouts or {}
    if first.device_format is not None:
        a, note = to_host_layout(first, None if second.device_format else tuple(b.shape), layouts.get(left))
        conversions.append(note)
    if second.device_format is not None:
        b, note = to_host_layout(second, tuple(a.shape), layouts.get(right))
        conversions.append(note)
    a_name, b_name = first.name, second.name
    if (conversions and tuple(a.shape) != tuple(b.shape)) or a.size != b.size:
        # one line: which shapes, and (for a device layout) that they are the host-layout shapes
        def described(name: str, array: Any, loaded: LoadedTensor) -> str:
            how = f", from {loaded.device_format}" if loaded.device_format else ""
            return f"{name} is {shape_text(array.shape)} ({array.size} elements{how})"

        raise UsageError(f"cp: {described(a_name, a, first)} but {described(b_name, b, second)}; they cannot be "
                         "compared element by element: name two tensors of one shape")
    flat_a, flat_b = a.reshape(-1), b.reshape(-1)
    error_count, first_flat, worst = worst_elements(flat_a, flat_b, items, atol, rtol)
    value = complex if np.iscomplexobj(flat_a) or np.iscomplexobj(flat_b) else float
    worst_items = tuple(WorstItem(_index_in(i, a.shape), value(flat_a[i]), value(flat_b[i]), primary, secondary, bad)
                        for i, primary, secondary, bad in worst)
    first_error = _index_in(first_flat, a.shape) if first_flat is not None else None
    from precision_tool.analysis.results.metrics import compare_arrays

    metrics = compare_arrays(a.reshape(-1), b.reshape(-1), shape=a.shape, npu_file=a_name, golden_file=b_name)
    saved: list[Path] = []
    if save_dir is not None:  # the caller made it (and said where it could not)
        for array, name in ((a, a_name), (b, b_name)):
            target = save_dir / (name.replace(":", ".").replace("/", "_") + ".txt")
            with atomic_path(target) as temp, open(temp, "w") as handle:
                flat = array.reshape(-1)
                for start in range(0, flat.size, CHUNK_ELEMENTS):  # chunk by chunk: no float64 copy of it all
                    np.savetxt(handle, flat[start:start + CHUNK_ELEMENTS].astype(np.float64), fmt="%.8g")
            saved.append(target)
    return PairReport(a_name, b_name, tuple(a.shape), tuple(b.shape), first.dtype or a.dtype.name,
                      second.dtype or b.dtype.name, int(a.size), error_count == 0, atol, rtol,
                      error_count, worst_items, metrics, tuple(saved), tuple(conversions),
                      first_error, tolerance_dtype, given)


def _index_in(flat: int, shape: tuple[int, ...]) -> tuple[int, ...]:
    import numpy as np

    return tuple(int(i) for i in np.unravel_index(int(flat), shape)) if shape else ()


def worst_elements(x: Any, y: Any, count: int, atol: float, rtol: float,
                   chunk: int = CHUNK_ELEMENTS) -> tuple[int, int | None, list[tuple[int, float, float, bool]]]:
    """(elements outside the tolerances, the flat index of the first of them or None, the `count` elements
    that differ most as (flat index, |A-B|, |A-B|/|B|, outside the tolerances)), worst first: NaN/Inf
    mismatches (their |A-B| is inf), then the largest |A-B|, then the largest relative error, then the lower
    index. Read `chunk` elements at a time and never sorted whole: memory stays a few chunks whatever the
    size (a memory-mapped .npy is read as it goes). Once `count` are kept, a chunk's only candidates are the
    elements that beat the worst kept one: usually none, so most chunks cost one comparison."""
    import numpy as np

    # |A-B| of complex tensors is the magnitude of the difference (a float64 cast would drop the imaginary part)
    wide = np.complex128 if np.iscomplexobj(x) or np.iscomplexobj(y) else np.float64
    errors, first = 0, None
    kept = np.empty(0, np.int64), np.empty(0), np.empty(0), np.empty(0, bool)  # the best so far, by index
    for start in range(0, x.size, chunk):
        a = np.asarray(x[start:start + chunk], dtype=wide)
        b = np.asarray(y[start:start + chunk], dtype=wide)
        with np.errstate(all="ignore"):
            primary = np.subtract(a, b)  # (in place from here: a 2 GB tensor passes through these buffers)
            primary = np.abs(primary, out=primary) if primary.dtype.kind == "f" else np.abs(primary)
            tolerance = np.abs(b)
            tolerance *= rtol
            tolerance += atol
            if np.isfinite(primary).all():  # the usual chunk: both sides finite everywhere
                bad = primary > tolerance
            else:  # as numpy's allclose: a NaN is never close, an Inf only to the same Inf
                bad = np.where(np.isfinite(a) & np.isfinite(b), ~(primary <= tolerance), a != b)
                same = (a == b) | (np.isnan(a) & np.isnan(b))  # the same Inf, NaN against NaN: no difference
                primary = np.where(same, 0.0, np.where(np.isnan(primary), np.inf, primary))
        hits = int(np.count_nonzero(bad))
        if hits and first is None:
            first = start + int(np.argmax(bad))
        errors += hits
        if kept[0].size < count:
            candidates = np.arange(primary.size)
        else:  # only what beats the worst kept element (a tie on both keys goes to the lower index, kept)
            edge, second_edge = _worst_kept(kept)
            candidates = np.flatnonzero(primary > edge)
            if edge > 0:
                tied = np.flatnonzero(primary == edge)
                candidates = np.union1d(candidates, tied[_relative(primary[tied], b[tied]) > second_edge])
        if not candidates.size:
            continue
        kept = tuple(np.concatenate(pair) for pair in zip(kept, (
            candidates + start, primary[candidates], _relative(primary[candidates], b[candidates]), bad[candidates])))
        keep = _best(kept[1], kept[2], count)  # positions ascending: `kept` stays in index order
        kept = tuple(column[keep] for column in kept)
    order = np.lexsort((kept[0], -kept[2], -kept[1]))  # the last key sorts first
    return errors, first, [(int(kept[0][i]), float(kept[1][i]), float(kept[2][i]), bool(kept[3][i])) for i in order]


def _relative(primary: Any, b: Any) -> Any:
    """|A-B| / |B|: 0 where they do not differ, inf where |B| is 0, Inf or NaN and they do."""
    import numpy as np

    with np.errstate(all="ignore"):
        out = np.where(primary == 0, 0.0, primary / np.abs(b))
    out[np.isnan(out)] = np.inf
    return out


def _worst_kept(kept: tuple[Any, ...]) -> tuple[float, float]:
    """(|A-B|, relative error) of the last of the kept elements in the worst-first order."""
    import numpy as np

    last = np.lexsort((kept[0], -kept[2], -kept[1]))[-1]
    return float(kept[1][last]), float(kept[2][last])


def _best(primary: Any, secondary: Any, count: int) -> Any:
    """Positions (ascending) of the `count` largest by (primary, secondary), ties to the lower position."""
    import numpy as np

    if primary.size <= count:
        return np.arange(primary.size)
    edge = np.partition(primary, primary.size - count)[primary.size - count]  # the count-th largest
    above = np.flatnonzero(primary > edge)
    tied = np.flatnonzero(primary == edge)
    need = count - above.size
    if tied.size > need:  # the same way on the secondary key among the tied
        values = secondary[tied]
        second_edge = np.partition(values, values.size - need)[values.size - need]
        over = tied[values > second_edge]
        tied = np.concatenate((over, tied[values == second_edge][:need - over.size]))
    return np.sort(np.concatenate((above, tied)))

