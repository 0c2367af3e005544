"""A dump folder's index and a golden folder's listing, kept between runs while their folders are unchanged.

Why: every `vc` and `ac -c` parses the name of every dump file and every golden file again (20,000 ops:
38,000 names, 0.3-0.5 s, a fifth of a warm `vc`), although what a listing says depends only on names, and
a folder's names cannot change without its mtime changing (creating, deleting or renaming an entry updates
it). So the first run keeps the index in the workspace's temp/cache/listings/ with the mtime of every
folder it walked (and the stamp of each mapping.csv, whose lines name numbered dump files), and a later
run that finds them all unchanged reads the index instead of listing. A listing taken while a folder was
still changing (its mtime within RACY_NS of the listing: a second change in the same clock tick would
leave the mtime as it was) is not kept; a stale, damaged or unwritable cache only means listing again.
JSON, never pickle: a cache is data from disk like any other.

Also here, as every run asks it before anything else: whether a dump folder holds statistics only (stats_only),
answered from the first tensor dump met, without the statistics modules.
"""

from __future__ import annotations

import hashlib
import json
import os
import time
import zlib
from pathlib import Path
from typing import Any, Callable, Iterator, TypeVar

from precision_tool.analysis.compare.matching import DumpIndex, dump_iterations, index_dumps
from precision_tool.atomic import keep_newest, write_atomic
from precision_tool.formats.npu.npu_dump import MAPPING_FILE, DumpName, dump_name_of
from precision_tool.gc_pause import without_gc
from precision_tool.workspace import step_golden_folders

CACHE_VERSION = 2  # 2: a dump index's file names apart, on a second line read when asked for
KEEP_BYTES = 200 << 20
"""The newest listings are kept up to this size in all: one per dump folder and golden folder compared (3.4 MB
for 20,000 ops; a 64-rank dump is 128 small ones)."""
RACY_NS = 2_000_000_000
"""A folder changed this recently when it was listed may change again without its mtime moving."""

Stamps = list[list[Any]]
"""[folder, [its mtime_ns, device, inode], [mtime_ns, size] of its mapping.csv or None] per folder watched (a
folder replaced by another, even one with the same mtime, has another inode)."""


def cached_dump_index(folder: Path, cache_dir: Path | None, *, with_graph: bool, step: int | None) -> DumpIndex:
    """index_dumps(folder, with_graph=..., step=...), from the cache while every folder under it is unchanged."""
    if cache_dir is None:
        return index_dumps(folder, with_graph=with_graph, step=step)
    return _kept_or_listed(cache_dir, ["dumps", str(folder), with_graph, step],
                           lambda folders: index_dumps(folder, with_graph=with_graph, step=step, folders=folders),
                           _index_to_json, _index_from_json)


def cached_golden_paths(folder: Path, cache_dir: Path | None) -> dict[str, str]:
    """golden_file_paths(folder) (golden key → file path), from the cache while the folder is unchanged."""
    from precision_tool.formats.tf.golden import golden_file_paths

    if cache_dir is None:
        return golden_file_paths(folder)

    def listed(folders: list[str | None]) -> dict[str, str]:
        folders.append(str(folder))
        return golden_file_paths(folder)

    def read(tree: Any, _: bytes) -> dict[str, str]:
        if not (isinstance(tree, dict) and all(isinstance(v, str) for v in tree.values())):
            raise ValueError("damaged")
        return tree

    return _kept_or_listed(cache_dir, ["golden", str(folder)], listed, lambda paths: (paths, b""), read)


def cached_dump_iterations(folder: Path, cache_dir: Path | None) -> dict[int, list[Path]]:
    """dump_iterations(folder), from the cache while every folder under it is unchanged (choosing the step
    walks the whole dump tree: 20 ms at 20,000 files, before anything else can start)."""
    if cache_dir is None:
        return dump_iterations(folder)
    return _kept_or_listed(
        cache_dir, ["iterations", str(folder)], lambda folders: dump_iterations(folder, folders),
        lambda found: ([[step, [str(path) for path in paths]] for step, paths in found.items()], b""),
        lambda tree, _: {int(step): [Path(str(path)) for path in paths] for step, paths in tree})


def cached_step_folders(golden_root: Path, cache_dir: Path | None) -> list[tuple[int, Path]]:
    """step_golden_folders(golden_root), from the cache while that folder is unchanged (a golden folder of
    20,000 tensors is listed whole to find its few step_<N>/ folders)."""
    if cache_dir is None or not os.path.isdir(golden_root):
        return step_golden_folders(golden_root)

    def listed(folders: list[str | None]) -> list[tuple[int, Path]]:
        folders.append(str(golden_root))
        return step_golden_folders(golden_root)

    return _kept_or_listed(cache_dir, ["steps", str(golden_root)], listed,
                           lambda found: ([[step, str(path)] for step, path in found], b""),
                           lambda tree, _: [(int(step), Path(str(path))) for step, path in tree])


