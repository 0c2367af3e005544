"""A seeded corpus of hostile files for the readers of NPU dumps, Opdebug records, golden .npy and tfdbg dumps.

Seeds are real files: dumps written by our writer from real arrays (protobuf and nano/TLV), Opdebug
records in the old 2048-byte and the new magic layouts, golden .npy written by numpy, and tfdbg v1/v2
files written by a real TensorFlow run (`make_tf_seeds`). Each kind gets generic byte mutations
(truncation at many offsets, flipped, inserted and deleted bytes, length fields made huge/negative/zero)
and mutations that know the format (the cases of msaccucmp's own unit tests for big and nano dumps:
header longer than the file, truncated header, size-sum mismatch, nested or missing tags; for .npy:
object and structured dtypes, cut headers, huge declared shapes, an .npz renamed).

`generate(kind, seeds, count)` is deterministic for a given seed (random.Random(seed)).
"""

from __future__ import annotations

import io
import random
import struct
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterator

import numpy as np

from tests.hostile.tf_corpus import (
    GB10,
    ROOT,
    TB4,
    _crc32c,
    _masked,
    _v2_mutation,
    make_tf_seeds,
    tfrecord,
    tfrecords,
    v1_run_dir,
    v1_seeds,
    v2_dir,
    v2_seeds,
)

# used by the harness and the tests through this module
REEXPORTED = (ROOT, _crc32c, _masked, make_tf_seeds, tfrecord, tfrecords, v1_run_dir, v2_dir)
KINDS = ("npu_dump", "nano_dump", "opdebug", "golden_npy", "tfdbg_v1", "tfdbg_v2")
EXTREME_U64 = (0, 1, 7, 0x7FFFFFFF, 0xFFFFFFFF, 1 << 40, (1 << 63) - 1, 1 << 63, (1 << 64) - 1)
EXTREME_U32 = (0, 1, 0x7FFFFFFF, 0x80000000, 0xFFFFFFFF, 0xFFFF)


@dataclass(frozen=True)
class Case:
    kind: str
    name: str  # unique, file-system safe: <kind>-<n>-<mutation>
    data: bytes
    mutation: str
    seed: str  # which seed file it came from
    file_name: str  # the name the file must carry (dump names, golden names, tfdbg names)


