"""What a summary needs of a result CSV (its RowDigest), kept between commands while the CSV is unchanged.

Why: `vcs` and `ac` summarise the newest result again on every call, and at 20,000 ops parsing the CSV's
43,000 rows is most of their time (0.3 s of 0.8), although nothing in it changed. So the first summary of
a CSV keeps the digest it read in the workspace's temp/cache/digests/, stamped with the CSV's path, size
and SHA-1 (any edit shows, even one within the mtime's clock tick; hashing costs a hundredth of parsing), and the next summary of the same bytes reads the digest (JSON, a fifth of the
parse) and summarises it exactly as the CSV would be (tests/analysis/results/test_digest_cache.py). An
edited or moved CSV, or a damaged or unwritable cache, reads the CSV as before. JSON, never pickle: a
cache is data from disk. (`vc` itself summarises from its workers' digests and never reads its CSV; it
hands them to the summaries that follow in the same process, remember_written.)
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from precision_tool.analysis.results.results import (
    OVERFLOW_COLUMN, CompareSummary, ResultReader, RowDigest, digest_rows, result_text, summarize_digest,
)
from precision_tool.atomic import keep_newest, write_atomic
from precision_tool.errors import FormatError
from precision_tool.gc_pause import without_gc_keeping

if TYPE_CHECKING:
    from precision_tool.analysis.graphs.op_labels import OpLabels

CACHE_VERSION = 1
KEEP_BYTES = 100 << 20
"""The newest digests are kept up to this size in all: 5 MB each at 20,000 ops, and `vcs` mostly reads the
newest."""


@dataclass(frozen=True)
class CsvDigest:
    """A result CSV as a summary reads it: its rows' digest, the two header facts, its malformed rows."""

    digest: RowDigest
    npu_vs_npu: bool
    """The header has two Address columns."""
    overflow_column: bool
    problems: tuple[str, ...] = ()


def summarize_result_csv(path: str | os.PathLike[str], threshold: float = 0.98, *, name_only: bool = False,
                         labels: "OpLabels | None" = None, cache_dir: Path | None = None) -> CompareSummary:
    """summarize(read_result_csv(path), ...), reading only what the summary needs of each row; with
    `cache_dir`, from the digest kept there while the CSV is unchanged (and kept after a read)."""
    path = Path(path)
    if cache_dir is None and os.path.abspath(path) not in _WRITTEN:  # (nothing to stamp the bytes for)
        kept = read_csv_digest(path)
    else:
        try:
            data = path.read_bytes()  # read once: hashed for the stamp and, when nothing is kept, parsed
        except OSError as exc:
            _WRITTEN.pop(os.path.abspath(path), None)
            raise FormatError(path, f"cannot read ({exc.strerror})") from None
        stamp = [len(data), hashlib.sha1(data).hexdigest()]
        kept = written_digest(path, stamp)  # this process wrote it (vc): its digest is held, nothing to parse
        if kept is None and cache_dir is not None:
            kept = kept_digest(cache_dir, path, stamp)
        if kept is None:
            kept = read_csv_digest(path, data)
            if cache_dir is not None:
                keep_digest(cache_dir, path, kept, stamp)  # (the stamp of the very bytes parsed)
    return summarize_digest(kept.digest, path, threshold, name_only=name_only, labels=labels,
                            npu_vs_npu=kept.npu_vs_npu, overflow_column=kept.overflow_column, problems=kept.problems)


_WRITTEN: dict[str, tuple[list[Any], CsvDigest]] = {}
"""The digests of the result CSVs this process wrote, by absolute path, each with the stamp (size, SHA-1) of
the bytes written: `vcs` or `ac` right after `vc` in one shell summarise from it instead of parsing the CSV
again (0.4 s at 20,000 ops). The newest KEPT_WRITTEN are held."""
KEPT_WRITTEN = 4


