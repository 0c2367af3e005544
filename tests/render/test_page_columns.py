"""page_columns.metric_column packs a column of metric cells as metric_cell packs each cell, whether the
column takes its one-pass way (six-decimal numbers only) or not."""

from __future__ import annotations

import random

from precision_tool.render.report.page_columns import metric_cell, metric_column

CELLS = ["0.999964", "0.000000", "0.000014", "-0.000001", "-0.000000", "-1.500000", "123456789.123456",
         "1234567890.123456", "7.094114", "(-0.119;1.165),(-0.119;1.164)", "NaN", "nan", "inf", "-inf", "1e-05",
         "0.5", "00.500000", "-10.000000", "0.0000001", "", "1.000000\n2.000000"]


def _packed(column: list[str]) -> list[object]:
    return [metric_cell(text) for text in column]


def test_each_cell_alone_and_every_pair() -> None:
    for first in CELLS:
        assert metric_column([first]) == _packed([first]), first
        for second in CELLS:
            assert metric_column([first, second]) == _packed([first, second]), (first, second)


def test_long_columns_of_numbers_with_a_stranger_here_and_there() -> None:
    rng = random.Random(28)
    numbers = [f"{rng.uniform(-50, 50):.6f}" for _ in range(5000)]
    assert metric_column(numbers) == _packed(numbers)
    assert all(isinstance(v, int) for v in metric_column(numbers))
    for stranger in CELLS:
        column = list(numbers)
        column[rng.randrange(len(column))] = stranger
        assert metric_column(column) == _packed(column), stranger
    assert metric_column([]) == []