T = TypeVar("T")


def _kept_or_listed(cache_dir: Path, key: list[Any], listed: Callable[[list[str | None]], T],
                    to_json: Callable[[T], tuple[Any, bytes]], from_json: Callable[[Any, bytes], T]) -> T:
    """What is kept under `key` (from_json of the tree and second line), else `listed(folders)`, kept while
    the folders it appended stay as they are (not kept when one could not be listed: None among them, as it
    may be readable next time, unchanged). A kept one that does not decode means listing again."""
    kept = _read(cache_dir, key)
    if kept is not None:
        try:
            return from_json(*kept)
        except (KeyError, TypeError, ValueError, IndexError):
            pass  # damaged: list again
    started = time.time_ns()
    folders: list[str | None] = []
    found = listed(folders)
    if None not in folders:
        _write(cache_dir, key, [f for f in folders if f is not None], started, lambda: to_json(found))
    return found


# --- the cache file ---------------------------------------------------------------------------------
def _cache_file(cache_dir: Path, key: list[Any]) -> Path:
    digest = hashlib.sha1(json.dumps(key).encode("utf-8", "surrogateescape")).hexdigest()[:20]
    return Path(cache_dir) / "listings" / f"{digest}.json"


def _stamps(folders: list[str]) -> Stamps | None:
    """Each folder's stamp now; None when one is gone."""
    stamps: Stamps = []
    for folder in folders:
        try:
            stat = os.stat(folder)
        except OSError:
            return None
        try:
            mapping = os.stat(os.path.join(folder, MAPPING_FILE))
            mapping_stamp: list[int] | None = [mapping.st_mtime_ns, mapping.st_size]
        except OSError:
            mapping_stamp = None
        stamps.append([folder, [stat.st_mtime_ns, stat.st_dev, stat.st_ino], mapping_stamp])
    return stamps


@without_gc
def _read(cache_dir: Path, key: list[Any]) -> tuple[Any, bytes] | None:
    """What was kept under `key` and the bytes of its second line, if every folder it watched is as it was
    and the second line is whole; else None."""
    try:
        head, _, rest = _cache_file(cache_dir, key).read_bytes().partition(b"\n")
        tree = json.loads(head)
        if tree.get("version") != CACHE_VERSION or tree.get("key") != key or tree["rest_crc32"] != zlib.crc32(rest):
            return None
        stamps = tree["stamps"]
        if _stamps([str(stamp[0]) for stamp in stamps]) != stamps:
            return None
        return tree["listing"], rest
    except (OSError, ValueError, KeyError, TypeError, IndexError, AttributeError):
        return None  # none kept, or damaged


def _write(cache_dir: Path, key: list[Any], folders: list[str], started_ns: int,
           listing: Callable[[], tuple[Any, bytes]]) -> None:
    """Keep what `listing()` gives (a JSON tree, and bytes for a second line read only when asked for:
    b"" for none) while `folders` stay as they are now."""
    stamps = _stamps(folders)
    recent = started_ns - RACY_NS
    if stamps is None or any(stamp[1][0] >= recent or (stamp[2] and stamp[2][0] >= recent) for stamp in stamps):
        return  # a folder was changing (or went) while it was listed: keep nothing that could be stale
    tree, rest = listing()
    head = {"version": CACHE_VERSION, "key": key, "stamps": stamps, "listing": tree, "rest_crc32": zlib.crc32(rest)}
    path = _cache_file(cache_dir, key)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        # (JSON text holds no raw newline: the first one ends the tree)
        text = json.dumps(head, separators=(",", ":"), ensure_ascii=False)
        write_atomic(path, [text.encode("utf-8", errors="surrogateescape"), b"\n", rest])
    except OSError:
        return  # a read-only workspace still compares, just without the cache
    keep_newest(path.parent, KEEP_BYTES)


# --- a DumpIndex as JSON ----------------------------------------------------------------------------
def _index_to_json(index: DumpIndex) -> tuple[dict[str, Any], bytes]:
    """The index's paths (op, folder number, file name) as a tree, and its parsed file names as the second
    line: a graph run needs only the paths."""
    folders: dict[str, int] = {}
    ops, numbers, files, names = [], [], [], []
    for op, path in index.by_op.items():
        name = index.names[op]
        ops.append(op)
        numbers.append(folders.setdefault(str(path.parent), len(folders)))
        files.append(path.name)
        names.append([name.op_type, name.op_name, name.task_id, name.stream_id, name.timestamp_us, list(name.extra)])
    tree = {"folders": list(folders), "ops": ops, "numbers": numbers, "files": files, "ignored": index.ignored,
            "stats_files": index.stats_files}
    text = json.dumps(names, separators=(",", ":"), ensure_ascii=False)
    return tree, text.encode("utf-8", errors="surrogateescape")


