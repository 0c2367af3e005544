"""read_manifest checks a manifest's structure before anything reads a field (no TensorFlow here): a missing
or mistyped key, a missing fetch file, a file name outside the capture folder — each one FormatError line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from precision_tool.capture import step_manifest as sm
from precision_tool.errors import FormatError, WorkspaceError

from .conftest import fake_tf1_capture


_tf1_capture = fake_tf1_capture


def _keras_capture(folder: Path) -> dict:
    for name in ("model.keras", "inputs/000_x.npy"):
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_bytes(b"x")
    sm.write_manifest(folder, sm.KIND_KERAS, {"model": "model.keras", "structure": {"x": "array", "y": None},
                                              "inputs": [{"tensor": "x", "role": "x", "file": "inputs/000_x.npy"}]})
    return json.loads((folder / sm.MANIFEST_NAME).read_text())


def _rewrite(folder: Path, data: dict) -> None:
    (folder / sm.MANIFEST_NAME).write_text(json.dumps(data))


def _one_line_format_error(folder: Path) -> str:
    with pytest.raises(FormatError) as caught:
        sm.read_manifest(folder)
    text = str(caught.value)
    assert "\n" not in text and text.startswith(str(folder / sm.MANIFEST_NAME))
    assert "capture the step again" in text
    return text


def test_complete_captures_are_accepted(tmp_path) -> None:
    (tf1 := tmp_path / "tf1").mkdir()
    (keras := tmp_path / "keras").mkdir()
    _tf1_capture(tf1)
    _keras_capture(keras)
    assert sm.read_manifest(tf1).kind == "tf1" and sm.read_manifest(keras).kind == "keras"


@pytest.mark.parametrize("change, words", [
    (lambda d: d.pop("meta_graph"), "'meta_graph' is missing in a 'tf1' step capture"),
    (lambda d: d.update(meta_graph=7), "'meta_graph' must be a non-empty str"),
    (lambda d: d.update(checkpoint=["model"]), "'checkpoint' must be a file name or null"),
    (lambda d: d.update(inputs={"x:0": "a.npy"}), "'inputs' must be a list"),
    (lambda d: d["inputs"].append("x:0"), "inputs[1] must be an object"),
    (lambda d: d["inputs"][0].pop("tensor"), "inputs[0] needs a 'tensor' string"),
    (lambda d: d["inputs"][0].pop("file"), "inputs[0] needs a 'file' string"),
    (lambda d: d["fetches"][0].pop("name"), "fetches[0] needs a 'name' string"),
    (lambda d: d["fetches"][0].update(file=3), "fetches[0]: 'file' must be a file name or null"),
])
def test_a_tf1_manifest_with_a_missing_or_mistyped_key_is_one_line(tmp_path, change, words) -> None:
    data = _tf1_capture(tmp_path)
    change(data)
    _rewrite(tmp_path, data)
    assert words in _one_line_format_error(tmp_path)


def test_a_keras_manifest_without_its_model_or_roles_is_one_line(tmp_path) -> None:
    data = _keras_capture(tmp_path)
    _rewrite(tmp_path, {k: v for k, v in data.items() if k != "model"})
    assert "'model' is missing in a 'keras' step capture" in _one_line_format_error(tmp_path)
    data["inputs"][0].pop("role")
    _rewrite(tmp_path, data)
    assert "inputs[0] needs a 'role' string" in _one_line_format_error(tmp_path)


@pytest.mark.parametrize("key, name", [
    ("meta_graph", "/etc/passwd"), ("meta_graph", "../model.meta"), ("checkpoint", "sub/../../model"),
    ("inputs", "/etc/x"), ("fetches", "../../secret.npy"), ("session_config", "C:\\config.pb"),
])
def test_file_names_outside_the_capture_folder_are_refused(tmp_path, key, name) -> None:
    data = _tf1_capture(tmp_path)
    if key in ("inputs", "fetches"):
        data[key][0]["file"] = name
    else:
        data[key] = name
    _rewrite(tmp_path, data)
    text = _one_line_format_error(tmp_path)
    assert repr(name) in text and "outside the capture folder" in text


def test_a_missing_fetch_file_is_found_before_the_replay(tmp_path) -> None:
    data = _tf1_capture(tmp_path)
    (tmp_path / data["fetches"][0]["file"]).unlink()
    with pytest.raises(WorkspaceError) as caught:
        sm.read_manifest(tmp_path)
    assert "missing" in str(caught.value) and "fetches/000_loss_0.npy" in str(caught.value)
