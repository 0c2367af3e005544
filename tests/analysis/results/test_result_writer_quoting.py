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
        text, digest = encode_groups([rows[:1], rows[1:]], npu_vs_npu, overflow, sequence)
        assert text == (encode_rows(rows[:1], npu_vs_npu, overflow, sequence)
                        + encode_rows(rows[1:], npu_vs_npu, overflow, sequence))
        assert digest.rows == 2


def test_encode_groups_column_by_column_matches_the_writer_and_the_row_digest() -> None:
    """The column-by-column encoder against csv.writer, row by row, on batches where commas, quotes and line
    breaks turn up in any column or in none; and its digest against the digest of each row's cells."""
    from precision_tool.analysis.results.metrics import TensorMetrics
    from precision_tool.analysis.results.result_writer import CompareRow, header_for
    from precision_tool.analysis.results.results import digest_rows, summary_cells_getter

    rng = random.Random(2028)
    plain = ['a', 'Z', '0', '.', ' ', ';', 'é', '名', '-', '/']

    def cell(hostile: bool) -> str:
        return "".join(rng.choice(ALPHABET if hostile else plain) for _ in range(rng.randrange(0, 6)))

    for batch in range(300):
        hostile = rng.random() < 0.5  # half the batches: plain cells only (the column-wise way throughout)
        rows = []
        for number in range(rng.randrange(1, 12)):
            values = tuple(rng.choice(["0.999000", "NaN", "nan", "inf", cell(hostile)]) for _ in range(10))
            kind = rng.choice(["input", "output", ""])
            tensor = f"{cell(hostile)}:{kind}:{rng.randrange(3)}" if kind else rng.choice(["NaN", cell(hostile)])
            rows.append(CompareRow(rng.randrange(4), cell(hostile), cell(hostile), "float16", "0", cell(hostile),
                                   "float32", tensor, rng.choice(["[1,2]", "[4]", cell(hostile)]),
                                   TensorMetrics(values, tuple(cell(hostile) for _ in range(rng.randrange(3)))),
                                   overflow=rng.choice(["YES", "NO", "NaN"]), op_sequence=str(number)))
        cut = rng.randrange(len(rows) + 1)
        for columns in ((False, False, False), (True, False, False), (False, True, True)):
            text, digest = encode_groups([rows[:cut], rows[cut:]], *columns)
            cells = [row.cells(*columns) for row in rows]
            assert text == "".join(_writer_line(row) for row in cells), (batch, columns)
            pick = summary_cells_getter(header_for(*columns))
            # (as text: a NaN cosine is never equal to itself)
            assert repr(digest) == repr(digest_rows([pick([*row, ""]) for row in cells])), (batch, columns)


def test_encode_groups_of_rows_of_other_lengths_writes_each_row_whole() -> None:
    """Rows whose cells do not match the header (no CompareRow gives them) are written row by row, never cut
    to the shortest (which turning rows into columns would do)."""
    from precision_tool.analysis.results.result_writer import header_for
    from precision_tool.analysis.results.results import digest_rows, summary_cells_getter

    class Row:
        def __init__(self, cells: list[str]) -> None:
            self._cells = cells

        def cells(self, *columns: bool) -> list[str]:
            return self._cells

    width = len(header_for(False))
    rows = [Row(["1", "Add", "a"] + ["x"] * (width - 3)), Row(["2", "Relu", "b,c"] + ["y"] * (width + 1))]
    text, digest = encode_groups([rows], False)
    assert text == "".join(_writer_line(row.cells()) for row in rows)
    pick = summary_cells_getter(header_for(False))
    assert repr(digest) == repr(digest_rows([pick([*row.cells(), ""]) for row in rows]))


def test_encode_groups_of_no_rows() -> None:
    text, digest = encode_groups([[], []], False)
    assert text == "" and digest.rows == 0 and digest.ops == []
