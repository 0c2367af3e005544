"""csv_line writes what csv.writer's excel dialect writes (the dialect of msaccucmp's CSVs), for any cells:
commas, quotes, CR and LF alone or together, NUL and other control characters, non-ASCII, empty cells."""

from __future__ import annotations

import csv
import io
import random

from precision_tool.analysis.results.result_writer import csv_line, encode_groups, encode_rows

ALPHABET = ['a', 'Z', '0', '.', ' ', ',', '"', '\r', '\n', '\0', '\t', ';', "'", '\\', 'é', '名', '\x1e', '\x1f']


def _writer_line(cells: list[str]) -> str:
    buffer = io.StringIO()
    csv.writer(buffer).writerow(cells)
    return buffer.getvalue()


def test_csv_line_matches_the_writer_on_random_hostile_cells() -> None:
    rng = random.Random(28)
    for _ in range(5000):
        cells = ["".join(rng.choice(ALPHABET) for _ in range(rng.randrange(0, 6))) for _ in range(rng.randrange(1, 6))]
        assert csv_line(cells) == _writer_line(cells), cells


def test_csv_line_matches_the_writer_on_the_edges() -> None:
    for cells in ([""], ["", ""], [","], ['"'], ["\r\n"], ["a\rb"], [" lead", "trail "], ['say "hi"', "x,y"],
                  ["[1,2,4,8]", "(-0.138;1.107),(-0.139;1.107)", "NaN"]):
        assert csv_line(cells) == _writer_line(cells), cells


def test_encode_groups_writes_what_encode_rows_writes() -> None:
    """The workers' encoder (one text per group) against the writer's (ResultWriter.write_group)."""
    from precision_tool.analysis.results.metrics import TensorMetrics
    from precision_tool.analysis.results.result_writer import CompareRow

    values = ("0.999", "0.1", "2.0", "0.01", "0.0", "(-0.138;1.107),(-0.139;1.107)", "0.1", "0.1", "1.2", "0.05")
    rows = [CompareRow(3, "Conv2D", "a/b,c", "float16", "0", 'g "quoted"', "float32", "a/b:output:0", "[1,2]",
                       TensorMetrics(values, ('[a/b] reason, with "quotes"\nand a line',))),
            CompareRow(4, "Relu", "r", "float16", "0", "r", "float32", "r:input:0", "[4]", TensorMetrics(values, ()))]
    for npu_vs_npu, overflow, sequence in ((False, False, False), (True, False, False), (False, True, True)):
        texts, digest = encode_groups([rows[:1], rows[1:]], npu_vs_npu, overflow, sequence)
        assert texts == [encode_rows(rows[:1], npu_vs_npu, overflow, sequence),
                         encode_rows(rows[1:], npu_vs_npu, overflow, sequence)]
        assert digest.rows == 2
