"""Which dtype each NPU op computes in under CANN's mixed precision, as the simulation decides it.

Under `precision_mode="allow_mix_precision"` every op type is on one of three lists, given by the
`precision_reduce` flag of its entry in CANN's operator information library:
- white (flag true): computes in float16 (float32 inputs are cast down);
- black (flag false): stays in float32 (float16 inputs are cast up);
- gray (no flag): follows its inputs: float16 when an input it computes from arrives in float16.
The user's `modify_mixlist` file moves op types between the lists (`formats/npu/mixlist.py` reads it).
`must_keep_origin_dtype` and `force_fp32` keep everything as written. docs/simulate.md has the table
with its sources.

A constant input does not decide a gray op's dtype: the compiler casts constants to what the op needs.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable

FLOAT16 = "float16"
FLOAT32 = "float32"

MIXED = "allow_mix_precision"
KEEP = "must_keep_origin_dtype"
MODES = (MIXED, KEEP, "force_fp32")

# precision_reduce flag "true" in CANN 8.1.RC1's aic-ascend910-ops-info.json (docs/simulate.md: sources)
WHITE = frozenset({
    "Conv2D", "Conv2DBackpropInput", "Conv2DBackpropInputD", "Conv2DBackpropFilter", "Conv2DBackpropFilterD",
    "MatMul", "MatMulV2", "BatchMatMul", "BatchMatMulV2", "ReluGradV2", "DepthwiseConv2D", "DynamicRNN",
})
# precision_reduce flag "false" in the same file: kept in float32
BLACK = frozenset({
    "BiasAddGrad", "SoftmaxGrad", "SoftmaxGradExt", "LogSoftmaxV2", "LogSoftmaxGrad", "SigmoidCrossEntropyWithLogits",
    "SigmoidCrossEntropyWithLogitsGrad", "Log", "Pow", "ReduceMeanD", "ReduceSum", "UnsortedSegmentSum",
    "UnsortedSegmentSumD", "ApplyMomentumD", "ApplyAdamD", "ApplyGradientDescent", "SparseApplyFtrl",
    "SparseApplyFtrlD", "SparseApplyAdagrad", "SparseApplyAdagradD", "L2Loss", "AdamApplyOne",
    "AdamApplyOneWithDecay", "SquareSumV1", "SquareSumAll",
})

# Op types of the NPU that work on the cube unit: float16 operands, float32 accumulation.
CUBE = frozenset({
    "Conv2D", "Conv2DBackpropInput", "Conv2DBackpropInputD", "Conv2DBackpropFilter", "Conv2DBackpropFilterD",
    "Conv3D", "DepthwiseConv2D", "DepthwiseConv2dNative", "MatMul", "MatMulV2", "BatchMatMul", "BatchMatMulV2",
})


@dataclass(frozen=True)
class MixPolicy:
    """The lists in force for one run: `mode`, and the white and black lists after the user's changes."""

    mode: str = MIXED
    white: frozenset[str] = WHITE
    black: frozenset[str] = BLACK
    source: str = "CANN's defaults"  # what changed the lists (a modify_mixlist path), for the run's notes

    def list_of(self, npu_type: str) -> str:
        if npu_type in self.black:
            return "black"
        if npu_type in self.white:
            return "white"
        return "gray"

    def precision(self, npu_type: str, float_inputs: Iterable[str]) -> str:
        """float16 or float32 for an op computing from inputs of the given dtypes (constants left out)."""
        if self.mode != MIXED:
            return FLOAT32
        which = self.list_of(npu_type)
        if which == "white":
            return FLOAT16
        if which == "black":
            return FLOAT32
        return FLOAT16 if FLOAT16 in set(float_inputs) else FLOAT32

    def with_changes(self, *, black_add: Iterable[str] = (), black_remove: Iterable[str] = (),
                     white_add: Iterable[str] = (), white_remove: Iterable[str] = (),
                     gray_add: Iterable[str] = (), source: str = "") -> "MixPolicy":
        """The lists after a modify_mixlist: an op added to one list leaves the others; removed from a
        list without being added elsewhere, it is gray."""
        black_add, white_add, gray_add = frozenset(black_add), frozenset(white_add), frozenset(gray_add)
        black = (self.black - frozenset(black_remove) - white_add - gray_add) | black_add
        white = (self.white - frozenset(white_remove) - black_add - gray_add) | white_add
        return MixPolicy(self.mode, white, black, source or self.source)


def policy_from_mixlist(mixlist: object | None, *, mode: str = MIXED, keep_fp32: Iterable[str] = ()) -> MixPolicy:
    """CANN's lists changed by a read `formats.npu.mixlist.Mixlist` (or None) and by `keep_fp32` (op types
    added to the black list, as `demo --fixed` does)."""
    policy = MixPolicy(mode=mode)
    if mixlist is not None:
        types = mixlist.types  # type: ignore[attr-defined]
        policy = policy.with_changes(black_add=types("black-list"), black_remove=types("black-list", "to-remove"),
                                     white_add=types("white-list"), white_remove=types("white-list", "to-remove"),
                                     gray_add=types("gray-list"), source=str(mixlist.path))  # type: ignore[attr-defined]
    keep = frozenset(keep_fp32)
    return policy.with_changes(black_add=keep) if keep else policy
