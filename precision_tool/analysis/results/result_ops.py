"""A result's ops as summaries show them: each op's input and output cosines (results.py digests a result's rows
into these ops' plain fields, OpFields, and summarises them)."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Iterable, Iterator, Sequence, overload

if TYPE_CHECKING:
    from precision_tool.analysis.graphs.op_labels import OpLabels

NAN_DATA_TEXTS = ("nan", "-nan", "inf", "-inf")
"""How a metric computed over NaN/Inf data is printed (not computed at all is 'NaN')."""


@dataclass  # not frozen: made once per tensor, and a frozen one costs four times as much to make
class TensorCosine:
    tensor_index: str
    cosine: float
    """NaN when not computed, or when the data holds NaN/Inf (then `nan_data`)."""
    nan_data: bool = False
    """The cosine is nan because the tensors hold NaN/Inf: it fails the threshold, it is not 'unknown'."""
    max_abs_error: float = math.nan
    """MaxAbsoluteError (0 when the two sides hold the same numbers); NaN when not computed."""

    def fails(self, threshold: float) -> bool:
        return self.nan_data or (not math.isnan(self.cosine) and self.cosine <= threshold)


@dataclass  # not frozen: made once per tensor, and a frozen one costs four times as much to make
class OpResult:
    """One op (or fusion group) of a result, in graph order."""

    index: str
    npu_op: str
    golden_op: str
    op_type: str
    inputs: tuple[TensorCosine, ...]
    outputs: tuple[TensorCosine, ...]
    reasons: tuple[str, ...] = ()
    overflowed: tuple[str, ...] = ()
    """TensorIndex of each row whose OverFlow is YES ('<op>' for the op's row without a tensor)."""

    def failing_outputs(self, threshold: float) -> list[TensorCosine]:
        """Outputs at or below the threshold, and outputs whose data holds NaN/Inf."""
        return [t for t in self.outputs if t.fails(threshold)]

    def failing_inputs(self, threshold: float) -> list[TensorCosine]:
        return [t for t in self.inputs if t.fails(threshold)]

    @property
    def nan_data_outputs(self) -> list[TensorCosine]:
        return [t for t in self.outputs if t.nan_data]


OpFields = tuple[str, str, str, str, tuple, tuple, tuple, tuple]  # type: ignore[type-arg]
"""OpResult's fields, each tensor as TensorCosine's: plain tuples, which cross processes ten times faster."""


def op_results(ops: Iterable[OpFields], labels: "OpLabels | None" = None) -> list[OpResult]:
    """The OpResults of a digest's ops, under their graph id and name when `labels` has them."""
    out: list[OpResult] = []
    for index, npu_op, golden_op, op_type, inputs, outputs, reasons, overflowed in ops:
        label = labels.get(npu_op) if labels is not None else None
        if label is None:
            if labels is not None:
                # not a graph op (a group's NaN row naming several ops): its number is the CSV's, not a graph id
                index = f"Index {index}"
            out.append(OpResult(index, npu_op, golden_op, op_type, tuple([TensorCosine(*t) for t in inputs]),
                                tuple([TensorCosine(*t) for t in outputs]), reasons, overflowed))
            continue
        # the tensors of the op itself are named after the label too
        prefix, name = npu_op + ":", label.name
        cut = len(npu_op)
        out.append(OpResult(
            label.index, name, name if golden_op == npu_op else golden_op, op_type,
            tuple([TensorCosine(name + t[0][cut:] if t[0].startswith(prefix) else t[0], *t[1:]) for t in inputs]),
            tuple([TensorCosine(name + t[0][cut:] if t[0].startswith(prefix) else t[0], *t[1:]) for t in outputs]),
            reasons, overflowed))
    return out


class OpSequence(Sequence[OpResult]):
    """A result's ops in graph order, each OpResult made from its digest fields (OpFields) when first asked for:
    a summary of 20,000 ops names a few of them, and making them all cost `vc` a tenth of its time (in the
    parent, while the workers needed both cores). Reads, compares and pickles as the tuple of its OpResults."""

    def __init__(self, fields: Sequence[OpFields], labels: "OpLabels | None" = None) -> None:
        self.fields = fields
        """The ops' plain fields, in order (what summaries count without making the ops)."""
        self._labels = labels
        self._made: list[OpResult | None] = [None] * len(fields)
        self._missing = len(fields)

    def __len__(self) -> int:
        return len(self.fields)

    @overload
    def __getitem__(self, item: int) -> OpResult: ...

    @overload
    def __getitem__(self, item: slice) -> tuple[OpResult, ...]: ...

    def __getitem__(self, item: int | slice) -> OpResult | tuple[OpResult, ...]:
        if isinstance(item, slice):
            return tuple(self._all()[item])  # type: ignore[arg-type]
        made = self._made[item]
        if made is None:
            made = self._made[item] = op_results((self.fields[item],), self._labels)[0]
            self._missing -= 1
        return made

    def __iter__(self) -> Iterator[OpResult]:
        return iter(self._all())  # type: ignore[arg-type]

    def _all(self) -> list[OpResult | None]:
        made = self._made
        if self._missing:  # every op not made yet, in one pass
            missing = [at for at, op in enumerate(made) if op is None]
            for at, op in zip(missing, op_results([self.fields[at] for at in missing], self._labels)):
                made[at] = op
            self._missing = 0
        return made

    def __eq__(self, other: object) -> bool:
        if isinstance(other, (OpSequence, tuple)):
            return tuple(self) == tuple(other)
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]  (as a tuple of OpResults: they are mutable)

    def __add__(self, other: object) -> tuple[OpResult, ...]:
        if isinstance(other, (OpSequence, tuple)):
            return tuple(self) + tuple(other)
        return NotImplemented

    def __radd__(self, other: object) -> tuple[OpResult, ...]:
        if isinstance(other, tuple):
            return other + tuple(self)
        return NotImplemented

    def __repr__(self) -> str:
        return repr(tuple(self))

    def __reduce__(self) -> tuple[Any, ...]:
        return tuple, (tuple(self),)