# --- generic byte mutations ---------------------------------------------------------------------------
def _truncate(data: bytes, rng: random.Random) -> tuple[bytes, str]:
    cut = rng.choice([0, 1, 4, 7, 8, 9, 12, 16, len(data) // 2, len(data) - 1, rng.randrange(len(data) or 1)])
    return data[:max(0, min(cut, len(data) - 1))], f"cut@{cut}"


def _flip(data: bytes, rng: random.Random) -> tuple[bytes, str]:
    out = bytearray(data)
    spots = [rng.randrange(len(out)) for _ in range(rng.choice([1, 1, 2, 4, 16]))] if out else []
    for spot in spots:
        out[spot] ^= rng.choice([0x01, 0x80, 0xFF, rng.randrange(1, 256)])
    return bytes(out), f"flip{len(spots)}"


def _insert(data: bytes, rng: random.Random) -> tuple[bytes, str]:
    at = rng.randrange(len(data) + 1)
    blob = bytes(rng.randrange(256) for _ in range(rng.choice([1, 3, 8, 64])))
    return data[:at] + blob + data[at:], f"insert{len(blob)}@{at}"


def _delete(data: bytes, rng: random.Random) -> tuple[bytes, str]:
    if len(data) < 2:
        return b"", "delete-all"
    at = rng.randrange(len(data) - 1)
    n = rng.choice([1, 2, 8, 64])
    return data[:at] + data[at + n:], f"delete{n}@{at}"


def _field(data: bytes, rng: random.Random) -> tuple[bytes, str]:
    """A u32 or u64 at a random (or early) offset set to an extreme value: lengths, counts, sizes."""
    out = bytearray(data)
    wide = rng.random() < 0.5
    width = 8 if wide else 4
    if len(out) < width:
        return bytes(out) + b"\xff" * width, "field-append"
    at = rng.choice([0, 0, 8, 12, 16, 20, 24, rng.randrange(len(out) - width + 1)])
    at = min(at, len(out) - width)
    value = rng.choice(EXTREME_U64 if wide else EXTREME_U32)
    struct.pack_into("<Q" if wide else "<I", out, at, value)
    return bytes(out), f"u{width * 8}@{at}={value:#x}"


def _garbage(data: bytes, rng: random.Random) -> tuple[bytes, str]:
    choice = rng.randrange(5)
    if choice == 0:
        return b"", "empty"
    if choice == 1:
        return data + bytes(rng.randrange(256) for _ in range(rng.choice([1, 100, 4096]))), "appended"
    if choice == 2:
        return bytes(rng.randrange(256) for _ in range(rng.choice([3, 8, 64, 1000]))), "random"
    if choice == 3:
        return b"\x00" * len(data), "zeroed"
    half = len(data) // 2
    return data[:half] + data[:half] + data[half:], "duplicated-half"


GENERIC: tuple[Callable[[bytes, random.Random], tuple[bytes, str]], ...] = (
    _truncate, _truncate, _flip, _flip, _insert, _delete, _field, _field, _garbage)


def _generic(data: bytes, rng: random.Random) -> tuple[bytes, str]:
    out, label = rng.choice(GENERIC)(data, rng)
    if rng.random() < 0.15:  # two mutations stacked
        out, second = rng.choice(GENERIC)(out, rng)
        label += "+" + second
    return out, label


# --- NPU dumps (protobuf) -----------------------------------------------------------------------------
def _dump_seeds(variant: str) -> list[tuple[str, str, bytes]]:
    """(seed label, dump file name, bytes) written by our writer from real arrays."""
    import tempfile

    from precision_tool.formats.npu.layouts import to_device
    from precision_tool.formats.npu.dump_types import Format
    from precision_tool.formats.npu.npu_dump import dump_file_name
    from precision_tool.formats.npu.npu_dump_write import TensorSpec, write_dump

    rng = np.random.default_rng(7)
    x = rng.standard_normal((1, 3, 4, 4)).astype(np.float32)
    h = rng.standard_normal((1, 5, 2, 3)).astype(np.float16)
    specs = {
        "conv_f32_nchw": ([TensorSpec(x, format=Format.NCHW)], [TensorSpec(np.maximum(x, 0), format=Format.NCHW)]),
        "f16_nc1hwc0": ([TensorSpec(to_device(h, "NCHW", "NC1HWC0"), format=Format.NC1HWC0, original_shape=h.shape)],
                        [TensorSpec(to_device(h * 2, "NCHW", "NC1HWC0"), format=Format.NC1HWC0,
                                    original_shape=h.shape, origin_name="mul", origin_output_index=0)]),
        "int32_and_scalar": ([TensorSpec(np.arange(5, dtype=np.int32)), TensorSpec(np.float32(2.5))],
                             [TensorSpec(np.arange(6, dtype=np.int64).reshape(2, 3))]),
    }
    seeds = []
    with tempfile.TemporaryDirectory() as tmp:
        for n, (label, (inputs, outputs)) in enumerate(specs.items()):
            name = dump_file_name("Conv2D", f"op{n}/{label}", 10 + n, 0, 1_700_000_000_000_000 + n)
            path = Path(tmp) / name
            write_dump(path, op_name=f"op{n}/{label}", inputs=inputs, outputs=outputs, variant=variant,
                       dump_time_us=1_700_000_000_000_000 + n)
            seeds.append((label, name, path.read_bytes()))
    return seeds


def _split_dump(data: bytes) -> tuple[bytes, bytes]:
    (n,) = struct.unpack_from("<Q", data, 0)
    return data[8:8 + n], data[8 + n:]


def _proto_mutation(data: bytes, rng: random.Random) -> tuple[bytes, str]:
    """Re-serialized headers that lie: sizes that do not sum to the file, huge shapes, missing or extra tensors."""
    from precision_tool.formats.npu.dump_proto import dump_data_class

    header, blocks = _split_dump(data)
    message = dump_data_class().FromString(header)
    tensors = list(message.input) + list(message.output)
    target = rng.choice(tensors)
    choice = rng.randrange(11)
    if choice == 0:
        target.size = rng.choice([0, target.size + 1, target.size * 2, 1 << 40, (1 << 64) - 1])
        label = f"size={target.size}"
    elif choice == 1:  # a declared 10 GB / 4 TiB tensor whose block is tiny
        del target.shape.dim[:]
        target.shape.dim.extend([rng.choice([GB10 // 4, TB4 // 4])])
        label = f"shape={list(target.shape.dim)}"
    elif choice == 2:
        del target.shape.dim[:]
        target.shape.dim.extend([1 << 20, 1 << 20, 1 << 20, rng.choice([1, 1 << 20])])
        label = "shape-overflow"
    elif choice == 3:
        del target.shape.dim[:]
        target.shape.dim.extend([rng.choice([(1 << 64) - 1, (1 << 64) - 5, 0]), 4])  # -1, -5 as u64
        label = f"shape-negative={list(target.shape.dim)}"
    elif choice == 4:
        target.data_type = rng.choice([13, 24, 25, 26, 28, 37, 39, 99, 2 ** 31 - 1])
        label = f"data_type={target.data_type}"
    elif choice == 5:
        target.format = rng.choice([41, 47, 200, 0xFFFF, 2 ** 31 - 1])
        label = f"format={target.format}"
    elif choice == 6:  # a tensor the blocks do not hold (size-sum mismatch)
        group = message.output if target in message.output else message.input
        group.add().CopyFrom(target)
        label = "extra-tensor"
    elif choice == 7:
        del message.output[:]
        label = "no-outputs"
    elif choice == 8:
        del message.input[:]
        del message.output[:]
        label = "no-tensors"
    elif choice == 9:
        buffer = message.buffer.add()
        buffer.size = rng.choice([1, 1 << 33])
        label = f"buffer={buffer.size}"
    else:
        del target.shape.dim[:]
        target.shape.dim.extend([1] * rng.choice([9, 64, 1000]))
        label = f"rank={len(target.shape.dim)}"
    new_header = message.SerializeToString()
    return struct.pack("<Q", len(new_header)) + new_header + blocks, label


def _header_length_mutation(data: bytes, rng: random.Random) -> tuple[bytes, str]:
    """The u64 header length made longer than the file, zero, one short, negative as i64, ..."""
    (n,) = struct.unpack_from("<Q", data, 0)
    value = rng.choice([0, 1, n - 1, n + 1, len(data) - 8, len(data), len(data) + 1, 1 << 31,
                        (1 << 64) - 1, (1 << 64) - 8, 1 << 63])
    out = bytearray(data)
    struct.pack_into("<Q", out, 0, value % (1 << 64))
    if rng.random() < 0.3:  # and the header itself cut short (a truncated header)
        return bytes(out[:8 + max(0, min(n, len(data)) // 2)]), f"header_len={value}+cut"
    return bytes(out), f"header_len={value}"


def _nano_mutation(data: bytes, rng: random.Random) -> tuple[bytes, str]:
    """TLV lies: tags longer than the header, huge counts and list lengths, nested, missing and repeated tags."""
    from precision_tool.formats.npu.nano_dump import TAG_INPUTS, TAG_OUTPUTS

    header, blocks = _split_dump(data)
    magic_version, body = header[:8], header[8:]
    tlvs = []
    pos = 0
    while pos + 8 <= len(body):
        tag, length = struct.unpack_from("<II", body, pos)
        tlvs.append((tag, body[pos + 8:pos + 8 + length]))
        pos += 8 + length
    choice = rng.randrange(10)

    def pack(items: list[tuple[int, bytes]]) -> bytes:
        return b"".join(struct.pack("<II", t, len(v)) + v for t, v in items)

    if choice == 0:  # missing tag
        drop = rng.choice([TAG_INPUTS, TAG_OUTPUTS])
        tlvs = [(t, v) for t, v in tlvs if t != drop]
        label = f"missing-tag{drop}"
    elif choice == 1:  # repeated tag
        tlvs = tlvs + [rng.choice(tlvs)]
        label = "repeated-tag"
    elif choice == 2:  # nested: the whole TLV list inside an unknown tag, or inside the inputs tag
        outer = rng.choice([9, TAG_INPUTS])
        tlvs = [(outer, pack(tlvs))]
        label = f"nested-in-{outer}"
    elif choice == 3:  # tag length longer than the header
        raw = bytearray(pack(tlvs))
        struct.pack_into("<I", raw, 4, rng.choice([len(raw), len(raw) + 1, 0xFFFFFFFF, 0x7FFFFFFF]))
        new_header = magic_version + bytes(raw)
        return struct.pack("<Q", len(new_header)) + new_header + blocks, "tag-length-huge"
    elif choice == 4:  # count huge
        t, v = rng.choice(tlvs)
        v = struct.pack("<I", rng.choice([0xFFFFFFFF, 1 << 20, 0])) + v[4:]
        tlvs = [(t2, v if t2 == t else v2) for t2, v2 in tlvs]
        label = f"count-huge-tag{t}"
    elif choice == 5:  # a tensor's item list length huge (the u32 before the items)
        t, v = rng.choice(tlvs)
        fixed = 4 + (40 if t == TAG_INPUTS else 52)
        if len(v) >= fixed + 4:
            raw = bytearray(v)
            struct.pack_into("<I", raw, fixed - 4, rng.choice([0xFFFFFFFF, len(v), 7]))
            v = bytes(raw)
        tlvs = [(t2, v if t2 == t else v2) for t2, v2 in tlvs]
        label = f"list-length-tag{t}"
    elif choice == 6:  # size-sum mismatch: a tensor size field changed (offset 28/40 in the record)
        t, v = rng.choice(tlvs)
        at = 4 + (28 if t == TAG_INPUTS else 40)
        raw = bytearray(v)
        if len(raw) >= at + 8:
            struct.pack_into("<Q", raw, at, rng.choice([0, 1, 1 << 40, GB10, (1 << 64) - 1]))
        tlvs = [(t2, bytes(raw) if t2 == t else v2) for t2, v2 in tlvs]
        label = f"size-field-tag{t}"
    elif choice == 7:  # shape item replaced by a 10 GB / 4 TiB declared shape
        t, v = rng.choice(tlvs)
        at = 4 + (40 if t == TAG_INPUTS else 52)
        raw = bytearray(v)
        if len(raw) >= at + 16:
            struct.pack_into("<Q", raw, at + 8, rng.choice([GB10, TB4, (1 << 64) - 1]))
        tlvs = [(t2, bytes(raw) if t2 == t else v2) for t2, v2 in tlvs]
        label = f"shape-huge-tag{t}"
    elif choice == 8:  # unknown tags around, zero-length tags
        tlvs = [(77, b""), *tlvs, (rng.randrange(6, 1000), bytes(rng.randrange(256) for _ in range(12)))]
        label = "unknown-tags"
    else:  # bad magic
        magic_version = struct.pack("<II", rng.choice([0, 0x5A5A5A5B, 0xFFFFFFFF]), 1)
        label = "bad-magic"
    new_header = magic_version + pack(tlvs)
    return struct.pack("<Q", len(new_header)) + new_header + blocks, label


# --- Opdebug records ----------------------------------------------------------------------------------
OPDEBUG_TASK = 34


def opdebug_seeds() -> list[tuple[str, str, bytes]]:
    import tempfile

    from precision_tool.formats.npu.npu_dump import dump_file_name
    from precision_tool.formats.npu.npu_dump_write import TensorSpec, write_dump
    from precision_tool.formats.npu.opdebug import new_layout_payload, old_layout_payload

    payloads = {
        "old": old_layout_payload(ai_core=(0, OPDEBUG_TASK, 0x100)),
        "old_dha": old_layout_payload(dha=(0, OPDEBUG_TASK, 0x900), l2=(0, OPDEBUG_TASK, 1 << 16)),
        "new_aic": new_layout_payload(unit="AIC", stream_id=0, task_id=OPDEBUG_TASK, status=0x20),
        "new_aic_v1": new_layout_payload(unit="AIC", stream_id=0, task_id=OPDEBUG_TASK, status=(0x8, 1), version=1),
        "new_sdma": new_layout_payload(unit="SDMA", stream_id=0, task_id=OPDEBUG_TASK, status=3),
    }
    seeds = []
    with tempfile.TemporaryDirectory() as tmp:
        for n, (label, payload) in enumerate(payloads.items()):
            name = dump_file_name("Opdebug", "Node_OpDebug", OPDEBUG_TASK, 0, 1_700_000_000_000_100 + n)
            path = Path(tmp) / name
            write_dump(path, op_name="Node_OpDebug", inputs=[],
                       outputs=[TensorSpec(np.frombuffer(payload, dtype=np.uint8).copy())])
            seeds.append((label, name, path.read_bytes()))
    return seeds


def opdebug_neighbour(folder: Path) -> Path:
    """The overflowing op's own dump (task 34, stream 0) that an Opdebug record points at."""
    from precision_tool.formats.npu.npu_dump import dump_file_name
    from precision_tool.formats.npu.npu_dump_write import TensorSpec, write_dump

    rng = np.random.default_rng(3)
    name = dump_file_name("MatMulV2", "fc2/MatMul", OPDEBUG_TASK, 0, 1_700_000_000_000_000)
    path = folder / name
    write_dump(path, op_name="fc2/MatMul", inputs=[TensorSpec(rng.standard_normal((4, 8)).astype(np.float16))],
               outputs=[TensorSpec(np.array([[6e4, np.inf]], dtype=np.float16))])
    return path


def _payload_mutation(data: bytes, rng: random.Random) -> tuple[bytes, str]:
    """The record itself damaged while the dump around it stays well formed."""
    import tempfile

    from precision_tool.formats.npu.dump_proto import dump_data_class
    from precision_tool.formats.npu.npu_dump_write import TensorSpec, write_dump

    header, blocks = _split_dump(data)
    message = dump_data_class().FromString(header)
    payload = bytearray(blocks[:message.output[0].size])
    choice = rng.randrange(6)
    if choice == 0:
        payload = payload[:rng.choice([0, 3, 4, 23, 24, 40, len(payload) - 1])]
        label = f"payload-cut={len(payload)}"
    elif choice == 1:
        payload += b"\x00" * rng.choice([1, 8])
        label = "payload-longer"
    elif choice == 2 and len(payload) >= 16:
        struct.pack_into("<I", payload, 12, rng.choice([4, 7, 0xFFFFFFFF]))  # acc_type (new) / info (old)
        label = "acc_type"
    elif choice == 3 and len(payload) >= 8:
        struct.pack_into("<I", payload, 4, rng.choice([1, 2, 0xFFFFFFFF]))  # version
        label = "version"
    elif choice == 4:
        struct.pack_into("<I", payload, 0, rng.choice([0x5A5A5A5A, 0, 0xA5A5A5A5]))
        label = "magic"
    else:
        payload = bytearray(len(payload))
        label = "status-zero"
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "x"
        write_dump(path, op_name="Node_OpDebug", inputs=[],
                   outputs=[TensorSpec(np.frombuffer(bytes(payload), dtype=np.uint8).copy())])
        return path.read_bytes(), label


# --- golden .npy --------------------------------------------------------------------------------------
def _npy(array: np.ndarray) -> bytes:
    buffer = io.BytesIO()
    np.save(buffer, array, allow_pickle=False)
    return buffer.getvalue()


def golden_seeds() -> list[tuple[str, str, bytes]]:
    rng = np.random.default_rng(11)
    arrays = {
        "conv1_Relu": rng.standard_normal((2, 3, 4, 4)).astype(np.float32),
        "bn_Mean": rng.standard_normal(7).astype(np.float16),
        "loss": np.array(1.5, dtype=np.float32),
        "labels": np.arange(8, dtype=np.int64),
        "mask": rng.random((3, 3)) > 0.5,
        "fortran": np.asfortranarray(rng.standard_normal((3, 5))),
    }
    return [(label, f"{label}.0.{1_700_000_000_000_000 + n:016d}.npy", _npy(a))
            for n, (label, a) in enumerate(arrays.items())]


def npy_with_header(text: str, body: bytes = b"", version: bytes = b"\x01\x00", length: int | None = None) -> bytes:
    raw = text.encode("latin1")
    pad = (64 - (10 + len(raw) + 1) % 64) % 64
    raw += b" " * pad + b"\n"
    size = len(raw) if length is None else length
    return b"\x93NUMPY" + version + struct.pack("<H", size % 65536) + raw + body


def _npy_mutation(data: bytes, rng: random.Random) -> tuple[bytes, str]:
    body = data[128:] if len(data) > 128 else b"\x00" * 16
    choice = rng.randrange(16)
    header = lambda descr, shape, fortran=False: (f"{{'descr': {descr!r}, 'fortran_order': {fortran}, "
                                                  f"'shape': {shape!r}, }}")
    if choice == 0:
        return npy_with_header(header("<f4", (TB4 // 4,)), body), "shape-4TiB"
    if choice == 1:
        return npy_with_header(header("<f4", (GB10 // 4,)), body), "shape-10GB"
    if choice == 2:
        return npy_with_header(header("<f8", (1 << 20, 1 << 20, 1 << 20)), body), "shape-overflow"
    if choice == 3:
        return npy_with_header(header("|O", (2,)), b"\x80\x04N."), "object-dtype"
    if choice == 4:
        return npy_with_header(header([("a", "<f4"), ("b", "<i4")], (2,)), b"\x00" * 16), "structured-dtype"
    if choice == 5:
        return npy_with_header(header("<f4", (-1, 3)), body), "negative-shape"
    if choice == 6:
        return data[:rng.choice([6, 8, 9, 10, 20, 60, 127])], "cut-header"
    if choice == 7:
        return npy_with_header(header("<f4", (len(body) // 4 + 5,)), body), "data-short"
    if choice == 8:
        return npy_with_header(header("<f4", (4,)), body, length=rng.choice([0, 1, 65535])), "header-len"
    if choice == 9:
        version = rng.choice([b"\x09\x00", b"\x02\x00", b"\x03\x00"])
        return npy_with_header(header("<f4", (4,)), body, version=version), "version"
    if choice == 10:
        huge_number = "{'descr': '<f4', 'fortran_order': False, 'shape': (9" + "9" * 5000 + ",), }"
        return npy_with_header(rng.choice(["{'descr': '<f4'}", "[1, 2, 3]", "__import__('os')", "{" * 200,
                                            huge_number,
                                            "(" * 5000 + ")" * 5000]), body), "header-text"
    if choice == 11:
        buffer = io.BytesIO()
        np.savez(buffer, a=np.arange(3.0))
        return buffer.getvalue(), "npz-renamed"
    if choice == 12:
        return npy_with_header(header("<U8", (2,)), b"a\x00\x00\x00" * 16), "unicode-dtype"
    if choice == 13:
        return npy_with_header(header("<f4", (2, 2), fortran=True), body[:16]), "fortran"
    if choice == 14:
        return npy_with_header(header("<f4", ()), body[:4]), "0-d"
    return npy_with_header(header(rng.choice(["<f9", "<V0", "bogus", ">c32", "<M8[D]"]), (2,)), body), "descr"


# --- the generator -----------------------------------------------------------------------------------
def _seeds_of(kind: str, seeds: Path | None) -> list[tuple[str, str, bytes]]:
    if kind == "npu_dump":
        return _dump_seeds("protobuf")
    if kind == "nano_dump":
        return _dump_seeds("nano")
    if kind == "opdebug":
        return opdebug_seeds()
    if kind == "golden_npy":
        return golden_seeds()
    if seeds is None:
        raise ValueError(f"{kind} needs the TF seed folder (make_tf_seeds)")
    return v1_seeds(seeds) if kind == "tfdbg_v1" else v2_seeds(seeds)


_SPECIFIC: dict[str, tuple[Callable[[bytes, random.Random], tuple[bytes, str]], ...]] = {
    "npu_dump": (_proto_mutation, _header_length_mutation),
    "nano_dump": (_nano_mutation, _header_length_mutation),
    "opdebug": (_payload_mutation, _proto_mutation, _header_length_mutation),
    "golden_npy": (_npy_mutation,),
    "tfdbg_v1": (),
    "tfdbg_v2": (_v2_mutation,),
}


def generate(kind: str, seeds: Path | None = None, count: int = 1000, seed: int = 0) -> Iterator[Case]:
    """`count` mutated files of `kind`, half format-aware (where the kind has such mutations)."""
    if kind not in KINDS:
        raise ValueError(f"unknown kind {kind}; one of {', '.join(KINDS)}")
    rng = random.Random(f"{kind}:{seed}")
    sources = _seeds_of(kind, seeds)
    specific = _SPECIFIC[kind]
    for n in range(count):
        label, file_name, data = sources[n % len(sources)]
        if specific and rng.random() < 0.5:
            mutated, how = rng.choice(specific)(data, rng)
        else:
            mutated, how = _generic(data, rng)
        safe = "".join(c if c.isalnum() or c in "-=+@." else "_" for c in how)[:60]
        yield Case(kind, f"{kind}-{n:04d}-{safe}", mutated, how, label, file_name)
