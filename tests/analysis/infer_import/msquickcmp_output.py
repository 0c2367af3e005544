"""An msquickcmp (msit debug compare) output folder, laid out as msquickcmp writes it (docs/infer.md),
from real parts: msit's own om model JSON (tests/fixtures/real), NPU dumps serialized with Ascend's dump
proto and ONNX-named golden .npy (tests/tools/real_dumps.om_model_case), and the result CSV msaccucmp's
columns make (written by our `vc`, which agrees with msaccucmp row for row on this model:
tests/analysis/compare/test_real_graphs.py) plus the three columns msquickcmp appends (IsNpuOps, IsOutputNode,
IsPrecisionError; msit cmp_process.py `_process_is_npu_and_is_precision_error_ops`). See SOURCES.md.
"""

from __future__ import annotations

import csv
import json
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

import numpy as np

from tests.tools import real_dumps

RUN_TIME = "20240101120000"  # {output}/{time}: the run folder
DUMP_TIME = "20240101120001"  # dump_data/npu/{time}: the acl dump_path's time folder
RESULT_TIME = "20240101120005"
OM_MODEL = "sub_model"  # the om file's name: dump_data/npu/<time>/0/<om model>/1/0, model/<om model>.json
NET_OUTPUT_DIR = "2024_01_01-12_00_02"  # ais_bench's output folder for the net outputs

# msquickcmp's thresholds for IsPrecisionError (cmp_process.py)
_LIMITS = {"RelativeEuclideanDistance": 0.05, "KullbackLeiblerDivergence": 0.005, "RootMeanSquareError": 1.0,
           "MeanRelativeError": 1.0}


@dataclass
class MsQuickCmpOutput:
    output: Path  # what the user passed to msquickcmp -o
    run: Path  # output/<time>
    result_csv: Path
    dumped: list[str]


def build(pb2: Any, where: Path, cli: Callable[..., Any]) -> MsQuickCmpOutput:
    """The NPU side overflows as a device would (om_model_case(overflow=True)): an inf after the boxes'
    Cast, 65504 in the Concat, a NaN in the Gather, so the result has abnormal ops to show."""
    scratch = where / "scratch" / "precision_data"
    case = real_dumps.om_model_case(pb2, scratch, overflow=True)
    result = cli("vc", "--backend", "native", "-j", "1", "-lt", str(case.dump_dir), "-rt", str(case.golden_dir),
                 "-g", str(case.graph), data=case.root)
    assert result.status == 0, result.out + result.err
    (ours,) = sorted((case.root / "temp" / "vector_compare").glob("*/result_*.csv"))

    output = where / "msquickcmp_out"
    run = output / RUN_TIME
    npu = run / "dump_data" / "npu"
    dump_dir = npu / DUMP_TIME / "0" / OM_MODEL / "1" / "0"
    shutil.copytree(case.dump_dir, dump_dir)
    (npu / "acl.json").write_text(json.dumps({"dump": {"dump_path": str(npu), "dump_mode": "all",
                                                        "dump_list": [{"model_name": OM_MODEL}]}}))
    net_output = npu / NET_OUTPUT_DIR
    net_output.mkdir()
    outputs = np.zeros((100, 4), np.float32)
    outputs.tofile(net_output / f"{OM_MODEL}_output_0.bin")
    np.save(net_output / f"{OM_MODEL}_output_0.npy", outputs)
    (npu / f"{NET_OUTPUT_DIR}_summary.json").write_text("{}")
    onnx = run / "dump_data" / "onnx"
    shutil.copytree(case.golden_dir, onnx)
    # msquickcmp also dumps each node's inputs, named with an input_ prefix
    np.save(onnx / "input_trans_Cast_0.0.1704067200000500.npy", np.load(next(onnx.glob("boxes_all.0.*.npy"))))
    (run / "model").mkdir(parents=True)
    shutil.copyfile(real_dumps.OM_MODEL_JSON, run / "model" / f"{OM_MODEL}.json")
    (run / "input").mkdir()
    np.zeros((1000, 80, 4), np.float32).tofile(run / "input" / "input_0.bin")
    result_csv = run / f"result_{RESULT_TIME}.csv"
    append_msquickcmp_columns(ours, result_csv)
    return MsQuickCmpOutput(output, run, result_csv, case.dumped)


def append_msquickcmp_columns(source: Path, target: Path) -> None:
    """msaccucmp's CSV with msquickcmp's three columns appended, as cmp_process.py computes them."""
    with open(source, newline="") as handle:
        rows = list(csv.reader(handle))
    header = rows[0]
    col = {name: header.index(name) for name in ("GroundTruth", "CosineSimilarity", *_LIMITS)}
    header += ["IsNpuOps", "IsOutputNode", "IsPrecisionError"]
    for row in rows[1:]:
        row.append("YES" if row[col["GroundTruth"]] == "*" else "NO")
        row.append("NO")
        cosine = row[col["CosineSimilarity"]]
        if cosine.lower() == "nan":
            row.append("NO")
            continue
        bad = float(cosine) < 0.99 or any(float(row[col[n]]) > limit for n, limit in _LIMITS.items())
        row.append("YES" if bad else "NO")
    with open(target, "w", newline="") as handle:
        csv.writer(handle).writerows(rows)
