"""tf_dump speed: ours vs the legacy route (offline_analyzer + pexpect, one `pt` per tensor) vs DebugDumpDir.

Makes a tfdbg v1 run of >= 5,000 tensors with real TensorFlow (a TF1 graph of many small ops, dumped by
precision_tool.tf_config.sess_dump) in a temp dir, then extracts every tensor three ways:
  ours    `python3 precision_tool/cli.py tf_dump` end to end (process start included)
  legacy  what the original tool does: start TF's offline_analyzer under pexpect, then one
          `pt NODE:SLOT -n 0 -w FILE.npy` command per tensor. Only a sample of tensors is timed and the
          per-tensor cost extrapolated to the whole run (said so in the output); start-up is measured.
  tfdbg   TensorFlow's own DebugDumpDir: load the run, get_tensor + np.save for each tensor.
usage: python3 benchmarks/bench_tf_dump.py [--ops 2600] [--sample 60]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

MAKE_DUMP = textwrap.dedent("""
    import sys
    import precision_tool.tf_config as npu_tf_config
    import numpy as np
    import tensorflow as tf
    tf.compat.v1.disable_eager_execution()
    n = int(sys.argv[1])
    x = tf.compat.v1.placeholder(tf.float32, [16, 16], name="x")
    w = tf.compat.v1.get_variable("w", [16, 16])
    h = x
    for i in range(n):
        with tf.compat.v1.name_scope(f"block{i}"):
            h = tf.nn.relu(tf.matmul(h, w) * 0.5)
    sess = tf.compat.v1.Session()
    sess.run(tf.compat.v1.global_variables_initializer())
    sess = npu_tf_config.sess_dump(sess)
    sess.run(h, feed_dict={x: np.random.rand(16, 16)})
""")


def make_dump(workspace: Path, ops: int) -> Path:
    env = dict(os.environ, PYTHONPATH=str(ROOT), PRECISION_DATA=str(workspace), TF_CPP_MIN_LOG_LEVEL="2")
    subprocess.run([sys.executable, "-c", MAKE_DUMP, str(ops)], env=env, check=True, cwd=ROOT)
    runs = sorted((workspace / "tf" / "tf_debug").glob("run_*"))
    return runs[-1]


def time_ours(workspace: Path) -> tuple[float, int]:
    start = time.perf_counter()
    proc = subprocess.run([sys.executable, str(ROOT / "precision_tool" / "cli.py"), "--data", str(workspace),
                           "tf_dump", "--force"], capture_output=True, text=True,
                          env=dict(os.environ, NO_COLOR="1", COLUMNS="200"))
    elapsed = time.perf_counter() - start
    if proc.returncode != 0:
        raise SystemExit(proc.stdout + proc.stderr)
    return elapsed, len(list((workspace / "tf" / "dump").glob("*.npy")))


def time_debug_dump_dir(run_dir: Path, out: Path) -> float:
    code = textwrap.dedent(f"""
        import time, numpy as np, os
        t0 = time.perf_counter()
        from tensorflow.python.debug.lib.debug_data import DebugDumpDir
        d = DebugDumpDir({str(run_dir)!r}, validate=False)
        os.makedirs({str(out)!r}, exist_ok=True)
        for datum in d.dumped_tensor_data:
            v = datum.get_tensor()
            if isinstance(v, np.ndarray) and v.dtype.kind not in "OSU":
                np.save(os.path.join({str(out)!r}, f"{{datum.node_name.replace('/', '_')}}.{{datum.output_slot}}.{{datum.timestamp}}.npy"), v)
    """)
    start = time.perf_counter()
    subprocess.run([sys.executable, "-c", code], check=True, env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2"))
    return time.perf_counter() - start


def time_legacy(run_dir: Path, out: Path, sample: int) -> tuple[float, float, int]:
    """(start-up seconds, seconds per tensor, tensors timed) for offline_analyzer driven by pexpect."""
    import pexpect

    sys.path.insert(0, str(ROOT))

    from precision_tool.formats.tf.tfdbg_v1 import list_tensor_files, run_from_dir

    files = [f for f in list_tensor_files(run_from_dir(run_dir))[0] if f.node_name != "w"][:sample]
    out.mkdir(parents=True, exist_ok=True)
    start = time.perf_counter()
    child = pexpect.spawn(sys.executable, ["-m", "tensorflow.python.debug.cli.offline_analyzer",
                                           "--dump_dir", str(run_dir), "--log_usage", "false"],
                          env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2"), encoding="utf-8", timeout=600,
                          dimensions=(50, 200))
    child.expect("tfdbg> ")
    startup = time.perf_counter() - start
    start = time.perf_counter()
    for item in files:
        target = out / f"{item.node_name.replace('/', '_')}.{item.output_slot}.{item.timestamp_us}.npy"
        child.sendline(f"pt {item.node_name}:{item.output_slot} -n 0 -w {target}")
        child.expect("tfdbg> ")
    per_tensor = (time.perf_counter() - start) / max(len(files), 1)
    child.sendline("exit")
    child.close(force=True)
    written = len(list(out.glob("*.npy")))
    if written != len(files):
        print(f"warning: legacy route wrote {written} of {len(files)} sampled tensors")
    return startup, per_tensor, len(files)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--ops", type=int, default=2600, help="blocks of matmul+mul+relu in the test graph")
    parser.add_argument("--sample", type=int, default=60, help="tensors timed through the legacy route")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        workspace = Path(tmp) / "ws"
        t0 = time.perf_counter()
        run_dir = make_dump(workspace, args.ops)
        tensor_files = sum(1 for p in run_dir.rglob("*_DebugIdentity_*"))
        print(f"made a tfdbg v1 run of {tensor_files} tensor files in {time.perf_counter() - t0:.1f} s")
        ours, written = time_ours(workspace)
        tfdbg = time_debug_dump_dir(run_dir, Path(tmp) / "tfdbg")
        startup, per_tensor, sampled = time_legacy(run_dir, Path(tmp) / "legacy", args.sample)
        legacy = startup + per_tensor * written
        print(f"tensors written: {written}")
        print(f"ours   (tf_dump, end to end)         {ours:8.2f} s")
        print(f"tfdbg  (DebugDumpDir + np.save)      {tfdbg:8.2f} s   ours is {tfdbg / ours:6.1f}x faster")
        print(f"legacy (offline_analyzer + pexpect)  {legacy:8.2f} s   ours is {legacy / ours:6.1f}x faster "
              f"(extrapolated: start-up {startup:.2f} s measured + {per_tensor * 1000:.1f} ms/tensor measured "
              f"on {sampled} tensors x {written})")


if __name__ == "__main__":
    main()
