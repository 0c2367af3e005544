"""The start of a file, and all of it when it is small, in as few system calls as possible: a network of
small tensors is tens of thousands of dump and golden files, where each call costs more than the bytes.
The dump and golden readers (npu/npu_dump.py, tf/golden.py) both read this way.
"""

from __future__ import annotations

import os

FIRST_READ = 1 << 16
"""Bytes read first when a small file is wanted whole: a shorter answer is the whole file, so it needs no
stat."""


def read_start(fd: int, whole_below: int, head_bytes: int = 12) -> tuple[int, bytes, bytes | None]:
    """(size, head, whole) of the open file `fd`: its size in bytes; its first bytes (at least `head_bytes`
    unless the file is shorter); and the whole file when it has at most `whole_below` bytes, else None.
    OSError passes on. A whole file read after a stat may be shorter than that size if the file shrank
    meanwhile: the caller says so."""
    first = os.pread(fd, FIRST_READ, 0) if whole_below else b""
    if whole_below and len(first) < FIRST_READ:  # all of it (a short read of a file ends only at its end)
        return len(first), first, first if len(first) <= whole_below else None
    size = os.fstat(fd).st_size
    if size <= whole_below:
        whole = os.pread(fd, size, 0)
        return size, whole, whole
    return size, first or os.pread(fd, head_bytes, 0), None
