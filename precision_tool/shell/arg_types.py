"""Argument types shared by command parsers; argparse turns their errors into one usage line."""

from __future__ import annotations

import argparse


def _number(text: str, kind: type) -> float:
    try:
        return kind(text)  # type: ignore[no-any-return]
    except ValueError:
        what = "a whole number" if kind is int else "a number"
        raise argparse.ArgumentTypeError(f"{text!r} is not {what}") from None


def positive_int(text: str) -> int:
    value = int(_number(text, int))
    if value < 1:
        raise argparse.ArgumentTypeError("must be at least 1")
    return value


def non_negative_float(text: str) -> float:
    value = float(_number(text, float))
    if value < 0:
        raise argparse.ArgumentTypeError("must not be negative")
    return value


def cosine_threshold(text: str) -> float:
    value = float(_number(text, float))
    if not -1.0 <= value <= 1.0:
        raise argparse.ArgumentTypeError("a cosine threshold lies in [-1, 1]")
    return value


def non_negative_int(text: str) -> int:
    value = int(_number(text, int))
    if value < 0:
        raise argparse.ArgumentTypeError("must not be negative")
    return value


def port_number(text: str) -> int:
    """A TCP port, 0 (any free one) to 65535."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a port number") from None
    if not 0 <= value <= 65535:
        raise argparse.ArgumentTypeError("a port lies in 0..65535")
    return value
