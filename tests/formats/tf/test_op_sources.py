"""The source-line record (formats/tf/op_sources.py): built, written, read back, and refused when damaged."""

from __future__ import annotations

import json
import os
import sysconfig
from pathlib import Path

import pytest

from precision_tool.errors import FormatError
from precision_tool.formats.tf import op_sources as src

HERE = Path(__file__).resolve()
PACKAGE = Path(src.__file__).resolve().parents[2]


def _line_of(path: Path, needle: str) -> int:
    return next(n for n, line in enumerate(path.read_text().splitlines(), 1) if needle in line)


def test_a_record_round_trips_with_the_users_frame_and_its_lines(tmp_path: Path) -> None:
    library = os.path.join(sysconfig.get_paths()["purelib"], "tensorflow", "python", "ops", "nn_ops.py")
    here = _line_of(HERE, "def test_a_record_round_trips")  # this test file plays the user's model
    record = src.SourceRecord()
    stack = [("<frozen runpy>", 198, "_run_module_as_main"), (str(HERE), here, "build"),
             (library, 1200, "conv2d")]
    record.add("conv1/Conv2D", stack)
    record.add("conv1/BiasAdd", stack)  # the same code path: one shared stack
    record.add("loss", [(str(HERE), here + 1, "build")])
    path = tmp_path / "tf" / "source" / "op_sources.json"
    record.write(path)
    data = json.loads(path.read_text())
    assert len(data["stacks"]) == 2 and data["ops"]["conv1/Conv2D"] == data["ops"]["conv1/BiasAdd"]
    read = src.read_op_sources(path)
    assert read is not None
    frames = read.stack("conv1/Conv2D")
    assert [f.user for f in frames] == [False, True, False]
    user = src.user_frame(frames)
    assert user is not None and user.place == f"test_op_sources.py:{here} in build()"
    assert user.text == HERE.read_text().splitlines()[here - 1][:src.MAX_LINE_CHARS]
    numbers = [n for n, _ in read.context(user)]
    assert numbers == list(range(here - src.CONTEXT_LINES, here + src.CONTEXT_LINES + 1))
    assert frames[2].text is None  # library lines are not kept
    assert read.stack("no/such/op") is None


def test_whose_code_a_frame_is() -> None:
    purelib = sysconfig.get_paths()["purelib"]
    assert not src.is_user_file(os.path.join(purelib, "keras", "layers", "core.py"))
    assert not src.is_user_file(os.path.join(os.path.dirname(os.__file__), "runpy.py"))
    assert not src.is_user_file(str(PACKAGE / "tf_config.py"))  # this tool's own hooks
    assert src.is_user_file(str(PACKAGE / "demo" / "network.py"))  # the demo plays the user's model
    assert src.is_user_file("/home/someone/models/resnet.py")
    assert src.is_user_file("<string>") and not src.is_user_file("<frozen runpy>")


@pytest.mark.parametrize("content, says", [
    ("{not json", "is not valid JSON"),
    ('{"format": "other"}', "is not a source-line record"),
    ('{"format": "precision_tool.op_sources", "version": 99}', "newer than this tool reads"),
    ('{"format": "precision_tool.op_sources", "version": 1, "files": [], "frames": [[0, 1, "f"]], '
     '"stacks": [], "ops": {}, "lines": {}}', "missing or mistyped fields"),
    ('{"format": "precision_tool.op_sources", "version": 1, "files": [{"path": "a.py", "user": true}], '
     '"frames": [[0, 1, "f"]], "stacks": [[0]], "ops": {"op": 3}, "lines": {}}', "missing or mistyped fields"),
])
def test_a_damaged_record_is_one_line_naming_the_file(tmp_path: Path, content: str, says: str) -> None:
    path = tmp_path / "op_sources.json"
    path.write_text(content)
    with pytest.raises(FormatError) as caught:
        src.read_op_sources(path)
    message = str(caught.value)
    assert str(path) in message and says in message and "\n" not in message


def test_no_record_is_none(tmp_path: Path) -> None:
    assert src.read_op_sources(tmp_path / "missing.json") is None
