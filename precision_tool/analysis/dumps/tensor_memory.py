"""Whether a tensor that must be held whole fits in the memory this process can still take, asked before
anything is read.

Why: a 10 GB dump shown in its origin layout (`pt`, `ni`) or decoded with `dc -f` is held two or three times
over (the bytes read, the decoded array, the converted copy). On a machine with less free memory the command
grew until the system killed it, with nothing said. Tensors that need no conversion are not held at all
(origin_layout.shown_tensor maps them and tensor_stats streams them); the rest are refused in one line when
they cannot fit. Free memory is MemAvailable, bounded by a cgroup's limit and by RLIMIT_AS.
"""

from __future__ import annotations

import os
from pathlib import Path

from precision_tool.errors import FormatError

CHECK_FROM = 64 << 20
"""Bytes below which a tensor is read without asking (reading /proc for every small tensor of a folder
would cost more than the tensors)."""


def free_memory() -> int | None:
    """Bytes this process can still take; None when the system does not say."""
    limits = [_meminfo_available(), _cgroup_room(), _address_space_room()]
    known = [limit for limit in limits if limit is not None]
    return min(known) if known else None


def require_memory(path: str | os.PathLike[str], needed: int, what: str, instead: str) -> None:
    """Raise a FormatError naming `path` when `needed` bytes (for `what`) exceed the free memory; `instead`
    says what to do (a command that streams)."""
    if needed < CHECK_FROM:
        return
    free = free_memory()
    if free is None or needed <= free:
        return
    raise FormatError(path, f"{what} needs about {size_text(needed)} of memory and {size_text(free)} is free; "
                            f"{instead}")


def require_text_room(path: str | os.PathLike[str], values: int, instead: str) -> None:
    """`pt -c`: np.savetxt builds the whole text in memory, ~16 characters a value, held twice as written."""
    require_memory(path, 32 * values, f"writing its {values} values as text (-c)", instead)


def size_text(count: int) -> str:
    """'10.0 GiB', '512 MiB', '900 KiB'."""
    for unit, shift in (("GiB", 30), ("MiB", 20), ("KiB", 10)):
        if count >= 1 << shift:
            value = count / (1 << shift)
            return f"{value:.1f} {unit}" if unit == "GiB" else f"{value:.0f} {unit}"
    return f"{count} bytes"


def _meminfo_available() -> int | None:
    try:
        with open("/proc/meminfo") as handle:
            for line in handle:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    try:
        return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, AttributeError):
        return None


def _cgroup_room() -> int | None:
    """What a container's memory limit leaves (cgroup v2, else v1); None without a limit."""
    for limit_file, usage_file in (("/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory.current"),
                                   ("/sys/fs/cgroup/memory/memory.limit_in_bytes",
                                    "/sys/fs/cgroup/memory/memory.usage_in_bytes")):
        try:
            limit_text = Path(limit_file).read_text().strip()
            if limit_text == "max" or int(limit_text) >= 1 << 60:
                return None
            return max(0, int(limit_text) - int(Path(usage_file).read_text().strip()))
        except (OSError, ValueError):
            continue
    return None


def _address_space_room() -> int | None:
    """What RLIMIT_AS leaves beside the address space already used; None without a limit."""
    try:
        import resource
    except ImportError:  # not a Unix
        return None
    soft, _ = resource.getrlimit(resource.RLIMIT_AS)
    if soft == resource.RLIM_INFINITY:
        return None
    try:
        with open("/proc/self/status") as handle:
            used = next(int(line.split()[1]) * 1024 for line in handle if line.startswith("VmSize:"))
    except (OSError, ValueError, StopIteration):
        return None
    return max(0, soft - used)
