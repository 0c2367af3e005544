"""Decoding NPU dumps to .npy (`dc`, in the layout origin_layout.py chooses with `dc -f`).

Each dump file is decoded all-or-nothing: its tensors go to temporary names and are renamed only when
the whole file read well, so a bad file leaves nothing behind. A folder is decoded by a few worker
processes; good files are written, bad ones are reported, and the caller decides the exit status.
Plain decoding (no target format) copies the tensor bytes straight from the dump into the .npy file
(the kernel does the copy) whenever the element type is one numpy stores natively.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Iterable, Mapping, Sequence

from precision_tool.analysis.dumps.dump_files import no_tensor_problem
from precision_tool.analysis.dumps.origin_layout import DEVICE_LAYOUTS, OriginFormats
from precision_tool.analysis.dumps.tensor_memory import CHECK_FROM
from precision_tool.atomic import write_atomic
from precision_tool.errors import FormatError, PrecisionToolError
from precision_tool.formats.npu.dump_types import format_name, npy_descr_of
from precision_tool.formats.npu.npu_dump import (
    MAPPING_FILE, DumpFile, TensorHeader, read_dump_header, read_mapping, read_tensor,
)

if TYPE_CHECKING:
    import numpy as np

MAX_FILE_NAME = 255


@dataclass(frozen=True)
class DecodeProblem:
    """A file (or one tensor of it, `label` like 'output:0') that was not decoded, and why."""

    path: Path
    message: str
    label: str | None = None
    ambiguous: bool = False  # the layout could be read more than one way; a graph's origin_format would decide

    def line(self) -> str:
        where = f"{self.path} {self.label}" if self.label else str(self.path)
        return f"{where}: {self.message}"


@dataclass(frozen=True)
class DecodeReport:
    out_dir: Path
    target_format: str | None
    file_count: int
    written: tuple[Path, ...]
    unconverted: tuple[DecodeProblem, ...]  # written as dumped: no conversion to the target (ND → NCHW ...)
    failed: tuple[DecodeProblem, ...]  # bad files, and tensors whose conversion cannot be determined
    ignored: tuple[Path, ...] = ()  # files in the folder that are not dumps (by suffix)
    renamed: tuple[tuple[str, str], ...] = ()  # (short file name, over-long real name), listed in mapping.csv
    written_from: tuple[tuple[Path, Path], ...] = ()  # (dump file, .npy written from it), in `written` order
    notes: tuple[DecodeProblem, ...] = ()  # converted, but worth a word (a short original shape expanded ...)

    @property
    def ok(self) -> bool:
        return not self.failed


def decoded_name(dump_path: str | os.PathLike[str], kind: str, index: int,
                 shape: Sequence[int] | None = None) -> str:
    """`{dumpfile}.{input|output}.{idx}.npy`, or `...{idx}.{d0}x{d1}...npy` when a format was given."""
    base = f"{os.path.basename(dump_path)}.{kind}.{index}"
    if shape is not None:
        base += "." + "x".join(str(int(d)) for d in shape)
    return base + ".npy"


def short_file_name(name: str, suffix: str) -> str | None:
    """A stand-in for a file name the file system cannot take (>= 255 characters, the reference's limit):
    the hex uuid3 of the name plus `suffix`, as msaccucmp names them; None when `name` is short enough."""
    if len(name) < MAX_FILE_NAME and len(name.encode()) < MAX_FILE_NAME:
        return None
    import uuid

    return uuid.uuid3(uuid.NAMESPACE_DNS, name).hex + suffix


def record_mapping(folder: Path, rows: Iterable[tuple[str, str]]) -> Path | None:
    """Add `short_name,real_name` rows to the folder's mapping.csv (rewritten atomically; existing rows
    kept, a short name mapped again takes the new real name). None when there is nothing to add."""
    import csv
    import io

    rows = list(rows)
    if not rows:
        return None
    path = Path(folder) / MAPPING_FILE
    mapping = read_mapping(folder)
    mapping.update(rows)
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    for short, real in mapping.items():
        writer.writerow([short, real])
    write_atomic(path, [buffer.getvalue().encode("utf-8")])
    return path


def saveable(array: "np.ndarray") -> "np.ndarray":
    """What goes into a .npy: ml_dtypes types (bf16, fp8) widen to float32 so any numpy can load it."""
    import numpy as np

    if array.dtype.kind == "V" or type(array.dtype).__module__.startswith("ml_dtypes") \
            or array.dtype.type.__module__.startswith("ml_dtypes"):
        return array.astype(np.float32)
    return array


# --- decoding ---------------------------------------------------------------------------------------
def decode_dumps(
    paths: Sequence[Path],
    out_dir: Path,
    *,
    target_format: str | None = None,
    workers: int = 1,
    on_file_done: Callable[[int], None] | None = None,
    ignored: Sequence[Path] = (),
    origin_formats: Mapping[Path, "OriginFormats"] | None = None,
) -> DecodeReport:
    """Decode every dump in `paths` into `out_dir` (created when something is written). `origin_formats`
    gives, per file, the layout the graph names for each tensor (see `graph_origin_formats`)."""
    target = target_format.upper() if target_format else None
    out_dir = Path(out_dir)
    jobs = [Path(p) for p in paths]
    written: list[tuple[Path, Path]] = []  # (dump file, .npy)
    unconverted: list[DecodeProblem] = []
    failed: list[DecodeProblem] = []
    renamed: list[tuple[str, str]] = []
    notes: list[DecodeProblem] = []
    if jobs:
        out_dir.mkdir(parents=True, exist_ok=True)
    workers = max(1, min(workers, len(jobs) // 4 or 1))
    try:
        _run_jobs(jobs, out_dir, target, workers, on_file_done, (written, unconverted, failed, renamed, notes),
                  dict(origin_formats or {}))
    finally:
        # Whatever was written gets its mapping rows, even when the run stops half-way.
        _write_renames(out_dir, renamed, failed)
    pairs = tuple(sorted(written, key=lambda pair: pair[1]))
    return DecodeReport(out_dir, target, len(jobs), tuple(final for _, final in pairs), tuple(unconverted),
                        tuple(failed), tuple(ignored), tuple(renamed), pairs, tuple(notes))


def _write_renames(out_dir: Path, renamed: list[tuple[str, str]], failed: list[DecodeProblem]) -> None:
    try:
        record_mapping(out_dir, renamed)
    except (FormatError, OSError) as exc:
        failed.append(DecodeProblem(out_dir / MAPPING_FILE, f"cannot record the long file names ({exc})"))


_Lists = tuple[list[tuple[Path, Path]], list[DecodeProblem], list[DecodeProblem], list[tuple[str, str]],
               list[DecodeProblem]]


def _run_jobs(jobs: list[Path], out_dir: Path, target: str | None, workers: int,
              on_file_done: Callable[[int], None] | None, lists: _Lists,
              origins: dict[Path, "OriginFormats"]) -> None:
    if workers == 1:
        _keep_freed_memory(target)
        for path in jobs:
            _collect(_decode_one(path, out_dir, target, origins.get(path)), lists)
            if on_file_done:
                on_file_done(1)
    else:
        import concurrent.futures
        import multiprocessing

        chunks = _chunks(jobs, workers * 4)
        if target is None:
            # Plain decoding is kernel copies (no GIL held): threads, no process start-up.
            pool_type: Any = concurrent.futures.ThreadPoolExecutor(max_workers=workers * 2)
        else:
            context = multiprocessing.get_context("fork") if hasattr(os, "fork") else None
            pool_type = concurrent.futures.ProcessPoolExecutor(max_workers=workers, mp_context=context)
        with pool_type as pool:
            futures = {pool.submit(_decode_many, chunk, out_dir, target, {p: origins[p] for p in chunk if p in origins}):
                       len(chunk) for chunk in chunks}
            for future in concurrent.futures.as_completed(futures):
                for result in future.result():
                    _collect(result, lists)
                if on_file_done:
                    on_file_done(futures[future])


def _keep_freed_memory(target: str | None) -> None:
    """Converting: glibc keeps freed tensor memory for the next file (no fresh mmap and page faults per
    tensor read, converted and written); plain decoding never holds tensors in memory."""
    if target is not None:
        from precision_tool.analysis.results.metrics_sweeps import keep_freed_memory

        keep_freed_memory()


_Result = tuple[list[tuple[Path, Path]], list[DecodeProblem], list[DecodeProblem], list[tuple[str, str]],
                list[DecodeProblem]]


def _collect(result: _Result, lists: _Lists) -> None:
    for target, items in zip(lists, result):
        target.extend(items)  # type: ignore[attr-defined]


def _chunks(items: list[Path], count: int) -> list[list[Path]]:
    size = max(1, -(-len(items) // count))
    return [items[i:i + size] for i in range(0, len(items), size)]


def _decode_many(paths: list[Path], out_dir: Path, target: str | None,
                 origins: dict[Path, "OriginFormats"]) -> list[_Result]:
    _keep_freed_memory(target)
    return [_decode_one(path, out_dir, target, origins.get(path)) for path in paths]


def _decode_one(path: Path, out_dir: Path, target: str | None, origins: "OriginFormats | None" = None) -> _Result:
    """Decode one file; its outputs appear only if the file as a whole read well. With a target layout, a
    tensor that has no such layout (an ND tensor and NCHW) is written as dumped and listed as unconverted."""
    from precision_tool.formats.npu.layouts import AmbiguousLayout, LayoutError

    staged: list[tuple[Path, Path]] = []
    unconverted: list[DecodeProblem] = []
    failed: list[DecodeProblem] = []
    renamed: list[tuple[str, str]] = []
    notes: list[DecodeProblem] = []
    try:
        dump = read_dump_header(path)
        if not dump.tensors:
            raise FormatError(path, no_tensor_problem(path, dump.file_size))
        real = dump.real_name
        for tensor in dump.tensors:
            try:
                origin = (origins or {}).get((tensor.kind, tensor.index))
                temp, final, kept = _decode_tensor(dump, real, tensor, out_dir, target, renamed, origin)
                staged.append((temp, final))
                if kept is not None:
                    unconverted.append(DecodeProblem(path, kept, tensor.label))
                note = None if kept else _expansion_note(tensor, target, final)
                if note:
                    notes.append(DecodeProblem(path, note, tensor.label))
            except LayoutError as exc:
                failed.append(DecodeProblem(path, str(exc), tensor.label, ambiguous=isinstance(exc, AmbiguousLayout)))
    except PrecisionToolError as exc:
        _discard(staged)
        message = exc.problem if isinstance(exc, FormatError) and exc.path == str(path) else str(exc)
        return [], [], [DecodeProblem(path, message)], [], []
    except OSError as exc:
        _discard(staged)
        return [], [], [DecodeProblem(path, f"cannot write the decoded data ({exc.strerror or exc})")], [], []
    except BaseException:
        _discard(staged)
        raise
    written = []
    for temp, final in staged:
        os.replace(temp, final)
        written.append((path, final))
    return written, unconverted, failed, renamed, notes


def _expansion_note(tensor: TensorHeader, target: str | None, final: Path) -> str | None:
    """A device-layout tensor whose original shape has fewer dims than the target layout: say how it was
    read (GE fills the missing axes with 1: a 1-D [1000] is NCHW [1,1000,1,1]) and that the channel padding
    was cut, where msaccucmp's convert keeps it (1x1008x1x1)."""
    from precision_tool.formats.npu.layouts import expanded_shape

    if target is None or format_name(tensor.format) not in DEVICE_LAYOUTS:
        return None
    original = tuple(int(d) for d in tensor.original_shape)
    if not original or len(original) >= len(target):
        return None
    shape = expanded_shape(original, target)
    if shape is None:
        return None
    return (f"original shape {list(original)} read as {target} {list(shape)} (missing axes are 1, as GE lays it "
            f"out); channel padding cut (msaccucmp's convert keeps it): {final.name}")


