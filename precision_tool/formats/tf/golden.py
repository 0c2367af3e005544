"""Golden tensor file names: `<node with / and . → _>.<slot>.<µs timestamp>.npy` (formats.md §6.1).

These are the names msaccucmp reads as "Numpy" dumps (pattern `^[.A-Za-z0-9_-]+\\.[0-9]+\\.[0-9]{1,255}\\.npy$`)
and the names our own compare looks up, so both sides share this one module.
"""

from __future__ import annotations

import functools
import os
import re
import struct
from pathlib import Path
from typing import TYPE_CHECKING, Iterator

from precision_tool.errors import FormatError
from precision_tool.formats.small_files import read_start

if TYPE_CHECKING:
    import numpy as np

# msaccucmp's NUMPY_DUMP_PATTERN: group 1 is the key "<name>.<slot>"
GOLDEN_NAME = re.compile(r"^([.A-Za-z0-9_-]+)\.([0-9]+)\.([0-9]{1,255})\.npy$")
_UNSAFE = re.compile(r"[^A-Za-z0-9_-]")
TIMESTAMP_DIGITS = 16


def safe_node_name(node_name: str) -> str:
    """`/` and `.` become `_` (as NPU dump names do); any other character msaccucmp rejects too."""
    return _UNSAFE.sub("_", node_name)


@functools.lru_cache(maxsize=1 << 16)  # a run looks each tensor up once per NPU tensor compared with it
def golden_key(op_name: str, slot: int) -> str:
    """The lookup key of one tensor: 'conv1/Relu', 0 → 'conv1_Relu.0'."""
    return f"{safe_node_name(op_name)}.{int(slot)}"


def golden_file_name(node_name: str, slot: int, timestamp_us: int) -> str:
    """'conv1/Relu', 0, 1796026429735657 → 'conv1_Relu.0.1796026429735657.npy'.

    The timestamp is zero-padded to 16 digits because msaccucmp sorts any other length as 0.
    """
    if timestamp_us < 0:
        raise ValueError(f"negative timestamp {timestamp_us}")
    return f"{golden_key(node_name, slot)}.{int(timestamp_us):0{TIMESTAMP_DIGITS}d}.npy"


def parse_golden_name(file_name: str) -> tuple[str, int, int] | None:
    """'conv1_Relu.0.1796026429735657.npy' → ('conv1_Relu', 0, 1796026429735657); None if not a golden name.

    Like msaccucmp, the slot and timestamp are the second and third dot-separated fields; a name with
    more dots is not one of ours (and msaccucmp would misread it), so it is refused.
    """
    match = GOLDEN_NAME.match(file_name)
    if match is None or "." in match.group(1):
        return None
    return match.group(1), int(match.group(2)), int(match.group(3))


def _sort_timestamp(timestamp_text: str) -> int:
    """msaccucmp's ordering: a timestamp that is not exactly 16 digits counts as 0."""
    return int(timestamp_text) if len(timestamp_text) == TIMESTAMP_DIGITS else 0


def scan_golden_dir(folder: str | os.PathLike[str], prefixes: tuple[str, ...] | None = None) -> dict[str, Path]:
    """key ('conv1_Relu.0') → file, for every golden .npy directly in `folder`; the latest timestamp wins.
    `prefixes`: only the files whose names start with one of them (an op's keys, 'conv1_Relu.'): a lookup then
    costs one pass over the folder's names and nothing per other file (a folder of 1,000,000 tensors: ~1 s).

    A missing folder gives {}; files that do not match the pattern are ignored (msaccucmp ignores them too).
    """
    root = Path(folder)
    return {key: root / name for key, name in _latest_golden_names(root, prefixes).items()}


def golden_file_paths(folder: str | os.PathLike[str]) -> dict[str, str]:
    """scan_golden_dir as text paths: a comparison hands them to its workers as text, and a Path per file
    of a 20,000-op network cost more than the scan."""
    root = str(Path(folder))  # spelled as scan_golden_dir's paths are
    return {key: os.path.join(root, name) for key, name in _latest_golden_names(root, None).items()}


