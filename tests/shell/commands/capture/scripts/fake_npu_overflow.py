"""An NPU stand-in for npu_overflow: when PRECISION_TOOL_OVERFLOW=True it writes what the adapter writes on
an overflow (an Opdebug record and the overflowing op's dump, into overflow/dump/<time>/...), with our own
dump writer. `fake_npu_overflow.py N` exits with status N afterwards (an overflow often stops training)."""

import os
import sys
from pathlib import Path

import numpy as np

from precision_tool.formats.npu.dump_types import DataType
from precision_tool.formats.npu.npu_dump import dump_file_name
from precision_tool.formats.npu.npu_dump_write import TensorSpec, write_dump
from precision_tool.formats.npu.opdebug import new_layout_payload

print("fake NPU training step 0", flush=True)
if os.environ.get("PRECISION_TOOL_OVERFLOW") == "True":
    folder = Path(os.environ["PRECISION_DATA"]) / "overflow/dump/20240613150000/0/ge_default_1/1/0"
    folder.mkdir(parents=True)
    stamp = 1_718_260_600_000_100
    x = np.array([60000.0, 1.0, -2.0, 3.0], np.float16)
    write_dump(folder / dump_file_name("Add", "net/add_1", 31, 2, stamp), op_name="net/add_1", dump_time_us=stamp,
               inputs=[TensorSpec(x), TensorSpec(x)], outputs=[TensorSpec(np.array([np.inf, 2, -4, 6], np.float16))])
    payload = new_layout_payload(unit="AIC", stream_id=2, task_id=31, status=0x20)
    write_dump(folder / f"Opdebug.Node_OpDebug.31.2.{stamp + 50}", op_name="Node_OpDebug", inputs=[],
               outputs=[TensorSpec(np.frombuffer(payload, np.uint8).copy(), data_type=DataType.UINT8)])
    print("fake NPU: overflow recorded", flush=True)
sys.exit(int(sys.argv[1]) if len(sys.argv) > 1 else 0)
