"""The mixed-precision lists the simulation computes under (precision_tool/simulate/mix_precision.py)."""

from __future__ import annotations

import json

from precision_tool.formats.npu.mixlist import read_mixlist
from precision_tool.simulate.mix_precision import FLOAT16, FLOAT32, MixPolicy, policy_from_mixlist


def test_white_black_and_gray_as_cann_flags_them() -> None:
    policy = MixPolicy()
    assert policy.precision("MatMulV2", [FLOAT32]) == FLOAT16  # white: float16 whatever comes in
    assert policy.precision("BiasAddGrad", [FLOAT16]) == FLOAT32  # black: float32 whatever comes in
    assert policy.precision("Add", [FLOAT16, FLOAT32]) == FLOAT16  # gray: follows a float16 input
    assert policy.precision("Add", [FLOAT32]) == FLOAT32
    assert policy.precision("Add", []) == FLOAT32  # constants only: as written


def test_keep_origin_dtype_keeps_everything_in_float32() -> None:
    assert MixPolicy(mode="must_keep_origin_dtype").precision("MatMulV2", [FLOAT16]) == FLOAT32


def test_a_modify_mixlist_moves_op_types_between_lists(tmp_path) -> None:
    path = tmp_path / "ops_info.json"
    path.write_text(json.dumps({"black-list": {"to-add": ["MatMulV2"], "to-remove": ["BiasAddGrad"]},
                                "white-list": {"to-add": ["Softmax"]}}))
    policy = policy_from_mixlist(read_mixlist(path))
    assert policy.list_of("MatMulV2") == "black"
    assert policy.list_of("BiasAddGrad") == "gray"  # removed and added nowhere: gray
    assert policy.list_of("Softmax") == "white"
    assert policy.source == str(path)
    assert policy_from_mixlist(None, keep_fp32=["Conv2D"]).list_of("Conv2D") == "black"
