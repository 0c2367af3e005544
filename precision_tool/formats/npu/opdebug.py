"""Overflow status records held in `Opdebug.Node_OpDebug.*` dumps (formats.md §4).

Two payload layouts exist: the old fixed 2048-byte block (DHA atomic, L2 atomic and AI Core sections
side by side) and the newer one that starts with the magic 0x5A5A5A5A and holds one accelerator record.
Both become `OverflowRecord`s whose status is decoded into plain English.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from pathlib import Path

from precision_tool.errors import FormatError

OPDEBUG_PREFIX = "Opdebug.Node_OpDebug."
OLD_LAYOUT_BYTES = 2048
NEW_MAGIC = 0x5A5A5A5A
NEW_HEADER_BYTES = 24  # magic, version, valid, acc_type, rsv, data_len (u32 each)

ACC_TYPES = {0: "AIC", 1: "AIV", 2: "AICPU", 3: "SDMA"}
_NEW_FIELDS = {
    "AIC": ("model_id", "stream_id", "task_id", "task_type", "context_id", "thread_id", "pc_start",
            "para_base", "core_id", "block_id", "status"),
    "AICPU": ("model_id", "stream_id", "task_id", "task_type", "context_id", "cpu_id", "thread_id", "status"),
    "SDMA": ("model_id", "stream_id", "task_id", "task_type", "context_id", "thread_id", "src_addr",
             "dst_addr", "channel_id", "status"),
}
_NEW_FIELDS["AIV"] = _NEW_FIELDS["AIC"]
_OLD_INFO_FIELDS = ("model_id", "stream_id", "task_id", "task_type", "pc_start", "para_base")
# (name, info offset, status offset) of the old layout's three sections
_OLD_SECTIONS = (("DHA atomic add", 0, 512), ("L2 atomic add", 128, 768), ("AI Core", 256, 1024 + 16))
STATUS_WORDS_V1 = 4

AI_CORE_BITS = (
    (0x8, "sign overflow or minimum-integer overflow"),
    (0x10, "integer add/sub/mul overflow"),
    (0x20, "floating-point overflow"),
    (0x80, "negative input to a float-to-unsigned conversion"),
    (0x100, "overflow converting fp32 or int32 to fp16"),
    (0x400, "cube accumulation overflow"),
)
DHA_CODES = {0x9: "overflow", 0xA: "underflow", 0xB: "source is NaN", 0xC: "destination is NaN",
             0xD: "source and destination are NaN"}
L2_CODES = {1: "overflow", 2: "underflow", 3: "source is NaN", 4: "destination is NaN",
            5: "source and destination are NaN"}


@dataclass(frozen=True)
class OverflowRecord:
    """One unit's status: which task overflowed, and how (`status_words` as stored)."""

    unit: str  # "AI Core", "DHA atomic add", "L2 atomic add" (old layout); "AIC", "AIV", "AICPU", "SDMA" (new)
    layout: str  # "old" | "new"
    model_id: int
    stream_id: int
    task_id: int
    task_type: int
    context_id: int | None
    thread_id: int | None
    status_words: tuple[int, ...]
    fields: tuple[tuple[str, int], ...] = ()

    @property
    def status(self) -> int:
        return self.status_words[0] if self.status_words else 0

    @property
    def overflowed(self) -> bool:
        return any(self.status_words)

    def describe(self) -> list[str]:
        """The status in words, one phrase per cause."""
        return describe_status(self.unit, self.status_words)


def describe_status(unit: str, status_words: tuple[int, ...]) -> list[str]:
    status = status_words[0] if status_words else 0
    phrases: list[str] = []
    if unit in ("AI Core", "AIC", "AIV"):
        for bit, text in AI_CORE_BITS:
            if status & bit:
                phrases.append(text)
        known = sum(bit for bit, _ in AI_CORE_BITS)
        if status & ~known:
            phrases.append(f"other status bits 0x{status & ~known:x}")
        for n, word in enumerate(status_words[1:], 1):
            if word:
                phrases.append(f"status word {n} = 0x{word:x}")
    elif unit == "DHA atomic add":
        code = (status >> 8) & 0xFF
        phrases.append(f"DHA atomic add {DHA_CODES.get(code, f'status code 0x{code:x}')}")
    elif unit == "L2 atomic add":
        code = (status >> 16) & 0x7
        phrases.append(f"L2 atomic add {L2_CODES.get(code, f'status code {code:03b}')}")
    else:
        phrases.append(f"{unit} status 0x{status:x}")
    if not phrases and status:
        phrases.append(f"status 0x{status:x}")
    return phrases