def _latest_golden_names(folder: str | os.PathLike[str], prefixes: tuple[str, ...] | None) -> dict[str, str]:
    """key → the file name of its latest golden, sorted by key; {} for a missing folder."""
    best: dict[str, tuple[int, str]] = {}
    try:
        for name, match in _golden_names(folder, prefixes):
            key = f"{match.group(1)}.{match.group(2)}"  # literal, as msaccucmp keys it
            rank = (_sort_timestamp(match.group(3)), name)
            current = best.get(key)
            if current is None or rank > current:
                best[key] = rank
    except (FileNotFoundError, NotADirectoryError):
        return {}
    return {key: value[1] for key, value in sorted(best.items())}


def has_golden_files(folder: str | os.PathLike[str]) -> bool:
    """Whether `folder` holds a golden .npy that scan_golden_dir would list (stops at the first)."""
    try:
        return next(_golden_names(folder), None) is not None
    except OSError:
        return False


def _golden_names(folder: str | os.PathLike[str],
                  prefixes: tuple[str, ...] | None = None) -> Iterator[tuple[str, "re.Match[str]"]]:
    """(file name, its GOLDEN_NAME match) of each golden .npy directly in `folder`; OSError when the folder
    cannot be listed."""
    with os.scandir(folder) as entries:
        for entry in entries:
            name = entry.name
            if not name.endswith(".npy") or (prefixes is not None and not name.startswith(prefixes)):
                continue
            match = GOLDEN_NAME.match(name)
            if match is None or "." in match.group(1) or not entry.is_file():
                continue
            yield name, match


def holds_golden(folder: str | os.PathLike[str]) -> bool:
    """Whether `folder` holds a golden .npy (stops at the first one)."""
    try:
        with os.scandir(folder) as entries:
            return any(parse_golden_name(e.name) is not None and e.is_file() for e in entries)
    except OSError:
        return False


# --- reading a .npy without trusting it ---------------------------------------------------------------
NPY_MAGIC = b"\x93NUMPY"
_ZIP_MAGIC = b"PK\x03\x04"
_MAX_HEADER = 1 << 16  # numpy writes at most a few hundred bytes; its own reader stops at 10,000 by default
_MAX_RANK = 32
_MAX_HEADER_TEXT = 10_000  # numpy's own reader's default limit
_MAX_NESTING = 32  # a structured dtype nests a few levels; thousands would exhaust the parser's stack
_MMAP_FROM = 256 << 20  # bigger data is mapped, not read: pages come in as the statistics touch them


def read_npy_header(path: str | os.PathLike[str]) -> tuple["np.dtype", tuple[int, ...], bool, int, int]:
    """(dtype, shape, fortran order, data offset, file size) of a .npy, checked against the file's length
    BEFORE anything is allocated. FormatError (one line naming the file) for anything else: an .npz or
    other file, a cut or unreadable header, object dtypes, a shape the file cannot hold. Structured and
    text dtypes are returned: each caller says what it can use."""
    return read_npy_start(path)[:5]  # type: ignore[return-value]


