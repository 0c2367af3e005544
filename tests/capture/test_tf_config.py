"""tf_config on a CPU-only machine (no npu_bridge), in fresh processes: what importing it sets (environment,
grappler, seeds, op determinism), the session map it still builds, and the loss-scale callback on a real
Keras 3 mixed-precision model. The maps against the adapter stand-in: tests/capture/test_standin_maps.py."""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys

import numpy as np

from tests.analysis.golden_extract.conftest import ROOT, tf_env

PROBE = r"""
import json, os, random, sys
import numpy as np
import precision_tool.tf_config as c
import tensorflow as tf
from tensorflow.python.eager import context
from precision_tool.errors import ConfigError, UsageError
drawn = {"python": random.random(), "numpy": float(np.random.rand())}
config = c.session_dump_config(None, action="overflow|fusion_off")
p = config.graph_options.rewrite_options.custom_optimizers[0].parameter_map
errors = []
for call in (lambda: c.parse_actions("dump|bogus"), lambda: c.estimator_dump_config("dump"),
             lambda: c.session_dump_config(None, "dump|overflow"), lambda: c.seed_everything(-1),
             lambda: c.NpuPrintLossScaleCallBack(None, every=0)):
    try:
        call()
    except (ConfigError, UsageError) as exc:
        errors.append(f"{type(exc).__name__}: {exc}")

import keras
keras.mixed_precision.set_global_policy("mixed_float16")
model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(3), keras.layers.Activation("softmax", dtype="float32")])
model.compile(optimizer=keras.optimizers.SGD(0.1), loss="categorical_crossentropy")
x = np.random.rand(12, 4).astype("float32"); y = np.eye(3, dtype="float32")[np.arange(12) % 3]
model.fit(x, y, batch_size=4, epochs=1, verbose=0, callbacks=[c.NpuPrintLossScaleCallBack(model.optimizer, every=2)])
bare = c.NpuPrintLossScaleCallBack(keras.optimizers.SGD()).line(5)
print(json.dumps({
    "params": {k: str(v).strip() for k, v in p.items()}, "remapping": config.graph_options.rewrite_options.remapping,
    "env": {k: os.environ.get(k) for k in ("TF_ENABLE_ONEDNN_OPTS", "DUMP_GE_GRAPH", "DUMP_GRAPH_LEVEL",
                                           "DUMP_GRAPH_PATH", "NPU_DUMP_GRAPH", "PYTHONHASHSEED")},
    "meta_optimizer_off": tf.config.optimizer.get_experimental_options().get("disable_meta_optimizer"),
    "seeds": {"eager": context.global_seed(), "graph": tf.compat.v1.get_default_graph().seed, **drawn},
    "determinism": __import__("tensorflow.python.framework.config", fromlist=["x"]).is_op_determinism_enabled(),
    "optimizer": type(model.optimizer).__name__, "bare": bare, "errors": errors,
}))
"""

LATE = r"""
import warnings, tensorflow as tf
warnings.simplefilter("always")
import precision_tool.tf_config as c
print(__import__("tensorflow.python.framework.config", fromlist=["x"]).is_op_determinism_enabled(), tf.compat.v1.get_default_graph().seed)
"""


def _run(workspace, code, **extra):
    env = {**tf_env(workspace), **extra}
    for name in ("PRECISION_TOOL_SEED", "PRECISION_TOOL_OP_DETERMINISM", "PRECISION_TOOL_DUMP",
                 "PRECISION_TOOL_OVERFLOW", "DUMP_GE_GRAPH", "DUMP_GRAPH_LEVEL", "DUMP_GRAPH_PATH", "NPU_DUMP_GRAPH"):
        if name not in extra:
            env.pop(name, None)
    proc = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=300, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return proc