def remember_written(csv_path: Path, kept: CsvDigest, stamp: list[Any]) -> None:
    """Hold the digest of the result CSV this process has just written whole, whose bytes have `stamp` (the
    workers' digest is what parsing them would give: results.digest_rows on the very cells written)."""
    key = os.path.abspath(csv_path)
    _WRITTEN.pop(key, None)
    _WRITTEN[key] = (stamp, kept)
    while len(_WRITTEN) > KEPT_WRITTEN:
        del _WRITTEN[next(iter(_WRITTEN))]


def written_digest(csv_path: Path, stamp: list[Any]) -> CsvDigest | None:
    """The digest held for `csv_path` if its bytes (`stamp`) are still those this process wrote; a changed
    file's is let go."""
    key = os.path.abspath(csv_path)
    held = _WRITTEN.get(key)
    if held is None:
        return None
    if held[0] != stamp:
        del _WRITTEN[key]
        return None
    return held[1]


@without_gc_keeping  # (the digest lives on, acyclic: not rescanned by the collector's next pass)
def read_csv_digest(path: Path, data: bytes | None = None) -> CsvDigest:
    """The CSV's digest, from the few cells of each row a summary reads (no TensorRecord per row); `data`: its
    bytes, when read already."""
    reader = ResultReader(path, cells_only=True)
    reader.feed(result_text(path, data))
    if reader.header is None or reader.cells is None:
        raise FormatError(path, "the file is empty; it is not a comparison result")
    return CsvDigest(digest_rows(reader.cells), reader.header.count("Address") == 2, OVERFLOW_COLUMN in reader.header,
                     tuple(reader.problems))


def keep_digest(cache_dir: Path, csv_path: Path, kept: CsvDigest, stamp: list[Any]) -> None:
    """Keep `kept` as the digest of `csv_path` whose bytes have `stamp` (size, SHA-1); a read-only workspace
    keeps nothing."""
    digest = kept.digest
    tree = {"version": CACHE_VERSION, "csv": os.path.abspath(csv_path), "stamp": stamp, "npu_vs_npu": kept.npu_vs_npu,
            "overflow_column": kept.overflow_column, "problems": list(kept.problems), "rows": digest.rows,
            "compared": digest.compared, "ops": digest.ops}
    try:
        text = json.dumps(tree, separators=(",", ":"), ensure_ascii=False)  # (NaN cosines as NaN, read back)
        target = _cache_file(cache_dir, csv_path)
        target.parent.mkdir(parents=True, exist_ok=True)
        write_atomic(target, [text.encode("utf-8", errors="surrogateescape")])
    except (OSError, ValueError):
        return
    keep_newest(target.parent, KEEP_BYTES)


@without_gc_keeping
def kept_digest(cache_dir: Path, csv_path: Path, stamp: list[Any]) -> CsvDigest | None:
    """The digest kept for `csv_path`, if its bytes (`stamp`: size, SHA-1) are those it was kept for; else
    None."""
    try:
        tree = json.loads(_cache_file(cache_dir, csv_path).read_bytes())
        wanted = (CACHE_VERSION, os.path.abspath(csv_path), stamp)
        if (tree["version"], tree["csv"], tree["stamp"]) != wanted:
            return None
        # as digest_rows made them (values as written: the stamp says the CSV is the one they came from;
        # converting each of 60,000 values again would cost twice the load)
        ops = [(index, npu_op, golden_op, op_type, tuple(map(tuple, inputs)), tuple(map(tuple, outputs)),
                tuple(reasons), tuple(overflowed))
               for index, npu_op, golden_op, op_type, inputs, outputs, reasons, overflowed in tree["ops"]]
        return CsvDigest(RowDigest(ops, int(tree["rows"]), int(tree["compared"])), bool(tree["npu_vs_npu"]),
                         bool(tree["overflow_column"]), tuple(str(p) for p in tree["problems"]))
    except (OSError, ValueError, KeyError, TypeError, IndexError, AttributeError):
        return None  # none kept, or damaged: the CSV is read


def _cache_file(cache_dir: Path, csv_path: Path) -> Path:
    digest = hashlib.sha1(os.path.abspath(csv_path).encode("utf-8", "surrogateescape")).hexdigest()[:20]
    return Path(cache_dir) / "digests" / f"{digest}.json"