def _discard(staged: list[tuple[Path, Path]]) -> None:
    for temp, _ in staged:
        try:
            os.unlink(temp)
        except OSError:
            pass


def _decode_tensor(dump: DumpFile, real: str, tensor: TensorHeader, out_dir: Path, target: str | None,
                   renamed: list[tuple[str, str]], origin_format: str | None = None) -> tuple[Path, Path, str | None]:
    """(temporary file written, its final path, why it was written as dumped rather than in `target` or None)."""
    plain = npy_descr_of(tensor.data_type) if target is None else None
    if plain is not None:
        final = _output_path(out_dir, decoded_name(real, tensor.kind, tensor.index), renamed)
        temp = _temp_for(final)
        _copy_as_npy(dump, tensor, plain, temp)
        return temp, final, None
    big = tensor.size >= CHECK_FROM
    if big and target is not None and npy_descr_of(tensor.data_type) is not None:
        unchanged, why = _as_dumped(tensor, target)
        if unchanged:  # written as dumped: copied by the kernel, as plain decoding does, never held
            final = _output_path(out_dir, decoded_name(real, tensor.kind, tensor.index, tensor.array_shape), renamed)
            temp = _temp_for(final)
            _copy_as_npy(dump, tensor, npy_descr_of(tensor.data_type), temp)  # type: ignore[arg-type]
            return temp, final, why
    if big:
        _require_room(dump, tensor, target)
    import numpy as np

    array = read_tensor(dump, tensor)
    kept = None
    if target is not None:
        from precision_tool.formats.npu.layouts import UnsupportedConversion, from_device

        if origin_format is not None and len(origin_format) != len(tensor.original_shape):
            origin_format = None  # the graph's layout does not describe this shape; infer as without a graph
        try:
            array = from_device(array, tensor.format, target, tensor.original_shape, original_format=origin_format,
                                sub_format=tensor.sub_format)
        except UnsupportedConversion as exc:
            kept = str(exc)  # no such layout for this tensor: written as dumped, its shape in the name
        name = decoded_name(real, tensor.kind, tensor.index, array.shape)
    else:
        name = decoded_name(real, tensor.kind, tensor.index)
    final = _output_path(out_dir, name, renamed)
    temp = _temp_for(final)
    with open(temp, "wb") as handle:
        np.save(handle, np.ascontiguousarray(saveable(array)), allow_pickle=False)
    return temp, final, kept


