"""Compact columns for the page's JSON: what made a 20,000-op page 10 MB of data was each op's name,
ports and metrics written out per point, keys and quotes included. Every encoding here is lossless (the
page shows the same text), is undone by a few lines of report.js (`decode*` there), and falls back to the
plain text wherever it would not give that text back.
"""

from __future__ import annotations

import re
from typing import Any, Hashable, Iterable, TypeVar

T = TypeVar("T", bound=Hashable)

# no leading zero and at most 9 digits before the point (the millionths stay exact in a JavaScript number):
# exactly the cells decimals_text gives back, but '-0.000000' (an integer has no negative zero)
_SIX_DECIMAL = r"-?(?:0|[1-9][0-9]{0,8})\.[0-9]{6}"
_SIX_DECIMALS = re.compile(_SIX_DECIMAL + r"\Z")
_MEAN_STD_PAIRS = re.compile(r"\((-?[0-9]{1,12}\.[0-9]{3});(-?[0-9]{1,12}\.[0-9]{3})\),"
                             r"\((-?[0-9]{1,12}\.[0-9]{3});(-?[0-9]{1,12}\.[0-9]{3})\)\Z")


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


def decimals_text(units: int, places: int) -> str:
    """The text back from a number held as an integer of 10**-places (report.js `decimals` does the same)."""
    digits = str(abs(units)).rjust(places + 1, "0")
    return ("-" if units < 0 else "") + digits[:-places] + "." + digits[-places:]


def mean_std_text(thousandths: list[int]) -> str:
    """StandardDeviation's '(mean;std),(mean;std)' back from its four numbers in thousandths."""
    a, b, c, d = (decimals_text(v, 3) for v in thousandths)
    return f"({a};{b}),({c};{d})"


def metric_cell(text: str) -> int | list[int] | str:
    """A metric cell as the CSV writes it, in fewer bytes: '0.021420' (msaccucmp writes most cells with
    six decimals) becomes 21420, its millionths; StandardDeviation's '(-0.119;1.165),(-0.119;1.164)' the
    list of its four numbers in thousandths. Any cell this would not give back exactly ('NaN',
    '-0.000000') stays text."""
    if _SIX_DECIMALS.match(text):
        return int(text.replace(".", "")) if text != "-0.000000" else text
    pairs = _MEAN_STD_PAIRS.match(text)
    if pairs:
        thousandths = [int(v.replace(".", "")) for v in pairs.groups()]
        if mean_std_text(thousandths) == text:
            return thousandths
    return text


_NUMBER_CHARACTERS = frozenset("0123456789.-\n")
"""(a column holding any other character, 'NaN' say, is packed cell by cell without the regex pass)"""
_SIX_DECIMAL_LINES = re.compile(rf"(?:{_SIX_DECIMAL}\n)*{_SIX_DECIMAL}")  # (a column, one cell a line)


def metric_column(texts: list[str]) -> list[int | list[int] | str]:
    """metric_cell of each cell of a column; a column of six-decimal numbers only (the usual one: every
    metric but StandardDeviation) is checked in one pass of the regex over the whole column, not one per cell
    (20,000 ops: 200,000 cells)."""
    joined = "\n".join(texts)
    if (texts and joined.count("\n") == len(texts) - 1 and "-0.000000" not in joined
            and not set(joined) - _NUMBER_CHARACTERS and _SIX_DECIMAL_LINES.fullmatch(joined)):
        return list(map(int, joined.replace(".", "").split("\n")))
    return [metric_cell(text) for text in texts]


def indexes_where(flags: Iterable[bool]) -> list[int]:
    """The positions of the true flags: abnormal outputs are few among many."""
    return [i for i, flag in enumerate(flags) if flag]
