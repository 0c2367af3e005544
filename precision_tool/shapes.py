"""How a tensor shape is written everywhere the tool shows or stores one: `[8,2,8,8,16]`.

Its own module, free of numpy, so the renderers of light commands (`ls`, `ls dump`) can use it without
loading numpy at start."""

from __future__ import annotations

from typing import Sequence


def shape_text(shape: Sequence[int]) -> str:
    key = shape if isinstance(shape, tuple) else tuple(shape)
    text = _SHAPE_TEXTS.get(key)
    if text is None:
        text = "[" + ",".join(str(int(d)) for d in shape) + "]"
        if len(_SHAPE_TEXTS) < 65536:  # a network has a few hundred distinct shapes; a hostile one, no more
            _SHAPE_TEXTS[key] = text
    return text


_SHAPE_TEXTS: dict[tuple, str] = {}
"""Shapes already written (a CSV row writes two; most networks repeat a few hundred shapes)."""
