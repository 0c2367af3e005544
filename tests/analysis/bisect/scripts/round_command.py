"""A training command for `bisect precision "python3 round_command.py"` tests: it fails the way a training
run stops on a NaN loss (exit 3, "loss is NaN") while MatMulV2 computes in float16, and another way (exit 4,
an out-of-memory line) once the round's list keeps MatMulV2 in float32, so the search must stop there.
It reads the round's list from $PRECISION_TOOL_MODIFY_MIXLIST, as tf_config's NPU configs do."""

import json
import os
import sys

listed = json.load(open(os.environ["PRECISION_TOOL_MODIFY_MIXLIST"], encoding="utf-8"))
kept = listed.get("black-list", {}).get("to-add", [])
if os.environ.get("PRECISION_TOOL_DUMP") != "True":
    print("round_command: PRECISION_TOOL_DUMP is not True", file=sys.stderr)
    sys.exit(2)
if "MatMulV2" in kept:
    print("RuntimeError: device out of memory", file=sys.stderr)
    sys.exit(4)
print("ERROR: loss is NaN at step 0", file=sys.stderr)
sys.exit(3)
