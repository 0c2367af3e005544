"""Helpers of the statistics-dump tests: real tensor dumps turned into the statistics CSVs the device writes."""

from __future__ import annotations

from pathlib import Path

from precision_tool.formats.npu.dump_types import data_type_name, format_name
from precision_tool.formats.npu.npu_dump import read_dump_header, read_tensor
from precision_tool.formats.npu.stats_dump import StatsTensor, write_stats_csv


def dump_files(root: Path) -> list[Path]:
    return sorted(p for p in root.rglob("*") if p.is_file() and p.suffix != ".csv" and p.name != "mapping.csv")


def to_stats(dump: Path, *, keep: bool = False) -> Path:
    """Write the statistics CSV of one tensor dump beside it (and remove the dump unless `keep`)."""
    header = read_dump_header(dump)

    def tensor(t):  # type: ignore[no-untyped-def]
        # the device writes DT_* names (DT_FLOAT16), our enum has the bare ones (FLOAT16)
        return StatsTensor(read_tensor(header, t), f"DT_{data_type_name(t.data_type)}", format_name(t.format),
                           tuple(t.shape))

    out = write_stats_csv(dump.with_name(dump.name + ".csv"), [tensor(t) for t in header.inputs],
                          [tensor(t) for t in header.outputs])
    if not keep:
        dump.unlink()
    return out


def stats_dir(root: Path) -> Path:
    """The folder holding debug_0's dump files."""
    return next(p.parent for p in (root / "npu" / "debug_0" / "dump").rglob("*.csv"))


def build_graph(root: Path) -> Path:
    return next((root / "npu" / "debug_0" / "graph").glob("*Build*"))
