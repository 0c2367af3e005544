"""How a tensor shape is written everywhere the tool shows or stores one: `[8,2,8,8,16]`.

Its own module, free of numpy, so the renderers of light commands (`ls`, `ls dump`) can use it without
loading numpy at start."""

from __future__ import annotations

from typing import Sequence


def shape_text(shape: Sequence[int]) -> str:
    return "[" + ",".join(str(int(d)) for d in shape) + "]"