def _as_dumped(tensor: TensorHeader, target: str) -> tuple[bool, str | None]:
    """(does converting to `target` leave the tensor as dumped, why it is not converted): asked of an empty
    stand-in of its rank, so a big tensor is not read to learn that it needs no conversion."""
    import numpy as np

    from precision_tool.formats.npu.layouts import LayoutError, UnsupportedConversion, from_device

    if format_name(tensor.format) in DEVICE_LAYOUTS:
        return False, None
    stand_in = np.empty((0,) * len(tensor.array_shape))
    try:
        return from_device(stand_in, tensor.format, target, tensor.original_shape) is stand_in, None
    except UnsupportedConversion as exc:
        return True, str(exc)
    except LayoutError:
        return False, None


def _require_room(dump: DumpFile, tensor: TensorHeader, target: str | None) -> None:
    """A big tensor that must be held (converted, or widened for the .npy): one FormatError line when about three
    times its size would not fit in free memory, before anything is read."""
    from precision_tool.analysis.dumps.tensor_memory import require_memory, size_text
    from precision_tool.formats.npu.dump_types import data_type_name, numpy_dtype_of

    try:
        nbytes = tensor.element_count * numpy_dtype_of(tensor.data_type).itemsize
    except ValueError:
        return  # read_tensor names the type it cannot decode
    what = f"{tensor.label} ({size_text(nbytes)} of {data_type_name(tensor.data_type)})"
    if target is not None:
        require_memory(dump.path, 3 * nbytes, f"{what} held and converted to {target}",
                       "decode it without -f: its bytes are then copied as dumped, streamed")
    else:
        require_memory(dump.path, 3 * nbytes, f"{what} held and widened for the .npy",
                       "decode it on a machine with more free memory")