@without_gc
def _index_from_json(tree: dict[str, Any], names: bytes) -> DumpIndex:
    # (the text str(Path(folder) / name) gives: "." adds nothing)
    parents = ["" if str(folder) == "." else os.path.join(str(folder), "") for folder in tree["folders"]]
    ops, numbers, files = tree["ops"], tree["numbers"], tree["files"]
    if not (len(ops) == len(numbers) == len(files)) or not all(isinstance(op, str) for op in ops):
        raise ValueError("damaged")
    paths = {op: parents[number] + str(file_name) for op, number, file_name in zip(ops, numbers, files)}
    return _KeptIndex(paths, ops, names, [str(item) for item in tree["ignored"]], int(tree["stats_files"]))


class _KeptIndex(DumpIndex):
    """A DumpIndex read back from the cache, whose paths stay text until by_op is asked for (a graph run's
    plan takes the text: plan_paths), and whose file names are parsed only when asked for (a graph run never
    does): 20,000 Paths or DumpNames cost as much as the rest of reading the index."""

    def __init__(self, paths: dict[str, str], ops: list[str], names: bytes, ignored: list[str],
                 stats_files: int) -> None:
        super().__init__(ignored=ignored, stats_files=stats_files)
        del self.by_op, self.names  # (made by __getattr__ on first use)
        self._paths = paths
        self._ops, self._names_text = ops, names

    def __getattr__(self, name: str) -> Any:  # (only for attributes the instance does not have)
        if "_paths" not in self.__dict__:
            raise AttributeError(name)
        if name == "by_op":
            self.by_op = {op: Path(path) for op, path in self._paths.items()}
            return self.by_op
        if name == "names":
            self.names = _names_from_json(self._ops, self._names_text)
            return self.names
        raise AttributeError(name)

    def plan_paths(self) -> dict[str, Path | str]:  # type: ignore[override]
        return self.__dict__.get("by_op") or self._paths


@without_gc
def _names_from_json(ops: list[str], text: bytes) -> dict[str, DumpName]:
    """The kept file names (the line's CRC was checked when the index was read: it is as written)."""
    return {op: DumpName(str(op_type), str(op_name), int(task_id), None if stream_id is None else int(stream_id),
                         int(timestamp_us), tuple(map(int, extra)) if extra else ())
            for op, (op_type, op_name, task_id, stream_id, timestamp_us, extra) in zip(ops, json.loads(text))}


# --- what a dump folder holds ------------------------------------------------------------------------
def stats_only(folder: str | os.PathLike[str]) -> bool:
    """True when `folder` (searched recursively) holds statistics CSVs and no tensor dump files; the first
    tensor dump met decides (the folders are read lazily: a dump of 20,000 files is not listed whole)."""
    stats = False
    for dirpath, base in _scan_file_names(folder):
        if base.startswith(".") or base == MAPPING_FILE:
            continue
        if base.lower().endswith(".csv"):
            from precision_tool.formats.npu.stats_dump import stats_name_of  # (only for a folder of CSVs)

            stats = stats or stats_name_of(os.path.join(dirpath, base))[0] is not None
        elif not base.endswith((".npy", ".txt", ".json", ".partial", ".log")) \
                and dump_name_of(os.path.join(dirpath, base)) is not None:
            return False
    return stats


def _scan_file_names(folder: str | os.PathLike[str]) -> Iterator[tuple[str, str]]:
    """workspace.walk_file_names in the order the folders are read, unsorted and lazily: stats_only stops at
    the first tensor dump, and os.walk reads a folder of 20,000 files whole before yielding any. (Here, not
    beside walk_file_names: workspace.py is at its size limit.)"""
    pending, seen = [os.fspath(folder)], set()
    while pending:
        where = pending.pop()
        real = os.path.realpath(where)
        if real in seen:  # a symlink loop
            continue
        seen.add(real)
        try:
            entries = os.scandir(where)
        except OSError:
            continue  # as walk_file_names: a folder that cannot be listed is skipped
        with entries:
            for entry in entries:
                try:
                    if entry.is_dir():  # (symlinks followed, as walk_file_names does)
                        pending.append(entry.path)
                        continue
                except OSError:
                    continue
                yield where, entry.name
