"""The environment of a TensorFlow child process (the demo's golden run, `train`'s replays).

Why a child at all: the shell never imports TensorFlow (start-up stays fast, a TF crash is not ours).
The child must import this very package (PYTHONPATH), write into the workspace the parent chose
(PRECISION_DATA, no user config.py redirecting it), and build the graph as written (no oneDNN fusion,
which would drop tensors like conv/Conv2D:0 from the golden dump).
"""

from __future__ import annotations

import os
from pathlib import Path

PACKAGE_ROOT = Path(__file__).resolve().parents[1]  # the folder holding precision_tool/


def tf_child_env(workspace_root: Path) -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(PACKAGE_ROOT), env.get("PYTHONPATH", "")) if p)
    env["PRECISION_DATA"] = str(Path(workspace_root).absolute())  # the child may run elsewhere
    env.pop("PRECISION_TOOL_CONFIG", None)
    env.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    env["TF_ENABLE_ONEDNN_OPTS"] = "0"
    return env
