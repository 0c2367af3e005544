"""`python3 tests/crashing_replay_child.py -m precision_tool.capture.op_replay --cases LIST`: the real replay
child, except that it dies by SIGSEGV when it reaches the case whose folder name contains
$CRASH_ON_CASE, as TensorFlow does when a kernel crashes. `replay --all --python` takes a wrapper script
that runs this (tests/test_replay_all.py writes one). Every other case is replayed by the real child.
"""

import os
import signal
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from precision_tool.capture import op_replay  # noqa: E402


def _crashing(replay_case):  # type: ignore[no-untyped-def]
    def replay_or_crash(folder, graphs):  # type: ignore[no-untyped-def]
        if os.environ.get("CRASH_ON_CASE", "\0") in Path(folder).name:
            os.kill(os.getpid(), signal.SIGSEGV)
        return replay_case(folder, graphs)
    return replay_or_crash


if __name__ == "__main__":
    assert sys.argv[1:3] == ["-m", "precision_tool.capture.op_replay"], sys.argv
    op_replay.replay_case = _crashing(op_replay.replay_case)
    sys.exit(op_replay.main(sys.argv[3:]))
