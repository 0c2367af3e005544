"""What the process looked like when an adapter module was imported, for tests (not part of the adapter).

The real `npu_bridge.npu_init` and `npu_device` import TensorFlow, and `npu_device` reads NPU_DUMP_GRAPH at
import: whatever a training script (or `train`'s child) sets must already be set by then. With
$NPU_STANDIN_IMPORT_RECORD naming a file, each stand-in module appends one JSON line there at import."""

import json
import os
import sys

WATCHED = ("NPU_DUMP_GRAPH", "DUMP_GE_GRAPH", "DUMP_GRAPH_LEVEL", "DUMP_GRAPH_PATH", "TF_ENABLE_ONEDNN_OPTS")


def record(module: str) -> None:
    path = os.environ.get("NPU_STANDIN_IMPORT_RECORD")
    if not path:
        return
    entry = {"module": module,
             # tf_config's set-up (oneDNN off, graph-dump variables), which train's child imports alone
             "tf_setup_imported": "precision_tool.capture.tf_setup" in sys.modules,
             "tensorflow_imported": "tensorflow" in sys.modules,
             "env": {name: os.environ.get(name) for name in WATCHED}}
    with open(path, "a", encoding="utf-8") as out:
        out.write(json.dumps(entry) + "\n")