def read_npy_start(path: str | os.PathLike[str], whole_below: int = 0) -> tuple[
        "np.dtype", tuple[int, ...], bool, int, int, bytes | None]:
    """read_npy_header's five answers and, for a file of at most `whole_below` bytes, the whole file (read in
    one call with the header, so a network of small tensors costs one read per golden file); else None."""
    try:
        # os-level calls: a golden file of a big network is read in microseconds, and open()'s file object
        # would cost as much again
        fd = os.open(path, os.O_RDONLY)
    except OSError as exc:
        raise FormatError(path, f"cannot read ({exc.strerror or exc})") from None
    try:
        size, head, whole = read_start(fd, whole_below)
        if head[:4] == _ZIP_MAGIC:
            raise FormatError(path, "an .npz archive (several arrays), not a .npy file; unpack one array "
                                    "with numpy (np.load(f)[name]) and save it with np.save")
        if head[:6] != NPY_MAGIC:
            raise FormatError(path, "not a .npy file (it does not start with the .npy magic \\x93NUMPY)")
        if len(head) < 10:
            raise FormatError(path, f"the .npy header is cut short ({size} bytes in all); the file is truncated")
        major = head[6]
        if major == 1:
            (length,) = struct.unpack_from("<H", head, 8)
            start = 10
        elif major in (2, 3):
            if len(head) < 12:
                raise FormatError(path, "the .npy header is cut short; the file is truncated")
            (length,) = struct.unpack_from("<I", head, 8)
            start = 12
        else:
            raise FormatError(path, f".npy format version {major}.{head[7]} is unknown (1.0, 2.0 and 3.0 are)")
        if length > _MAX_HEADER:
            raise FormatError(path, f"the .npy header claims {length} bytes; no real header is that long")
        if start + length > size:
            raise FormatError(path, f"the .npy header claims {length} bytes but the file has {size - start} "
                                    "after the magic; the file is truncated")
        raw = whole[start:start + length] if whole is not None else os.pread(fd, length, start)
        text = raw.decode("utf-8" if major == 3 else "latin1")
    except OSError as exc:
        raise FormatError(path, f"cannot read ({exc.strerror or exc})") from None
    except UnicodeDecodeError:
        raise FormatError(path, "the .npy header is not text; the file is damaged") from None
    finally:
        os.close(fd)
    dtype, shape, fortran = _parse_npy_header(path, text)
    count = 1
    for dim in shape:
        count *= dim
    needed = count * dtype.itemsize
    offset = start + length
    if needed > size - offset:
        raise FormatError(path, f"the .npy header declares shape {list(shape)} of {dtype} ({needed} bytes) but the "
                                f"file holds {size - offset} bytes of data; the file is truncated or damaged")
    if whole is not None and len(whole) != size:
        raise FormatError(path, f"the file changed while it was read ({len(whole)} of {size} bytes came)")
    return dtype, shape, fortran, offset, size, whole


# The header np.save writes for a plain array, e.g. {'descr': '<f4', 'fortran_order': False, 'shape': (8, 3), }:
# read by one regex (0.01 ms instead of ast's 0.2 ms: a multi-rank run reads thousands); anything else goes
# through the full parser below.
_PLAIN_HEADER = re.compile(r"\{'descr': '([<>|=]?[biufc][1-9][0-9]?)', 'fortran_order': (False|True), "
                           r"'shape': \(((?:[0-9]{1,18}, ?)*(?:[0-9]{1,18})?)\), ?\}")


@functools.lru_cache(maxsize=1024)
def _plain_header(text: str) -> tuple["np.dtype", tuple[int, ...], bool] | None:
    """The header np.save writes for a plain array, or None; cached, since a run's golden files share a few
    headers (one per shape and dtype)."""
    import numpy as np

    plain = _PLAIN_HEADER.fullmatch(text)
    if plain is None:
        return None
    dims = tuple(int(d) for d in plain.group(3).replace(" ", "").split(",") if d)
    if len(dims) > _MAX_RANK:
        return None
    try:
        dtype = np.dtype(plain.group(1))
    except TypeError:
        return None
    if not dtype.itemsize or dtype.hasobject:
        return None
    span = 1
    for d in dims:
        span *= max(d, 1)
    return (dtype, dims, plain.group(2) == "True") if span < 2 ** 62 else None