def test_import_session_map_and_loss_scale_callback(tmp_path):
    ws = tmp_path / "ws"
    proc = _run(ws, PROBE, PRECISION_TOOL_SEED="7", PRECISION_TOOL_OP_DETERMINISM="True")
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    d = ws / "npu" / "debug_0"
    assert out["params"] == {
        "use_off_line": "b: true", "debug_dir": f's: "{d}"', "enable_dump_debug": "b: true",
        "dump_debug_mode": 's: "all"', "dump_path": f's: "{ws / "overflow" / "dump"}"', "op_debug_level": "i: 4",
        "fusion_switch_file": f's: "{ws / "fusion" / "fusion_off.cfg"}"'}
    assert out["remapping"] == 2  # RewriterConfig.OFF
    assert (ws / "overflow" / "dump").is_dir() and (d / "graph").is_dir() and not (d / "dump").exists()
    assert json.loads((ws / "fusion" / "fusion_off.cfg").read_text())["Switch"]["UBFusion"] == {"ALL": "off"}
    assert out["env"] == {"TF_ENABLE_ONEDNN_OPTS": "0", "DUMP_GE_GRAPH": "2", "DUMP_GRAPH_LEVEL": "3",
                          "DUMP_GRAPH_PATH": str(d / "graph"), "NPU_DUMP_GRAPH": "true", "PYTHONHASHSEED": "7"}
    assert out["meta_optimizer_off"] is True  # no npu_bridge: a golden run keeps every op
    # PRECISION_TOOL_SEED=7: python and numpy draw what a fresh generator seeded with 7 draws
    assert out["seeds"] == {"eager": 7, "graph": 7, "python": random.Random(7).random(),
                            "numpy": float(np.random.RandomState(7).rand())}
    assert out["determinism"] is True  # forced on by PRECISION_TOOL_OP_DETERMINISM=True
    errors = out["errors"]
    assert len(errors) == 5 and all("\n" not in e for e in errors)
    assert "unknown action bogus" in errors[0] and "npu_bridge" in errors[1] and "E10001" in errors[2]
    assert "seed must be an integer" in errors[3] and "every must be a positive" in errors[4]
    # Keras 3 wraps the optimizer for mixed_float16; it has a loss scale but no finite flag: n/a, no crash
    assert out["optimizer"] == "LossScaleOptimizer"
    lines = [line for line in proc.stdout.splitlines() if line.startswith("PrecisionTool: step")]
    assert [line.split(",")[0] for line in lines] == ["PrecisionTool: step 0", "PrecisionTool: step 2"]
    assert all("loss_scale=32768.000, last_step_finite=n/a, loss=" in line for line in lines), lines
    assert out["bare"] == "PrecisionTool: step 5, loss_scale=n/a, last_step_finite=n/a"


def test_importing_after_tensorflow_warns_and_defaults(tmp_path):
    proc = _run(tmp_path, LATE)
    assert "imported after tensorflow" in proc.stderr and "Conv2D" in proc.stderr
    # the original's seed 2022; no GPU here, so op determinism stays off (it would rewrite the loss graph)
    assert proc.stdout.split() == ["False", "2022"]


def test_bad_seed_is_one_line(tmp_path):
    env = {**tf_env(tmp_path), "PRECISION_TOOL_SEED": "abc"}
    proc = subprocess.run([sys.executable, "-c", "import precision_tool.tf_config"], env=env, capture_output=True,
                          text=True, timeout=300, cwd=ROOT)
    assert proc.returncode != 0
    assert proc.stderr.strip().splitlines()[-1] == (
        "precision_tool.errors.ConfigError: environment variable PRECISION_TOOL_SEED='abc' is not an integer; "
        "give a seed such as 2022, or unset it")
    assert os.path.exists(ROOT)


FOLD_PROBE = r"""
import sys
import precision_tool.tf_config as c
import tensorflow as tf
v1 = tf.compat.v1
v1.disable_eager_execution()
x = v1.placeholder(tf.float32, [4], name="x")
y = tf.multiply(x, tf.add(tf.constant(2.0), tf.constant(3.0), name="five"), name="y")
configs = {"golden": lambda: c.golden_session_config(), "none": lambda: None}
sess = v1.Session(config=configs[sys.argv[1]]())
c.sess_dump(sess).run(y, {x: [1.0, 2.0, 3.0, 4.0]})
"""


def test_a_golden_session_runs_as_written_and_any_other_is_said_to_be_rewritten(tmp_path) -> None:
    """A config-less session gets tf_config's grappler switch, and then TensorFlow's classic optimizer folds
    the constant `five` into a new name (seen on TF 1.15 and 2.x): sess_dump says so in one line. With
    golden_session_config `five` is dumped under its own name, and nothing is said."""
    from tests.conftest import run_cli

    seen = {}
    for mode in ("golden", "none"):
        ws = tmp_path / mode
        proc = subprocess.run([sys.executable, "-c", FOLD_PROBE, mode], env=tf_env(ws), capture_output=True,
                              text=True, timeout=300)
        assert proc.returncode == 0, proc.stderr[-2000:]
        assert run_cli("tf_dump", data=ws).status == 0
        names = {path.name.split(".")[0] for path in (ws / "tf" / "dump").glob("*.npy")}
        said = [line for line in proc.stderr.splitlines() if "golden_session_config" in line]
        seen[mode] = (names, said)
    names, said = seen["golden"]
    assert {"five", "y"} <= names and said == []
    names, said = seen["none"]
    assert "five" not in names and any(name.startswith("five__") for name in names)  # five/_0__cf__0
    assert len(said) == 1 and said[0].startswith("[PrecisionTool] sess_dump:")
