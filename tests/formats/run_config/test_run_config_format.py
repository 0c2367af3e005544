"""run_config.json read back: a record round-trips; every bad file is one FormatError line naming it."""

from __future__ import annotations

import json

import pytest

from precision_tool.errors import FormatError
from precision_tool.formats.run_config import FORMAT_VERSION, new_record, read_run_config, write_run_config


def _record(**sections):
    return new_record("npu", "test", npu_options={"precision_mode": "force_fp32"},
                      seeds={"seed": 3, "seed_from": "default", "op_determinism": False, "python_hash_seed": "3"},
                      env={"TF_ENABLE_ONEDNN_OPTS": "0"}, **sections)


def test_a_record_round_trips_and_leaves_no_temp_file(tmp_path):
    path = write_run_config(tmp_path / "run_config.json", _record(dropout=[{"scope": "d", "rate": 0.5}]))
    record = read_run_config(path)
    assert record.side == "npu" and record.data["version"] == FORMAT_VERSION
    assert record.section("npu_options") == {"precision_mode": "force_fp32"}
    assert record.section("dropout") == [{"scope": "d", "rate": 0.5}]
    assert record.section("loss_scale") is None  # unknown, not "none"
    assert [p.name for p in tmp_path.iterdir()] == ["run_config.json"]


@pytest.mark.parametrize("text, words", [
    ("{not json", "not readable JSON"),
    ('{"format": "something else", "version": 1}', "not a run-config record"),
    (None, "newer than this precision_tool reads"),
    ('{"format": "precision_tool.run_config", "version": 1, "side": "cpu"}', "neither golden nor npu"),
    ('{"format": "precision_tool.run_config", "version": "1", "side": "npu"}', "not a version number"),
])
def test_a_bad_record_is_one_line_naming_the_file(tmp_path, text, words):
    path = tmp_path / "run_config.json"
    if text is None:
        data = _record()
        data["version"] = FORMAT_VERSION + 1
        text = json.dumps(data)
    path.write_text(text)
    with pytest.raises(FormatError) as caught:
        read_run_config(path)
    message = str(caught.value)
    assert str(path) in message and words in message and "\n" not in message


@pytest.mark.parametrize("section, value, words", [
    ("npu_options", ["precision_mode"], "holds list, not dict"),
    ("env", {"TF_X": {"nested": 1}}, "'TF_X' is not a plain value"),
    ("dropout", [{"rate": 0.5}], "not a {scope, rate} object"),
])
def test_a_damaged_section_is_named(tmp_path, section, value, words):
    data = _record()
    data[section] = value
    path = tmp_path / "run_config.json"
    path.write_text(json.dumps(data))
    with pytest.raises(FormatError, match=words.replace("{", r"\{").replace("}", r"\}")):
        read_run_config(path)


def test_a_missing_record_says_who_writes_one(tmp_path):
    with pytest.raises(FormatError, match="capture hooks write it"):
        read_run_config(tmp_path / "run_config.json")
