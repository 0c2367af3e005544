"""`python3 tests/slow_dump_reads.py SECONDS [CLI ARGS]`: the CLI with every dump read SECONDS slower.

Tests that press Ctrl-C in the middle of a comparison use it: on a fast machine a whole test network
is compared before the first rows are flushed (every 0.2 s), so there is no "middle" to interrupt.
Only the time changes; every byte read and written is the real one. Pool workers fork from this
process and inherit the slowed reader.
"""

import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from precision_tool.formats.npu import npu_dump  # noqa: E402


def _slowed(read, seconds: float):  # type: ignore[no-untyped-def]
    def read_slowly(*args, **kwargs):  # type: ignore[no-untyped-def]
        time.sleep(seconds)
        return read(*args, **kwargs)
    return read_slowly


if __name__ == "__main__":
    delay = float(sys.argv.pop(1))
    npu_dump.read_dump_start = _slowed(npu_dump.read_dump_start, delay)
    from precision_tool.shell.main import run

    run()
