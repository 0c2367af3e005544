"""Atomic file writes: readers never see half a file, and a failure leaves nothing behind; and the pruning of
cache folders (keep_newest)."""

from __future__ import annotations

import os
import uuid
from contextlib import contextmanager
from pathlib import Path
from typing import Iterable, Iterator


@contextmanager
def atomic_path(path: Path) -> Iterator[Path]:
    """Yield a temp path beside `path` to write; on success it replaces `path`, on any failure it is removed.

    The temp file is created by whoever writes it, so it gets the usual permissions (umask).
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    temp = path.with_name(f".{path.name[:80]}.{os.getpid()}.{uuid.uuid4().hex[:8]}.part")
    try:
        yield temp
        os.replace(temp, path)
    except BaseException:
        try:
            temp.unlink()
        except OSError:
            pass
        raise


def write_atomic(path: Path, chunks: Iterable[bytes | bytearray | memoryview]) -> None:
    """Write byte chunks to `path` atomically."""
    with atomic_path(path) as temp, open(temp, "wb") as handle:
        for chunk in chunks:
            handle.write(chunk)


def write_text_atomic(path: Path, text: str) -> None:
    write_atomic(path, [text.encode("utf-8")])


def keep_newest(folder: Path, max_bytes: int) -> None:
    """Delete the oldest files of a cache folder (by the time they were written) beyond `max_bytes` in all; the
    newest always stays. A cache kept per result or per dump folder would otherwise grow with every run; a
    file that cannot be deleted stays."""
    try:
        with os.scandir(folder) as entries:
            files = [(stat.st_mtime_ns, stat.st_size, entry.path) for entry in entries if entry.is_file()
                     for stat in (entry.stat(),)]
    except OSError:
        return
    total = 0
    for number, (_, size, path) in enumerate(sorted(files, reverse=True)):
        total += size
        if number and total > max_bytes:
            try:
                os.unlink(path)
            except OSError:
                pass
