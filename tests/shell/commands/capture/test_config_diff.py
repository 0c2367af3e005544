"""`config-diff` as a user types it: help, one-line mistakes, the one-argument form, completion.
(Records from real captures, and `ac`'s section: tests/capture/test_run_config_capture.py.)"""

from __future__ import annotations

from pathlib import Path

from precision_tool.formats.run_config import new_record, write_run_config
from precision_tool.shell.command import CompletionRequest
from precision_tool.shell.table import build_table
from precision_tool.workspace import Workspace
from tests.conftest import run_cli


def _record(path: Path, side: str, seed: int, **options: object) -> None:
    write_run_config(path, new_record(side, "test", npu_options=dict(options),
                                      seeds={"seed": seed, "op_determinism": False, "python_hash_seed": str(seed)}))


def test_help_names_what_is_compared():
    result = run_cli("config-diff", "-h")
    assert result.status == 0
    for words in ("precision_mode", "seeds", "dropout", "environment", "-s, --side", "-r, --run N"):
        assert words in result.out, words


def test_mistakes_are_one_line(tmp_path):
    ws = Workspace(tmp_path / "precision_data")
    _record(ws.golden_run_config_file, "golden", 1)
    (tmp_path / "empty").mkdir()
    for args, words in ((("config-diff",), "config-diff: the following arguments are required: A"),
                        (("config-diff", "-s", "cpu", "x"), "-s/--side takes one of: golden, npu, both"),
                        (("config-diff", str(tmp_path / "nowhere")), "nowhere does not exist"),
                        (("config-diff", str(tmp_path / "empty")), "empty holds no run-config record"),
                        (("config-diff", str(ws.root), "-s", "npu"), "nothing to compare; npu: not compared")):
        result = run_cli(*args, data=ws.root)
        lines = [line for line in (result.out + result.err).splitlines() if line.strip()]
        assert result.status == 1 and len(lines) == 1 and words in lines[0], (args, lines)


def test_one_argument_compares_the_current_workspace_with_it(tmp_path):
    here, there = Workspace(tmp_path / "here"), Workspace(tmp_path / "there")
    _record(here.run_config_file(0), "npu", 1, precision_mode="allow_mix_precision")
    _record(there.run_config_file(2), "npu", 1, precision_mode="must_keep_origin_dtype")
    result = run_cli("config-diff", str(there.root), data=here.root)
    assert result.status == 0, result.err
    assert "A npu/debug_0" in result.out and "B npu/debug_2" in result.out
    assert "must_keep_origin_dtype" in result.out and "seed" not in result.out
    assert f"golden: not compared, no record in {here.root} and {there.root}" in result.out
    same = run_cli("config-diff", str(here.root), str(here.root), "-s", "npu")
    assert same.out.startswith("run config: no differences that matter between A npu/debug_0 and B npu/debug_0")


def test_completion_offers_paths_and_sides(tmp_path):
    (tmp_path / "precision_data").mkdir()
    command = build_table().get("config-diff")
    ws = Workspace(tmp_path)
    assert command.completer(CompletionRequest(["config-diff", "-s"], "g", "-s", ws)) == ["golden"]
    assert command.completer(CompletionRequest(["config-diff"], f"{tmp_path}/prec", None, ws)) == [
        f"{tmp_path}/precision_data/"]
