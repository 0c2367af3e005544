"""How one kind of small NPU tensor becomes the values the comparison measures, worked out once per kind.

A network's small tensors come in a few kinds: the same data type, device layout, device and original
shape, golden layout and golden shape, thousands of times over. For each kind the conversion to the
golden layout (golden_layout.to_golden_layout, the one the comparison uses) is run once on the element
numbers 0..n-1: what comes out is where each compared value sits in the stored tensor. Every tensor of
that kind is then one gather from the dump's bytes: the same values in the same places (a conversion
only moves elements), for a fraction of reading and converting each tensor on its own, which cost about
twelve microseconds a tensor. A kind the conversion refuses, or a type that is not a plain number
(bf16, fp8, bits, complex32), gets no recipe: its tensors take the general way and its error row.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from precision_tool.analysis.compare.engine.golden_layout import to_golden_layout
from precision_tool.analysis.compare.matching import TensorMatch
from precision_tool.errors import PrecisionToolError
from precision_tool.formats.npu.dump_types import plain_type_name

RECIPE_ELEMENTS = 1 << 16
"""Tensors of up to this many elements follow a recipe; a bigger one is converted on its own (its index
would cost as much memory as the tensor and save little time)."""
KEPT_RECIPES = 1024
"""Kinds remembered at once (a network has tens; the cache starts afresh past this)."""
_MAX_RANK = 32  # as npu_dump.read_tensor: a header claiming more is damaged (and read the general way)


@dataclass(frozen=True)
class Recipe:
    """What a tensor of one kind needs: read `count` elements of `dtype` at the tensor's offset, take
    `index` of them (None: all, in stored order), and call the result `shape`."""

    dtype: np.dtype
    count: int
    index: np.ndarray | None
    shape: tuple[int, ...]

    def values(self, data: bytes, offset: int) -> np.ndarray:
        """The compared values (flat) of the tensor stored at `offset` in the dump's bytes `data`."""
        stored = np.frombuffer(data, self.dtype, self.count, offset)
        return stored if self.index is None else stored[self.index]


class Recipes:
    """The recipes of one worker, by kind."""

    def __init__(self) -> None:
        self._kinds: dict[tuple[Any, ...], Recipe | None] = {}

    def get(self, header: Any, match: TensorMatch, npu_format: str, layout: str, convert: bool,
            golden_shape: tuple[int, ...], dump_path: Path) -> Recipe | None:
        """The recipe of `header`'s kind, or None: read and convert this tensor the general way."""
        golden = match.golden
        key = (header.data_type, header.format, header.shape, header.original_shape, header.size,
               header.sub_format, npu_format, layout, convert, golden_shape,
               None if golden is None else (golden.layout, golden.origin_shape, golden.guess_layout))
        try:
            return self._kinds[key]
        except KeyError:
            pass
        if len(self._kinds) >= KEPT_RECIPES:
            self._kinds.clear()
        recipe = self._kinds[key] = _work_out(header, match, npu_format, layout, convert, golden_shape, dump_path)
        return recipe


def _work_out(header: Any, match: TensorMatch, npu_format: str, layout: str, convert: bool,
              golden_shape: tuple[int, ...], dump_path: Path) -> Recipe | None:
    name = plain_type_name(header.data_type)
    if name is None or name in ("bool", "complex64", "complex128"):
        return None  # bits, bf16/fp8, complex: the general way decodes and widens them
    shape = header.shape
    if len(shape) > _MAX_RANK or min(shape, default=0) < 0:
        return None
    dtype = np.dtype(name)
    count = header.element_count
    if not 0 < count <= RECIPE_ELEMENTS or count * dtype.itemsize > header.size:
        return None  # empty, big, or a block too small for its shape: the general way says what is wrong
    numbers = np.arange(count, dtype=np.intp).reshape(header.array_shape)
    if not convert:
        return Recipe(dtype, count, None, (count,))
    try:
        placed = to_golden_layout(numbers, npu_format, layout, header, match, golden_shape, dump_path)
    except (PrecisionToolError, ValueError):
        return None  # refused: the general way writes the row that says why
    index = np.ascontiguousarray(placed).reshape(-1)
    in_order = index.size == count and bool((index == numbers.reshape(-1)).all())
    return Recipe(dtype, count, None if in_order else index, tuple(placed.shape))
