"""Run by the reference tool's own Python: msaccucmp's metrics for every pair listed in a JSON file.

Usage: <reference python> reference_metrics.py MSACCUCMP_DIR CASES.json OUT.json
CASES.json: [{"npu": "a.npy", "golden": "b.npy", "shape": [..], "npu_file": "..", "golden_file": ".."}]
"""

import json
import sys

sys.path.insert(0, sys.argv[1])

import numpy as np  # noqa: E402
from algorithm_manager.algorithm_manager import AlgorithmManager  # noqa: E402
from cmp_utils import utils  # noqa: E402

manager = AlgorithmManager("", "all", "")
results = []
for case in json.load(open(sys.argv[2])):
    x = np.load(case["npu"])
    y = np.load(case["golden"])
    values, messages = manager.compare(
        x.flatten(), y.flatten(),
        {"my_output_dump_file": case["npu_file"], "ground_truth_dump_file": case["golden_file"],
         "shape_type": utils.get_shape_type(case["shape"])},
    )
    results.append({"values": values, "reasons": messages})
json.dump({"names": manager.get_result_title(), "results": results}, open(sys.argv[3], "w"))
