"""Hostile statistics CSVs: a seeded generator of mutated files, and a script mode that runs a whole corpus
through the reader and prints the counts.

    python3 tests/analysis/compare/stats/hostile_stats.py [--count 1000] [--seed 11] [--out DIR]

Each file starts from a valid CSV whose statistics are computed from real arrays (stats_dump's writer, the
device header or an adump header), then one mutation of a kind is applied. A file must end in a result (it
reads, with at least one tensor row) or in one FormatError naming the file; anything else (another
exception, a read with nothing in it) is counted as a failure.
"""

from __future__ import annotations

import argparse
import random
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Callable

if __package__ in (None, ""):  # script mode: the checkout on the path
    sys.path.insert(0, str(Path(__file__).resolve().parents[4]))

import numpy as np

from precision_tool.formats.npu.stats_dump import (
    COL_COUNT, COL_DTYPE, COL_FORMAT, COL_INDEX, COL_IO, COL_L2NORM, COL_MAX, COL_MIN, COL_SHAPE, COL_SIZE,
    DEVICE_HEADER, StatsTensor, stats_csv_text,
)

FILE_NAME = "MaxPool.pool1_MaxPool.6.0.{:016d}.csv"
ADUMP_HEADER = (COL_IO, COL_INDEX, COL_SIZE, COL_DTYPE, COL_FORMAT, COL_SHAPE, COL_COUNT, COL_MAX, COL_MIN,
                COL_L2NORM)
BIG_LINE = 50 << 20


def base_text(rng: random.Random) -> str:
    """A valid CSV of 1-4 tensors of real data (NaN/Inf sometimes), device or adump header."""
    gen = np.random.default_rng(rng.randrange(1 << 30))
    tensors = []
    for _ in range(rng.randint(1, 4)):
        shape = tuple(rng.randint(1, 6) for _ in range(rng.randint(0, 4)))
        dtype = rng.choice([np.float32, np.float16, np.int32, np.int8])
        array = (gen.standard_normal(shape) * 10).astype(dtype)
        if array.dtype.kind == "f" and array.size > 2 and rng.random() < 0.3:
            array.reshape(-1)[0] = rng.choice([np.nan, np.inf, -np.inf])
        tensors.append(StatsTensor(array, layout=rng.choice(["ND", "NCHW", "NC1HWC0"])))
    split = rng.randint(0, len(tensors))
    header = DEVICE_HEADER if rng.random() < 0.7 else ADUMP_HEADER
    return stats_csv_text(tensors[:split], tensors[split:], header)


def _cell_mutation(replacement: Callable[[random.Random], str]) -> Callable[[random.Random, str], bytes]:
    def mutate(rng: random.Random, text: str) -> bytes:
        lines = text.splitlines()
        row = rng.randint(1, len(lines) - 1)
        cells = lines[row].split(",")
        cells[rng.randint(2, len(cells) - 1)] = replacement(rng)
        lines[row] = ",".join(cells)
        return ("\n".join(lines) + "\n").encode()
    return mutate


def _truncated(rng: random.Random, text: str) -> bytes:
    data = text.encode()
    return data[: rng.randint(0, len(data) - 1)]


def _wrong_header(rng: random.Random, text: str) -> bytes:
    lines = text.splitlines()
    names = lines[0].split(",")
    choice = rng.random()
    if choice < 0.3:
        names[rng.randrange(len(names))] = rng.choice(["Input/Ouput", "Idx", "", "Max", "Min Value", "Index"])
    elif choice < 0.6:
        rng.shuffle(names)
    else:
        names = [f"col{i}" for i in range(len(names))]
    lines[0] = ",".join(names)
    return ("\n".join(lines) + "\n").encode()


def _missing_column(rng: random.Random, text: str) -> bytes:
    rows = [line.split(",") for line in text.splitlines()]
    drop = rng.randrange(len(rows[0]))
    return ("\n".join(",".join(r[:drop] + r[drop + 1:]) for r in rows) + "\n").encode()


def _non_utf8(rng: random.Random, text: str) -> bytes:
    data = bytearray(text.encode())
    for _ in range(rng.randint(1, 4)):
        data.insert(rng.randrange(len(data)), rng.choice([0xFF, 0xFE, 0xC3, 0x80, 0xE2]))
    return bytes(data)


def _flipped(rng: random.Random, text: str) -> bytes:
    data = bytearray(text.encode())
    for _ in range(rng.randint(1, 8)):
        data[rng.randrange(len(data))] = rng.randrange(256)
    return bytes(data)