def _output_path(out_dir: Path, name: str, renamed: list[tuple[str, str]]) -> Path:
    """`out_dir/name`, or a hashed stand-in (listed in `renamed` for mapping.csv) when the name is too long."""
    short = short_file_name(name, ".npy")
    if short is None:
        return out_dir / name
    renamed.append((short, name))
    return out_dir / short


def _temp_for(final: Path) -> Path:
    return final.with_name(f".{final.name[:200]}.{os.getpid()}.part")


def npy_header(descr: str, shape: Sequence[int]) -> bytes:
    """A version 1.0 .npy header (numpy's own layout: 64-byte aligned, newline-terminated)."""
    dims = ", ".join(str(int(d)) for d in shape) + ("," if len(shape) == 1 else "")
    text = f"{{'descr': '{descr}', 'fortran_order': False, 'shape': ({dims}), }}"
    pad = -(10 + len(text) + 1) % 64
    body = (text + " " * pad + "\n").encode("latin1")
    return b"\x93NUMPY\x01\x00" + len(body).to_bytes(2, "little") + body


def _copy_as_npy(dump: DumpFile, tensor: TensorHeader, plain: tuple[str, int], temp: Path) -> None:
    """Write a .npy header, then let the kernel copy the tensor bytes straight from the dump."""
    descr, itemsize = plain
    needed = tensor.element_count * itemsize
    if needed > tensor.size:
        raise FormatError(dump.path, f"{tensor.label}: shape {list(tensor.shape)} needs {needed} bytes "
                                     f"but the block holds {tensor.size}")
    with open(temp, "wb") as out:
        out.write(npy_header(descr, tensor.array_shape))
        out.flush()
        if needed == 0:
            return
        with open(dump.path, "rb") as source:
            _kernel_copy(source.fileno(), out.fileno(), tensor.offset, needed, dump.path)