def _parse_npy_header(path: str | os.PathLike[str], text: str) -> tuple["np.dtype", tuple[int, ...], bool]:
    """The header dict, read as data (no eval), with the checks numpy's loader would need pickle for."""
    text = text.strip()
    plain = _plain_header(text)
    if plain is not None:
        return plain
    import ast

    import numpy as np
    if len(text) > _MAX_HEADER_TEXT or _nesting(text) > _MAX_NESTING:  # what could exhaust the parser's stack
        raise FormatError(path, "the .npy header is not the short dict numpy writes (too long or too deeply "
                                "nested); the file is damaged")
    try:
        header = ast.literal_eval(text)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        raise FormatError(path, "the .npy header does not parse; the file is damaged") from None
    if not isinstance(header, dict) or set(header) != {"descr", "fortran_order", "shape"}:
        raise FormatError(path, "the .npy header lacks descr, fortran_order or shape; the file is damaged")
    shape, fortran, descr = header["shape"], header["fortran_order"], header["descr"]
    if not isinstance(shape, tuple) or not all(isinstance(d, int) and not isinstance(d, bool) for d in shape):
        raise FormatError(path, f"the .npy header's shape {str(shape)[:60]} is not a tuple of whole numbers")
    # numpy cannot even describe an array whose dimensions (zeros aside) multiply past 2**63 bytes
    span = 1
    for d in shape:
        span *= max(d, 1)
    if len(shape) > _MAX_RANK or any(d < 0 for d in shape) or span >= 2 ** 62:
        why = f"rank {len(shape)}" if len(shape) > _MAX_RANK else \
            "a negative dimension" if any(d < 0 for d in shape) else "dimensions no array can have"
        shown = ", ".join(str(d) if len(str(d)) <= 20 else f"{str(d)[:8]}...({len(str(d))} digits)" for d in shape[:8])
        raise FormatError(path, f"the .npy header's shape [{shown}{', ...' if len(shape) > 8 else ''}] is impossible "
                                f"({why}); the file is damaged")
    if not isinstance(fortran, bool):
        raise FormatError(path, "the .npy header's fortran_order is not True or False; the file is damaged")
    try:
        dtype = np.lib.format.descr_to_dtype(descr)
    except (TypeError, ValueError, SyntaxError, KeyError):
        raise FormatError(path, f"the .npy dtype {str(descr)[:60]} is not a numpy dtype; the file is damaged") from None
    if dtype.hasobject:
        raise FormatError(path, "holds Python objects (needs pickle); refusing to load it, save plain numbers instead")
    if dtype.itemsize == 0:
        raise FormatError(path, f"the .npy dtype {str(descr)[:60]} has no size; the file is damaged")
    return dtype, shape, fortran


def _nesting(text: str) -> int:
    depth = deepest = 0
    for char in text:
        if char in "([{":
            depth += 1
            deepest = max(deepest, depth)
        elif char in ")]}":
            depth -= 1
    return deepest


def load_npy(path: str | os.PathLike[str]) -> "np.ndarray":
    """A .npy file's array without pickle and without trusting its header: the declared size is checked
    against the file's length before anything is allocated (a header claiming 4 TiB in a 200-byte file is
    one FormatError line, not a 4 TiB allocation); big files are memory-mapped read-only."""
    import numpy as np

    from precision_tool.errors import FormatError

    dtype, shape, fortran, offset, _size = read_npy_header(path)
    count = 1
    for dim in shape:
        count *= dim
    order = "F" if fortran else "C"
    try:
        if count * dtype.itemsize >= _MMAP_FROM:
            return np.memmap(path, dtype=dtype, mode="r", offset=offset, shape=shape, order=order)
        raw = bytearray(count * dtype.itemsize)  # writable, so the array is too (no extra copy)
        with open(path, "rb", buffering=0) as handle:
            handle.seek(offset)
            got = handle.readinto(raw)
    except (OSError, ValueError) as exc:
        raise FormatError(path, f"cannot read the .npy data ({exc})") from None
    if got != len(raw):
        raise FormatError(path, "the file changed while it was read (its data is shorter than its header says)")
    return np.frombuffer(raw, dtype=dtype, count=count).reshape(shape, order=order)