def _structure(rng: random.Random, text: str) -> bytes:
    lines = text.splitlines()
    choice = rng.random()
    if choice < 0.2:
        lines.append(lines[-1] + ",extra,fields")
    elif choice < 0.4:
        lines.insert(rng.randint(1, len(lines)), '"unbalanced,quote')
    elif choice < 0.6:
        lines = lines[:1] + lines[1:] * rng.randint(2, 2000)  # the same tensors appended again and again
    elif choice < 0.8:
        return ("\ufeff" + "\r\n".join(lines) + "\r\n").encode()  # BOM and CRLF: still a valid file
    else:
        lines = lines[:1]  # header only
    return ("\n".join(lines) + "\n").encode()


def _big_line(rng: random.Random, text: str) -> bytes:
    header = text.splitlines()[0]
    return (header + "\nInput,0,4,DT_FLOAT,ND,1,").encode() + b"9" * BIG_LINE + b"\n"


MUTATIONS: dict[str, Callable[[random.Random, str], bytes]] = {
    "truncated": _truncated,
    "wrong header": _wrong_header,
    "missing column": _missing_column,
    "text in number": _cell_mutation(lambda r: r.choice(["abc", "1.2.3", "0x1F", "--1", "1e", "NaNa", " ", "1_0"])),
    "huge number": _cell_mutation(lambda r: r.choice(["1e400", "-1e400", "9" * 300, "1e-400", "18446744073709551616"])),
    "5000 digits": _cell_mutation(lambda r: "9" * 5000 if r.random() < 0.5 else "0." + "1" * 5000),
    "nan/inf strings": _cell_mutation(lambda r: r.choice(["nan", "-nan", "NaN", "inf", "-inf", "Infinity", "INF"])),
    "non-utf-8": _non_utf8,
    "empty": lambda rng, text: b"" if rng.random() < 0.5 else b"\n\n  \n",
    "flipped bytes": _flipped,
    "structure": _structure,
    "negative or fractional count": _cell_mutation(lambda r: r.choice(["-1", "2.5", "-0", "1e3"])),
    "bad shape": _cell_mutation(lambda r: r.choice(["1x", "x", "axb", "x".join(["1"] * 100), "-3x4", "4x4x"])),
}


def generate(out: Path, count: int, seed: int = 11, *, big: int = 1) -> list[tuple[str, Path]]:
    """Write `count` mutated files (kinds in turn) under `out`, each in its own folder with a dump name;
    `big`: how many of them are 50 MB single-line files (the rest of that kind's turns go to others)."""
    rng = random.Random(seed)
    kinds = list(MUTATIONS)
    files = []
    for number in range(count):
        kind = kinds[number % len(kinds)]
        text = base_text(rng)
        data = MUTATIONS[kind](rng, text)
        folder = out / f"{number:05d}"
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / FILE_NAME.format(1796104230434740 + number)
        path.write_bytes(data)
        files.append((kind, path))
    for number in range(big):
        folder = out / f"big{number}"
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / FILE_NAME.format(1796104230434740 + count + number)
        path.write_bytes(_big_line(rng, base_text(rng)))
        files.append(("50 MB line", path))
    return files


def outcome(path: Path) -> tuple[str, str]:
    """('read' | 'refused' | 'FAILED: ...', detail) of one file through the reader."""
    from precision_tool.errors import FormatError
    from precision_tool.formats.npu.stats_dump import read_stats_csv

    try:
        stats = read_stats_csv(path)
    except FormatError as exc:
        text = str(exc)
        if not text.startswith(str(path)) or "\n" in text:
            return "FAILED: error does not name the file on one line", text
        return "refused", exc.problem
    except Exception as exc:  # noqa: BLE001 - the point is to catch anything else
        return f"FAILED: {type(exc).__name__}", str(exc)[:200]
    if not stats.rows:
        return "FAILED: read with no rows", ""
    return "read", f"{len(stats.rows)} rows"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--count", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=11)
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="hostile_stats_") as scratch:
        out = args.out or Path(scratch)
        files = generate(out, args.count, args.seed)
        counts: Counter[tuple[str, str]] = Counter()
        failures = []
        slowest = (0.0, "")
        for kind, path in files:
            start = time.perf_counter()
            result, detail = outcome(path)
            elapsed = time.perf_counter() - start
            slowest = max(slowest, (elapsed, f"{kind}: {path.name}"))
            counts[(kind, result)] += 1
            if result.startswith("FAILED"):
                failures.append(f"{kind}: {path}: {result} {detail}")
        print(f"{len(files)} mutated statistics CSVs (seed {args.seed})")
        for kind in [*MUTATIONS, "50 MB line"]:
            row = {r: n for (k, r), n in counts.items() if k == kind}
            print(f"  {kind:<30} " + ", ".join(f"{n} {r}" for r, n in sorted(row.items())))
        total = Counter(r for (_, r), n in counts.items() for _ in range(n))
        print("total: " + ", ".join(f"{n} {r}" for r, n in sorted(total.items())))
        print(f"slowest file: {slowest[0] * 1000:.0f} ms ({slowest[1]})")
        for line in failures[:20]:
            print(line)
        return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
