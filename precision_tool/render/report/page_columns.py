"""Compact columns for the page's JSON: what made a 20,000-op page 10 MB of data was each op's name,
ports and metrics written out per point, keys and quotes included. Every encoding here is lossless (the
page shows the same text), is undone by a few lines of report.js (`decode*` there), and falls back to the
plain text wherever it would not give that text back.
"""

from __future__ import annotations

import re
from typing import Any, Hashable, Iterable, TypeVar

T = TypeVar("T", bound=Hashable)

_SIX_DECIMALS = re.compile(r"-?[0-9]{1,9}\.[0-9]{6}\Z")


def utf16_length(text: str) -> int:
    """A string's length as JavaScript counts it (UTF-16 code units): the page slices by that."""
    return len(text.encode("utf-16-le")) // 2


def front_coded(names: Iterable[str]) -> list[Any]:
    """[shared, rest, shared, rest, ...]: each name as the count of leading characters (UTF-16 units) it
    shares with the name before it and the rest of it. Names in execution order share their scopes
    ('net/stage5/block1090/'), so most of each name is a number."""
    flat: list[Any] = []
    previous = ""
    for name in names:
        shared = 0
        limit = min(len(name), len(previous))
        while shared < limit and name[shared] == previous[shared]:
            shared += 1
        flat += [utf16_length(name[:shared]), name[shared:]]
        previous = name
    return flat


def table_and_indexes(values: Iterable[T]) -> tuple[list[T], list[int]]:
    """Each distinct value once, in the order first seen, and every value as its index in that table."""
    table: dict[T, int] = {}
    indexes = [table.setdefault(v, len(table)) for v in values]
    return list(table), indexes


def six_decimals_text(millionths: int) -> str:
    """The text back from a cell held as its millionths (report.js `sixDecimals` does the same)."""
    digits = str(abs(millionths)).rjust(7, "0")
    return ("-" if millionths < 0 else "") + digits[:-6] + "." + digits[-6:]


def metric_cell(text: str) -> int | str:
    """A metric cell as the CSV writes it, in fewer bytes: '0.021420' (msaccucmp writes most cells with
    six decimals) becomes 21420, its millionths; any cell this would not give back exactly ('NaN',
    '-0.000000', '(-0.119;1.165),(...)') stays text."""
    if _SIX_DECIMALS.match(text):
        millionths = int(text.replace(".", ""))
        if six_decimals_text(millionths) == text:
            return millionths
    return text


def indexes_where(flags: Iterable[bool]) -> list[int]:
    """The positions of the true flags: abnormal outputs are few among many."""
    return [i for i, flag in enumerate(flags) if flag]
