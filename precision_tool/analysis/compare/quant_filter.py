"""Which ops msaccucmp's quant filter drops from a quantized graph (its vector_cmp quant_filter, as facts).

Ops are classed by name (and original names): quantize, dequantize, both, or normal. Walking the graph in
op-id order, an op is "in a pair" when one of its inputs comes from an output typed quantize (an int8
output of a quantize op) or middle (any output of an op in a pair); its outputs then stay middle unless
it is a dequantize op with an fp16 output. Ops in a pair whose outputs are not all dequantize are dropped
by msaccucmp. We compare them (their rows are only NaN-free where goldens exist), but the reasons
msaccucmp writes for a group depend on which of its ops were dropped, so the set is computed here.
"""

from __future__ import annotations

import re
from typing import Any, Sequence

QUANT_NAME = re.compile(r"_quant_layer|/AscendQuant|/AscendWeightQuant|\.quant|\.weight_quant")
DEQUANT_NAME = re.compile(r"_dequant_layer|_anti_quant_layer|/AscendDequant|/AntiQuant|\.dequant|\.anti_quant")

NORMAL, MIDDLE, QUANT, DEQUANT, BOTH = 0, 1, 2, 3, 5


def name_type(op: Any) -> int:
    """NORMAL, QUANT, DEQUANT or BOTH, from the op's name, else its original names."""
    originals = "".join(op.original_op_names or [])
    kind = NORMAL
    if QUANT_NAME.search(op.name) or QUANT_NAME.search(originals):
        kind += QUANT
    if DEQUANT_NAME.search(op.name) or DEQUANT_NAME.search(originals):
        kind += DEQUANT
    return kind


def _output_type(kind: int, in_pairs: bool, data_type: str) -> int:
    if kind == QUANT and data_type == "DT_INT8":
        return QUANT
    if kind == DEQUANT and data_type == "DT_FLOAT16":
        return DEQUANT
    if kind == BOTH and data_type in ("DT_INT8", "DT_FLOAT16"):
        return QUANT if data_type == "DT_INT8" else DEQUANT
    return MIDDLE if in_pairs else NORMAL  # a normal op, or a quant-named op without the matching type


def quant_filtered(ops: Sequence[Any]) -> set[str]:
    """Names of the ops msaccucmp's quant filter drops."""
    from precision_tool.formats.ge.ge_model import split_input

    out_types: dict[str, list[int]] = {}
    dropped: set[str] = set()
    for op in sorted(ops, key=lambda o: int(o.id or 0)):
        in_pairs = False
        for text in op.inputs:
            if ":" not in text:
                continue
            producer, index = split_input(text)
            types = out_types.get(producer)
            if index >= 0 and types is not None and index < len(types) and types[index] in (QUANT, MIDDLE):
                in_pairs = True
                break
        kind = name_type(op)
        types = [_output_type(kind, in_pairs, desc.dtype or "") for desc in op.output_descs]
        out_types[op.name] = types
        if in_pairs and not all(t == DEQUANT for t in types):
            dropped.add(op.name)
    return dropped