def parse_opdebug_payload(data: bytes, path: str | Path = "<opdebug>") -> list[OverflowRecord]:
    """The records with a non-zero status (old layout: up to three; new layout: one)."""
    if len(data) >= 4 and struct.unpack_from("<I", data, 0)[0] == NEW_MAGIC:
        record = _parse_new(data, path)
        return [record] if record.overflowed else []
    if len(data) != OLD_LAYOUT_BYTES:
        raise FormatError(
            path,
            f"the overflow record is {len(data)} bytes: neither the old {OLD_LAYOUT_BYTES}-byte layout "
            f"nor the new one (magic 0x{NEW_MAGIC:X})",
        )
    records = []
    for unit, info_at, status_at in _OLD_SECTIONS:
        values = struct.unpack_from("<6Q", data, info_at)
        (status,) = struct.unpack_from("<Q", data, status_at)
        info = dict(zip(_OLD_INFO_FIELDS, values))
        record = OverflowRecord(
            unit=unit, layout="old", model_id=info["model_id"], stream_id=info["stream_id"],
            task_id=info["task_id"], task_type=info["task_type"], context_id=None, thread_id=None,
            status_words=(status,), fields=tuple(info.items()),
        )
        if record.overflowed:
            records.append(record)
    return records


def _parse_new(data: bytes, path: str | Path) -> OverflowRecord:
    if len(data) < NEW_HEADER_BYTES:
        raise FormatError(path, f"the overflow record is only {len(data)} bytes; the new layout needs at least 24")
    _magic, version, _valid, acc_type, _rsv, data_len = struct.unpack_from("<6I", data, 0)
    unit = ACC_TYPES.get(acc_type)
    if unit is None:
        raise FormatError(path, f"the overflow record names unknown accelerator type {acc_type}")
    names = _NEW_FIELDS[unit]
    wide_status = unit in ("AIC", "AIV") and version == 1
    words_needed = len(names) - 1 + (STATUS_WORDS_V1 if wide_status else 1)
    if len(data) < NEW_HEADER_BYTES + 8 * words_needed:
        raise FormatError(path, f"the {unit} overflow record is truncated ({len(data)} bytes)")
    values = struct.unpack_from(f"<{words_needed}Q", data, NEW_HEADER_BYTES)
    fields = dict(zip(names[:-1], values))
    status_words = tuple(values[len(names) - 1:])
    del data_len
    return OverflowRecord(
        unit=unit, layout="new", model_id=fields["model_id"], stream_id=fields["stream_id"],
        task_id=fields["task_id"], task_type=fields["task_type"], context_id=fields.get("context_id"),
        thread_id=fields.get("thread_id"), status_words=status_words, fields=tuple(fields.items()),
    )


# --- writers (tests and the demo workspace) -------------------------------------------------------
def old_layout_payload(*, ai_core: tuple[int, int, int] | None = None, dha: tuple[int, int, int] | None = None,
                       l2: tuple[int, int, int] | None = None, model_id: int = 1) -> bytes:
    """A 2048-byte record; each section given as (stream_id, task_id, status)."""
    buffer = bytearray(OLD_LAYOUT_BYTES)
    for (unit, info_at, status_at), section in zip(_OLD_SECTIONS, (dha, l2, ai_core)):
        if section is None:
            continue
        stream_id, task_id, status = section
        struct.pack_into("<6Q", buffer, info_at, model_id, stream_id, task_id, 0, 0x1000, 0x2000)
        struct.pack_into("<Q", buffer, status_at, status)
        if unit == "AI Core":
            struct.pack_into("<2Q", buffer, 1024, 0xABC, 0)  # kernel_code, block_idx
    return bytes(buffer)


def new_layout_payload(*, unit: str, stream_id: int, task_id: int, status: int | tuple[int, ...],
                       version: int = 0, context_id: int = 0, thread_id: int = 0, model_id: int = 1) -> bytes:
    """A new-layout record for one accelerator (`unit` in AIC, AIV, AICPU, SDMA)."""
    acc_type = {v: k for k, v in ACC_TYPES.items()}[unit]
    names = _NEW_FIELDS[unit]
    known = {"model_id": model_id, "stream_id": stream_id, "task_id": task_id, "context_id": context_id,
             "thread_id": thread_id}
    values = [known.get(name, 0) for name in names[:-1]]
    words = tuple(status) if isinstance(status, tuple) else (status,)
    if unit in ("AIC", "AIV") and version == 1:
        words = (words + (0,) * STATUS_WORDS_V1)[:STATUS_WORDS_V1]
    values.extend(words)
    body = struct.pack(f"<{len(values)}Q", *values)
    return struct.pack("<6I", NEW_MAGIC, version, 1, acc_type, 0, len(body)) + body