def _kernel_copy(src: int, dst: int, offset: int, length: int, path: Path) -> None:
    done = 0
    use_range = hasattr(os, "copy_file_range")
    while done < length:
        try:
            if use_range:
                n = os.copy_file_range(src, dst, length - done, offset + done)
            else:
                n = os.sendfile(dst, src, offset + done, length - done)
        except OSError:
            if not use_range:
                raise
            use_range = False  # e.g. across file systems on old kernels
            continue
        if n == 0:
            raise FormatError(path, f"the file ended while copying {length} bytes at offset {offset}; it is truncated")
        done += n


# --- the full list of failures ----------------------------------------------------------------------
FAILURE_LIST = "decode_failures.tsv"


def write_failure_list(problems: Sequence[DecodeProblem], folders: Sequence[Path]) -> tuple[Path | None, list[str]]:
    """Write every failure (file, tensor, reason; tab-separated, one per line) into the first of `folders`
    that takes it: (the file written or None, why each folder refused)."""
    lines = ["file\ttensor\treason"]
    for problem in problems:
        reason = " ".join(problem.message.split())  # one line per failure, whatever the message held
        lines.append(f"{problem.path}\t{problem.label or ''}\t{reason}")
    data = ("\n".join(lines) + "\n").encode("utf-8")
    refused = []
    for folder in folders:
        target = Path(folder) / FAILURE_LIST
        try:
            Path(folder).mkdir(parents=True, exist_ok=True)
            write_atomic(target, [data])
            return target, refused
        except (OSError, PrecisionToolError) as exc:
            refused.append(f"{folder}: {getattr(exc, 'strerror', None) or exc}")
    return None, refused
