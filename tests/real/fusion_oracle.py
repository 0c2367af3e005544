"""An oracle for fusion_result.json, written apart from the reader: what formats.md §5 says a file reads
as — {(graph id, 'graph'|'UB'): [(pass, effect, match) that fired]} — or Unreadable. The hostile corpus
(hostile_fusion.py) compares the tool with it; a file the oracle reads must not be refused, and a file it
cannot read must not give a result.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any

PREFIX = "session_and_graph_id_"


class Unreadable(Exception):
    pass


def _count(value: Any) -> int:
    number = _number(value)
    if number > 2**63 - 1:
        raise Unreadable
    return number


def _number(value: Any) -> int:
    if isinstance(value, bool):
        raise Unreadable
    if isinstance(value, int) and value >= 0:
        return value
    if isinstance(value, float) and math.isfinite(value) and value >= 0 and value == int(value):
        return int(value)
    if isinstance(value, str) and 0 < len(value.strip()) <= 30 and value.strip().isascii() \
            and value.strip().isdigit():
        return int(value.strip())
    raise Unreadable


def _pairs(pairs: list) -> list:
    return [("__pairs__", None)] + pairs


def _is_obj(v: Any) -> bool:
    return isinstance(v, list) and bool(v) and v[0] == ("__pairs__", None)


def _items(obj: list) -> list:
    return obj[1:]


def _get(obj: list, key: str) -> tuple[bool, Any]:
    for k, v in _items(obj):
        if k == key:
            return True, v
    return False, None


def _record(v: Any) -> bool:
    return _is_obj(v) and any(_get(v, s)[0] for s in ("graph_fusion", "ub_fusion"))


def oracle(data: bytes) -> dict[tuple[str, str], list[tuple[str, int, int]]]:
    """{(graph id, 'graph'|'UB'): fired [(pass, effect, match)] sorted as `ac` shows them}; Unreadable."""
    if len(data) > 256 * 1024 * 1024:
        raise Unreadable
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise Unreadable from None
    decoder, values, position = json.JSONDecoder(object_pairs_hook=_pairs), [], 0
    if max(text.count('"graph_fusion"'), text.count('"ub_fusion"')) > 4096:
        raise Unreadable
    try:
        while True:
            position = re.compile(r"[ \t\r\n,]*").match(text, position).end()
            if position >= len(text):
                break
            value, position = decoder.raw_decode(text, position)
            values.append(value)
    except (ValueError, RecursionError):
        raise Unreadable from None
    found: list[tuple[Any, str | None]] = []

    def keyed(obj: list) -> None:
        if not any(_record(c) or str(k).startswith(PREFIX) for k, c in _items(obj)):
            raise Unreadable
        for k, c in _items(obj):
            if _record(c):
                found.append((c, k))
            elif isinstance(c, list) or str(k).startswith(PREFIX):
                raise Unreadable

    for value in values:
        if _record(value):
            found.append((value, None))
        elif _is_obj(value):
            keyed(value)
        elif isinstance(value, list):
            for item in value:
                if _record(item):
                    found.append((item, None))
                elif _is_obj(item):
                    keyed(item)
                else:
                    raise Unreadable
        else:
            raise Unreadable
    if not found or len(found) > 4096:
        raise Unreadable
    result: dict[tuple[str, str], list[tuple[str, int, int]]] = {}
    for number, (record, key) in enumerate(found):
        gid = None
        for id_key in ("session_and_graph_id", "graphId"):
            has, v = _get(record, id_key)
            if has and isinstance(v, (str, int)) and not isinstance(v, bool) and str(v).strip():
                gid = str(v).strip()
                break
        if gid is None and key is not None and key.strip():
            gid = (key[len(PREFIX):] if key.startswith(PREFIX) and len(key) > len(PREFIX) else key).strip()
        if not gid:
            gid = str(number)
        if len(gid) > 1000 or not re.fullmatch(r"[\w.:/+-]+", gid):
            raise Unreadable
        for section, label in (("graph_fusion", "graph"), ("UB", "UB")):
            section = "ub_fusion" if label == "UB" else section
            has, passes = _get(record, section)
            rows = result.setdefault((gid, label), [])
            if not has:
                continue
            if not _is_obj(passes):
                raise Unreadable
            for name, counts in _items(passes):
                if len(name) > 1000 or not name.isprintable() or not _is_obj(counts):
                    raise Unreadable
                he, effect = _get(counts, "effect_times")
                hm, match = _get(counts, "match_times")
                hr, hits = _get(counts, "repository_hit_times")
                if not (he and hm):
                    raise Unreadable
                effect, match = _count(effect), _count(match)
                if hr and hits is not None:
                    _count(hits)
                if effect > 0:
                    rows.append((name, effect, match))
    return {k: sorted(v, key=lambda r: (-r[1], r[0])) for k, v in result.items()}
