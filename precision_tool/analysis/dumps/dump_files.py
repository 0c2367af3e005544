"""Finding NPU dump files in the workspace, the one way every command does it (`ls dump`, `dc NAME`, the
dumps `ni` shows, the tensor spellings of `pt`/`cp`/`dc` in tensor_ref, the overflow check).

Names are read from file names only (plus mapping.csv for numbered files); headers are read for the
`ls dump` counts and to tell apart two ops that share a dump spelling. Nothing here prints.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Iterable

from precision_tool.errors import FormatError
from precision_tool.formats.npu.npu_dump import (
    MAPPING_FILE, DumpName, count_dump_tensors, parse_dump_name, read_mapping, sanitize_op_name,
)

if TYPE_CHECKING:
    from precision_tool.workspace import Workspace

# Files in dump folders that are not dumps (decoded output, mapping tables, logs, failure lists ...).
NOT_DUMP_SUFFIXES = (".npy", ".csv", ".tsv", ".txt", ".json", ".log", ".pb", ".bin", ".pkl", ".part", ".py", ".md")


@dataclass(frozen=True)
class DumpEntry:
    """A file in a dump folder whose name says it is a dump (headers not read yet; paths kept as text
    because building 20,000 Path objects costs more than reading their headers)."""

    folder: str
    file_name: str
    name: DumpName
    real: str = ""  # the name mapping.csv gives a numbered file; "" when the file carries its real name

    @property
    def real_name(self) -> str:
        """The name `pt`, `cp` and `dc` take (a numbered file's real name is found through mapping.csv)."""
        return self.real or self.file_name

    @property
    def path(self) -> Path:
        return Path(self.folder, self.file_name)

    @property
    def path_text(self) -> str:
        return os.path.join(self.folder, self.file_name)


def folder_dumps(folder: Path, max_files: int, command: str = "dc FOLDER") -> tuple[list[Path], list[Path]]:
    """(dump files, other files) below a folder, for `dc FOLDER`; more than `max_files` dumps are refused in
    one line from their names alone, before a Path is made for each (a folder of 1,000,000 dumps is millions
    of .npy and many minutes of writing: asked for, not started by a typo)."""
    from precision_tool.errors import UsageError
    from precision_tool.workspace import walk_file_names

    if max_files < 1:
        raise UsageError(f"dc: --max-files takes a number of files (1 or more), not {max_files}")
    names = [os.path.join(where, name) for where, name in walk_file_names(folder)]
    dumps = [name for name in names if is_candidate_dump(name)]
    if len(dumps) > max_files:
        raise UsageError(f"dc: {folder} holds {len(dumps):,} dump files, more than --max-files {max_files:,}; "
                         "decoding them all writes a .npy per tensor and takes many minutes: decode one op "
                         f"(`dc OP`), one file or a sub-folder, or raise the limit with `{command} --max-files "
                         f"{len(dumps)}`")
    others = [Path(name) for name in names if not is_candidate_dump(name) and not os.path.basename(name).startswith(".")]
    return [Path(name) for name in dumps], others


def is_candidate_dump(path: Path | str) -> bool:
    """Files a folder decode tries: everything but hidden files, mapping.csv and known non-dump suffixes."""
    base = os.path.basename(path)
    return not base.startswith(".") and base != MAPPING_FILE and not base.lower().endswith(NOT_DUMP_SUFFIXES)


def scan_dump_folder(folder: Path, needle: str | None = None) -> list[DumpEntry]:
    """Files below `folder` whose names parse as dump names (numbered names resolved via mapping.csv).
    `needle`: only the files whose (real) name holds it, lower-cased; an op's lookup then parses the names
    of that op only (a folder of 1,000,000 dumps: ~1 s, not ~10 s)."""
    return scan_folder(folder, needle, stats=False)[0]


def scan_stats_folder(folder: Path, needle: str | None = None) -> list[DumpEntry]:
    """Statistics CSVs below `folder` (`dump_data="stats"`: the dump name plus `.csv`, formats.md §5);
    `needle` as in scan_dump_folder."""
    return scan_folder(folder, needle, dumps=False)[1]


def scan_folder(folder: Path, needle: str | None = None, *, dumps: bool = True,
                stats: bool = True) -> tuple[list[DumpEntry], list[DumpEntry]]:
    """(scan_dump_folder, scan_stats_folder) of `folder` from one walk of it (`ni` wants both: at 20,000
    files each walk costs 30-50 ms)."""
    dump_entries: list[DumpEntry] = []
    stats_entries: list[DumpEntry] = []
    for dirpath, dirnames, filenames in os.walk(folder, followlinks=True):
        dirnames.sort()
        if dumps:
            dump_entries.extend(_dump_entries(dirpath, filenames, needle))
        if stats:
            stats_entries.extend(_stats_entries(dirpath, filenames, needle))
    return dump_entries, stats_entries


def _dump_entries(dirpath: str, filenames: list[str], needle: str | None) -> list[DumpEntry]:
    entries: list[DumpEntry] = []
    mapping: dict[str, str] | None = None
    if MAPPING_FILE in filenames:
        try:
            mapping = read_mapping(dirpath)
        except FormatError:
            mapping = {}
    if needle is not None:
        filenames = [base for base in filenames if needle in base.lower()
                     or (mapping and needle in mapping.get(base, "").lower())]
    for base in sorted(filenames):
        if base.startswith(".") or base.endswith(NOT_DUMP_SUFFIXES):
            continue
        name = parse_dump_name(base)
        real = ""
        if name is None and mapping:
            real = mapping.get(base, "")
            name = parse_dump_name(real) if real else None
        if name is not None:
            entries.append(DumpEntry(dirpath, base, name, real))
    return entries


def _stats_entries(dirpath: str, filenames: list[str], needle: str | None) -> list[DumpEntry]:
    from precision_tool.formats.npu.stats_dump import stats_name_of

    entries: list[DumpEntry] = []
    csv_files = [base for base in filenames if base.lower().endswith(".csv")]
    if needle is not None and MAPPING_FILE not in filenames:  # numbered CSVs are named in mapping.csv
        csv_files = [base for base in csv_files if needle in base.lower()]
    for base in sorted(csv_files):
        if base.startswith(".") or base == MAPPING_FILE:
            continue
        name, real = stats_name_of(os.path.join(dirpath, base))
        if name is not None:
            entries.append(DumpEntry(dirpath, base, name, real if real != base else ""))
    return entries


def workspace_dump_folders(workspace: "Workspace") -> list[Path]:
    """Where the workspace's NPU dumps are: the newest dump folder of each debug run."""
    return [folder for _, folder in workspace_dump_runs(workspace)]


def workspace_dump_runs(workspace: "Workspace") -> list[tuple[int, Path]]:
    """(N, newest dump folder of npu/debug_N) for every run that has dumps, debug_0 first."""
    runs = []
    for debug_id in workspace.debug_ids():
        folder = workspace.newest_dump_dir(debug_id)
        if folder is not None:
            runs.append((debug_id, folder))
    return runs


def scan_runs(runs: Iterable[tuple[int, Path]], needle: str | None = None) -> list[tuple[int, list[DumpEntry]]]:
    """(N, the dump entries of its folder) for each (N of debug_N, folder) of `runs`; `needle` as in
    scan_dump_folder."""
    return [(debug_id, scan_dump_folder(folder, needle)) for debug_id, folder in runs]


def op_needle(op_name: str) -> str:
    """What every dump file name of an op holds (`.conv1_Conv2D.`, lower-cased), for scan_dump_folder."""
    return f".{sanitize_op_name(op_name)}.".lower()


def dumps_of_op(scanned: Iterable[tuple[int, list[DumpEntry]]], op_name: str) -> list[tuple[int, list[DumpEntry]]]:
    """The dumps of op `op_name` (graph spelling `a/b` or dump spelling `a_b`) in each run of `scanned` that
    has any, in the order given, each run's oldest first (Opdebug files left out). Two ops can share a dump
    spelling (`a/b_c` and `a_b/c`): a graph spelling keeps the files whose header names that op, when any does."""
    wanted = sanitize_op_name(op_name)
    found = []
    for debug_id, entries in scanned:
        matches = [e for e in entries if e.name.op_name == wanted and not e.name.is_opdebug]
        if not matches:
            continue
        if wanted != op_name:
            matches = _named_in_header(matches, op_name) or matches
        matches.sort(key=lambda e: (e.name.timestamp_us, e.file_name))
        found.append((debug_id, matches))
    return found


def stats_in(scanned: Iterable[tuple[int, list[DumpEntry]]], op_name: str) -> list[tuple[int, list[DumpEntry]]]:
    """The statistics CSVs of op `op_name` among those scanned (scan_folder) for each run that has any, oldest
    first."""
    wanted = sanitize_op_name(op_name)
    found = []
    for debug_id, entries in scanned:
        matches = [e for e in entries if e.name.op_name == wanted and not e.name.is_opdebug]
        if matches:
            matches.sort(key=lambda e: (e.name.timestamp_us, e.file_name))
            found.append((debug_id, matches))
    return found


def _named_in_header(entries: list[DumpEntry], op_name: str) -> list[DumpEntry]:
    from precision_tool.errors import PrecisionToolError
    from precision_tool.formats.npu.npu_dump import read_dump_header

    same = []
    for entry in entries:
        try:
            if read_dump_header(entry.path).op_name == op_name:
                same.append(entry)
        except (PrecisionToolError, OSError):
            continue  # an unreadable file: the command that reads it says why
    return same


def no_tensor_problem(path: str | os.PathLike[str], file_size: int) -> str:
    """Why a dump whose header lists no tensor is named, never counted as read: it decodes to nothing, and a
    header length of 0 reads as an empty header followed by bytes nothing explains (a damaged file)."""
    try:
        with open(path, "rb") as handle:
            header_length = int.from_bytes(handle.read(8), "little")
    except OSError:
        header_length = file_size  # it was just read; say the general thing
    rest = max(0, file_size - 8 - header_length)
    if header_length == 0:
        return (f"header length 0: the dump has no header, so the {rest} byte(s) after it cannot be read as "
                "tensors; the file is damaged or not an NPU dump")
    follow = f", and {rest} byte(s) follow it unexplained" if rest else ""
    return f"its header lists no input and no output{follow}; nothing to decode (the file is damaged?)"


# --- listing ----------------------------------------------------------------------------------------
@dataclass(frozen=True)
class DumpListing:
    """One row of `ls dump`."""

    run: str  # "debug_0"
    file_name: str  # the real dump name: what `pt`, `cp` and `dc` take
    path: str
    op_type: str
    op_name: str
    task_id: int
    stream_id: int | None
    timestamp_us: int
    input_count: int | None  # None when the header could not be read
    output_count: int | None
    problem: str | None = None
    statistics: bool = False  # a statistics CSV (dump_data="stats"): max/min/mean per tensor, no tensor data
    rank: int | None = None  # the rank (<device_id> folder) of a multi-device dump; None for one device


def list_dump_files(runs: Iterable[tuple[int, Path]], *, name: str | None = None,
                    op_type: str | None = None, rank: int | None = None) -> list[DumpListing]:
    """Dumps whose op name / type contain the filters, with their input/output counts (headers only);
    run by run (debug_0 first), rank by rank, each in time order. `runs`: (N of debug_N, folder);
    `rank`: only that rank's files of a multi-device dump."""
    from precision_tool.workspace import rank_dirs

    runs = list(runs)
    entries: list[tuple[int, DumpEntry, int | None]] = []
    for debug_id, folder in runs:
        ranks = rank_dirs(folder)
        parts = [(r.rank, r.path) for r in ranks if rank is None or r.rank == rank] if ranks else \
            ([] if rank is not None else [(None, folder)])
        needle = sanitize_op_name(name).lower() if name else None  # names first: parsing every one costs ~8 µs
        for rank_id, where in parts:
            entries += [(debug_id, e, rank_id) for e in scan_dump_folder(where, needle)]
            entries += [(debug_id, e, rank_id) for e in scan_stats_folder(where, needle)]
    if name:
        needle = sanitize_op_name(name).lower()
        entries = [(d, e, r) for d, e, r in entries if needle in e.name.op_name.lower()]
    if op_type:
        type_needle = op_type.lower()
        entries = [(d, e, r) for d, e, r in entries if type_needle in e.name.op_type.lower()]
    # One process: header reads cost ~20 µs each, less than shipping the rows back from workers.
    rows = _list_entries(entries)
    rows.sort(key=lambda r: (int(r.run.removeprefix("debug_")), -1 if r.rank is None else r.rank, r.timestamp_us,
                             r.path))
    return rows


def _list_entries(entries: list[tuple[int, DumpEntry, int | None]]) -> list[DumpListing]:
    from precision_tool.formats.npu.stats_dump import count_stats_tensors

    rows = []
    for debug_id, entry, rank in entries:
        n = entry.name
        text = entry.path_text
        statistics = entry.file_name.lower().endswith(".csv")  # scan_dump_folder never lists a .csv
        try:
            inputs, outputs = count_stats_tensors(text) if statistics else count_dump_tensors(text)
            counts: tuple[int | None, int | None] = (inputs, outputs)
            problem = None if inputs or outputs or statistics else no_tensor_problem(text, os.path.getsize(text))
        except FormatError as exc:
            counts, problem = (None, None), exc.problem
        except OSError as exc:  # gone since it was counted
            counts, problem = (None, None), f"cannot read ({exc.strerror or exc})"
        rows.append(DumpListing(f"debug_{debug_id}", entry.real_name, text, n.op_type, n.op_name, n.task_id,
                                n.stream_id, n.timestamp_us, counts[0], counts[1], problem, statistics, rank))
    return rows
