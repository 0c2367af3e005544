"""The tfdbg part of the hostile corpus: seeds from a real TensorFlow run, TFRecord framing, v2 mutations.

Kept apart from corpus.py (which re-exports these names) so each module stays short.
"""

from __future__ import annotations

import random
import struct
import subprocess
import sys
from functools import lru_cache
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
TB4 = 1 << 42  # 4 TiB
GB10 = 10 << 30


# --- seeds --------------------------------------------------------------------------------------------
def make_tf_seeds(folder: Path, timeout: float = 300) -> Path:
    """Run the small TF scripts of tests/analysis/golden_extract once (v1: one sess_dump run; v2: a FULL_TENSOR Keras fit)."""
    import os

    done = folder / ".done"
    if done.is_file():
        return folder
    scripts = ROOT / "tests" / "analysis" / "golden_extract" / "scripts"
    env = dict(os.environ, PYTHONPATH=str(ROOT), TF_CPP_MIN_LOG_LEVEL="2")
    env.pop("PRECISION_TOOL_CONFIG", None)
    for args, ws in (([str(scripts / "train_tf1.py"), "sess", "1"], folder / "v1"),
                     ([str(scripts / "train_keras_v2.py"), str(folder / "v2" / "tf" / "tf_debug")], folder / "v2")):
        ws.mkdir(parents=True, exist_ok=True)
        proc = subprocess.run([sys.executable, *args], env=dict(env, PRECISION_DATA=str(ws)), cwd=ROOT,
                              capture_output=True, text=True, timeout=timeout)
        if proc.returncode != 0:
            raise RuntimeError(f"TF seed run failed: {proc.stderr[-2000:]}")
    done.write_text("ok\n")
    return folder


def v1_run_dir(seeds: Path) -> Path:
    return next((seeds / "v1" / "tf" / "tf_debug").glob("run_*"))


def v1_seeds(seeds: Path) -> list[tuple[str, str, bytes]]:
    """A few DebugIdentity tensor files of the real v1 run (relative path inside the run as the name)."""
    run = v1_run_dir(seeds)
    files = sorted(p for p in run.rglob("*_DebugIdentity_*") if p.is_file())
    picked = [p for p in files if any(k in str(p) for k in ("conv1/w_0", "relu_bf16", "Mean_0", "labels"))] or files[:4]
    return [(p.name, str(p.relative_to(run)), p.read_bytes()) for p in picked[:6]]


def v2_dir(seeds: Path) -> Path:
    return seeds / "v2" / "tf" / "tf_debug"


def v2_seeds(seeds: Path) -> list[tuple[str, str, bytes]]:
    path = next(v2_dir(seeds).glob("*.graph_execution_traces"))
    return [("traces", path.name, path.read_bytes())]


def _crc32c(data: bytes) -> int:
    crc = 0xFFFFFFFF
    for byte in data:
        crc ^= byte
        for _ in range(8):
            crc = (crc >> 1) ^ 0x82F63B78 if crc & 1 else crc >> 1
    return crc ^ 0xFFFFFFFF


def _masked(data: bytes) -> int:
    crc = _crc32c(data)
    return (((crc >> 15) | (crc << 17)) + 0xA282EAD8) & 0xFFFFFFFF


def tfrecords(data: bytes) -> list[bytes]:
    out, pos = [], 0
    while pos + 12 <= len(data):
        (length,) = struct.unpack_from("<Q", data, pos)
        out.append(data[pos + 12:pos + 12 + length])
        pos += 12 + length + 4
    return out


@lru_cache(maxsize=4096)  # records left alone keep their framing: only the changed one is checksummed again
def tfrecord(payload: bytes) -> bytes:
    head = struct.pack("<Q", len(payload))
    return head + struct.pack("<I", _masked(head)) + payload + struct.pack("<I", _masked(payload))


def _v2_mutation(data: bytes, rng: random.Random) -> tuple[bytes, str]:
    """Records with valid checksums whose tensors lie (shorter than their shape, huge shapes), or a record's
    data damaged under an intact length checksum."""
    from precision_tool.formats.tf.tf_protos import parse_debug_event

    records = tfrecords(data)
    traced = [i for i, r in enumerate(records) if parse_debug_event(r).HasField("graph_execution_trace")]
    index = rng.choice(traced)
    event = parse_debug_event(records[index])
    proto = event.graph_execution_trace.tensor_proto
    choice = rng.randrange(7)
    if choice == 0:
        proto.tensor_content = proto.tensor_content[:len(proto.tensor_content) // 2]
        label = "tensor-short"
    elif choice == 1:
        del proto.tensor_shape.dim[:]
        proto.tensor_shape.dim.add().size = rng.choice([GB10 // 4, TB4 // 4])
        proto.tensor_content = b""
        proto.float_val.append(1.0)
        label = "tensor-huge-listed"
    elif choice == 2:
        proto.tensor_shape.dim.add().size = rng.choice([-1, -7])
        label = "tensor-negative-dim"
    elif choice == 3:
        proto.dtype = rng.choice([0, 99, 7, 21, 14])
        label = f"tensor-dtype={proto.dtype}"
    elif choice == 4:  # damage under an intact length checksum: only the data CRC can tell
        raw = bytearray(records[index])
        raw[rng.randrange(len(raw))] ^= 0x40
        records[index] = bytes(raw)
        out = bytearray()
        for r in records:
            out += tfrecord(r)
        # put back the original data CRC of the damaged record: the file lies
        return _with_stale_crc(bytes(out), records, index, data), "record-data-flipped"
    elif choice == 5:
        del proto.tensor_shape.dim[:]
        for _ in range(3):
            proto.tensor_shape.dim.add().size = 1 << 30
        label = "tensor-shape-overflow"
    else:
        event.graph_execution_trace.op_name = rng.choice(["", "a" * 300, "../../etc/x", "名前/op"])
        label = "op-name"
    records[index] = event.SerializeToString()
    return b"".join(tfrecord(r) for r in records), label


def _with_stale_crc(rebuilt: bytes, records: list[bytes], index: int, original: bytes) -> bytes:
    """`rebuilt` with the damaged record's data CRC replaced by the original record's CRC."""
    pos = 0
    for i, r in enumerate(records):
        end = pos + 12 + len(r)
        if i == index:
            old_pos = 0
            for j, o in enumerate(tfrecords(original)):
                if j == index:
                    stale = original[old_pos + 12 + len(o):old_pos + 16 + len(o)]
                    return rebuilt[:end] + stale + rebuilt[end + 4:]
                old_pos += 16 + len(o)
        pos = end + 4
    return rebuilt


