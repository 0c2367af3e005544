"""A golden .npy file as the comparison reads it: numeric data only, never unpickled, small files whole."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np

from precision_tool.analysis.results.metrics import ArraySource, FileSource
from precision_tool.errors import FormatError
from precision_tool.formats.tf.golden import read_npy_start

_NUMERIC_DTYPES: dict[Any, str] = {}
"""Golden dtypes already found numeric (the checks cost more than the read of a small file), with their
names (numpy builds dtype.name anew on every call)."""


def npy_source(path: str | Path, whole_below: int = 0) -> tuple[Any, tuple[int, ...], str]:
    """(source, shape, dtype name) of a .npy; never unpickles. The header is read as data and checked against
    the file's length (formats.golden.read_npy_start), so a damaged or hostile header is one FormatError
    naming the golden file. A file of at most `whole_below` bytes comes back as an ArraySource, read in the
    same call as its header; a bigger one as a FileSource, read later piece by piece."""
    dtype, shape, fortran, offset, _size, whole = read_npy_start(path, whole_below)
    if dtype not in _NUMERIC_DTYPES:
        if dtype.hasobject:
            raise FormatError(path, "holds Python objects; only numeric .npy files are compared (never unpickled)")
        if dtype.names is not None or dtype.subdtype is not None or dtype.kind not in "biufc":
            # records, strings, raw bytes: nothing to take a cosine of; blame this file, not the NPU dump
            kinds = {"U": "text", "S": "byte-string", "V": "raw-byte", "M": "date", "m": "time-span"}
            what = "record" if dtype.names is not None else kinds.get(dtype.kind, "non-numeric")
            raise FormatError(path, f"holds {what} data ({dtype.descr if dtype.names else dtype.str}), not "
                                    "numbers; save the golden tensor as a numeric array")
        _NUMERIC_DTYPES[dtype] = dtype.name
    name = _NUMERIC_DTYPES[dtype]
    count = math.prod(shape)
    if fortran and len(shape) > 1:
        from precision_tool.formats.tf.golden import load_npy

        array = load_npy(path)
        return ArraySource(np.ascontiguousarray(array).reshape(-1)), tuple(shape), array.dtype.name
    if whole is not None:
        return ArraySource(np.frombuffer(whole, dtype=dtype, count=count, offset=offset)), tuple(shape), name
    return FileSource(str(path), offset, dtype, count), tuple(shape), name
