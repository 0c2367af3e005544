"""Scalars of the protobuf text format: quoted strings with C escapes, integers, floats, enum names.

Why a module of its own: both text readers (the general path in ge_text and the fast path in
ge_text_fast) decode scalars the same way, and neither should import the other's machinery.
"""

from __future__ import annotations

import math
import re
from typing import Any

from precision_tool.formats.ge.ge_model import DATA_TYPE_NAMES, LIST_VAL_TYPES
from precision_tool.formats.ge.ge_tree import B, E, F, I, O, S, V

_DQ = r'"[^"\\\n]*(?:\\.[^"\\\n]*)*"'
_SQ = r"'[^'\\\n]*(?:\\.[^'\\\n]*)*'"
_QUOTED = rf"(?:{_DQ}|{_SQ})"
_SCALAR = rf"{_QUOTED}(?:\s*{_QUOTED})*|\[[^\[\]]*\]|[-+\w.]+"
# groups: 1 field name, 2 scalar, 3 opening brace, 4 closing brace, 5 anything else (an error)
_TOKEN = re.compile(
    rf"\s*(?:#[^\n]*\s*)*(?:([A-Za-z_]\w*)\s*(?::\s*({_SCALAR})|:?\s*([{{<]))|([}}>])|(\S))[ \t]*[;,]?"
)
_PIECE = re.compile(_QUOTED)
_ESCAPE = re.compile(rb"\\(?:([0-7]{1,3})|x([0-9a-fA-F]{1,2})|u([0-9a-fA-F]{4})|U([0-9a-fA-F]{8})|(.))",
                     re.DOTALL)
_SIMPLE_ESCAPES = {b"n": b"\n", b"t": b"\t", b"r": b"\r", b"\\": b"\\", b"'": b"'", b'"': b'"',
                   b"a": b"\a", b"b": b"\b", b"f": b"\f", b"v": b"\v", b"?": b"?"}
_LIST_ITEM = re.compile(rf"\s*({_QUOTED}|[^\s,\]\"']+)\s*,?")


class _Many(list):  # type: ignore[type-arg]
    """Values of a `field: [a, b]` list."""


def _scalar(text: str, kind: str, repeated: bool) -> Any:
    """Decode one scalar (or a [..] list of them) for a field of `kind`."""
    if text[0] == "[":
        if not repeated:
            raise ValueError(f"a list {text[:40]!r} given for a single value")
        return _Many(_scalar(item, kind, False) for item in _LIST_ITEM.findall(text[1:-1]))
    if kind is S:
        return unquote(text).decode("utf-8", "surrogateescape")
    if kind is B:
        return unquote(text)
    if kind is I:
        return _parse_int(text)
    if kind is F:
        return _parse_float(text)
    if kind is O:
        if text in ("true", "True", "t", "1"):
            return True
        if text in ("false", "False", "f", "0"):
            return False
        raise ValueError(f"expected true or false, found {text!r}")
    if kind is E:
        if text[0] in "-0123456789":
            number = _parse_int(text)
            return DATA_TYPE_NAMES.get(number, str(number))
        return _identifier(text)
    if kind is V:
        if text[0] in "-0123456789":
            number = _parse_int(text)
            return LIST_VAL_TYPES.get(number, str(number))
        return _identifier(text)
    raise ValueError(f"unexpected value {text[:40]!r}")


def _identifier(text: str) -> str:
    if not re.fullmatch(r"[A-Za-z_]\w*", text):
        raise ValueError(f"expected an enum name, found {text[:40]!r}")
    return text


def _parse_int(text: str) -> int:
    if text[:1] in "\"'":
        raise ValueError(f"expected an integer, found {text[:40]!r}")
    sign = -1 if text.startswith("-") else 1
    body = text.lstrip("+-")
    if body.lower().startswith("0x"):
        return sign * int(body[2:], 16)
    if len(body) > 1 and body.startswith("0") and body.isascii() and body.isdigit():
        return sign * int(body, 8)
    try:
        return sign * int(body)
    except ValueError:
        raise ValueError(f"expected an integer, found {text[:40]!r}") from None


def _parse_float(text: str) -> float:
    lower = text.lower()
    if lower.lstrip("+-") in ("inf", "infinity", "inff", "infinityf"):
        return -math.inf if lower.startswith("-") else math.inf
    if lower.lstrip("+-") in ("nan", "nanf"):
        return math.nan
    if lower.endswith("f") and not lower.startswith(("0x", "-0x")):
        lower = lower[:-1]
    try:
        return float(lower)
    except ValueError:
        raise ValueError(f"expected a number, found {text[:40]!r}") from None


def unquote(text: str) -> bytes:
    """The bytes of one or more adjacent quoted strings, C escapes decoded."""
    if text[:1] not in "\"'":
        raise ValueError(f"expected a quoted string, found {text[:40]!r}")
    parts = []
    for piece in _PIECE.findall(text):
        body = piece[1:-1].encode("utf-8", "surrogateescape")
        if b"\\" in body:
            body = _ESCAPE.sub(_unescape_one, body)
        parts.append(body)
    return b"".join(parts)


def _unescape_one(match: re.Match[bytes]) -> bytes:
    octal, hexa, u4, u8, other = match.groups()
    if octal is not None:
        return bytes([int(octal, 8) & 0xFF])
    if hexa is not None:
        return bytes([int(hexa, 16)])
    if u4 is not None or u8 is not None:
        return chr(int(u4 or u8, 16)).encode("utf-8", "surrogatepass")
    simple = _SIMPLE_ESCAPES.get(other)
    if simple is None:
        raise ValueError(f"unknown escape \\{other.decode('latin-1')}")
    return simple


def unexpected(char: str) -> str:
    """What a stray character is, for an error line: a byte that is not UTF-8 is named as a byte."""
    if "\udc80" <= char <= "\udcff":  # surrogateescape: the file's byte was not UTF-8
        return f"unexpected byte 0x{ord(char) - 0xDC00:02x} (not UTF-8 text: damaged, or not a text graph)"
    return f"unexpected {char!r}"
