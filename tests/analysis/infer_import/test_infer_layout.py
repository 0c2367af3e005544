"""The importer on the layouts msquickcmp's versions write (docs/infer.md): TF golden names with a repeat
count, ONNX names shortened through mapping.csv, several runs under one -o folder, om-against-om JSONs."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest

from precision_tool.analysis.infer_import import import_msquickcmp
from precision_tool.errors import WorkspaceError
from precision_tool.workspace import Workspace
from tests.analysis.infer_import.msquickcmp_output import DUMP_TIME, OM_MODEL, RUN_TIME
from tests.tools.real_dumps import OM_MODEL_JSON


def _run(tmp_path: Path, name: str = RUN_TIME) -> Path:
    run = tmp_path / "out" / name
    (run / "model").mkdir(parents=True)
    shutil.copyfile(OM_MODEL_JSON, run / "model" / f"{OM_MODEL}.json")
    return run


def test_tf_golden_names_lose_the_repeat_count(tmp_path: Path) -> None:
    """msit's TF side: `<tensor / and : → _ and .>.<µs>.<repeat>.npy`; the first of each tensor is the golden,
    renamed to the `<op>.<slot>.<timestamp>.npy` msaccucmp and `vc` read."""
    tf = _run(tmp_path) / "dump_data" / "tf"
    tf.mkdir(parents=True)
    first, again = np.arange(4, dtype=np.float32), np.zeros(4, np.float32)
    np.save(tf / "conv1_Relu.0.1704067200000001.0.npy", first)
    np.save(tf / "conv1_Relu.0.1704067200000009.1.npy", again)
    np.save(tf / "fc_MatMul.0.17040672.0.npy", first)  # a short timestamp is padded to 16 digits
    np.save(tf / "old_style.1.1704067200000003.npy", first)  # Ascend/tools msquickcmp: no repeat count
    imported = import_msquickcmp(tmp_path / "out", Workspace(tmp_path / "pd"))
    golden = tmp_path / "pd" / "tf" / "dump"
    assert sorted(p.name for p in golden.iterdir()) == [
        "conv1_Relu.0.1704067200000001.npy", "fc_MatMul.0.0000000017040672.npy", "old_style.1.1704067200000003.npy"]
    assert np.array_equal(np.load(golden / "conv1_Relu.0.1704067200000001.npy"), first)
    assert any("repeated TF tensor" in line for line in imported.skipped)


def test_onnx_names_shortened_by_msquickcmp_get_their_real_name_back(tmp_path: Path) -> None:
    onnx = _run(tmp_path) / "dump_data" / "onnx"
    onnx.mkdir(parents=True)
    long_name = "very_" * 30 + "long_node.0.1704067200000001.npy"
    np.save(onnx / "17040672000000010.npy", np.ones(3, np.float32))
    (onnx / "mapping.csv").write_text(f"17040672000000010.npy,{long_name}\n")
    import_msquickcmp(tmp_path / "out", Workspace(tmp_path / "pd"))
    assert [p.name for p in (tmp_path / "pd" / "tf" / "dump").iterdir()] == [long_name]


def test_the_newest_run_is_imported_and_the_others_named(tmp_path: Path) -> None:
    _run(tmp_path, "20240101000000")
    newest = _run(tmp_path, "20240202000000")
    imported = import_msquickcmp(tmp_path / "out", Workspace(tmp_path / "pd"))
    assert imported.source == newest
    assert imported.other_runs == (tmp_path / "out" / "20240101000000",)


def test_the_newest_run_is_chosen_by_its_time_folder_not_its_shape_folder(tmp_path: Path) -> None:
    """A dynamic-shape run is `{time}/{shape}`: January's shape folder sorts after February's by name, but
    February's run is the newest."""
    _run(tmp_path, "20240101000000/1_3_224_224")
    newest = _run(tmp_path, "20240202000000/1_3_100_100")
    imported = import_msquickcmp(tmp_path / "out", Workspace(tmp_path / "pd"))
    assert imported.source == newest
    assert imported.other_runs == (tmp_path / "out" / "20240101000000" / "1_3_224_224",)
    # two shapes of one run: the order is the path's
    _run(tmp_path, "20240202000000/1_3_300_300")
    again = import_msquickcmp(tmp_path / "out", Workspace(tmp_path / "pd2"))
    assert again.source == tmp_path / "out" / "20240202000000" / "1_3_300_300"


def test_om_against_om_takes_the_json_of_the_dumped_model(tmp_path: Path) -> None:
    run = _run(tmp_path)
    shutil.copyfile(OM_MODEL_JSON, run / "model" / "a_golden_model.json")  # sorts first
    dump = run / "dump_data" / "npu" / DUMP_TIME / "0" / OM_MODEL / "1" / "0"
    dump.mkdir(parents=True)
    (dump / "Cast.trans_Cast_0.1.0.1704067200000012").write_bytes(b"\0" * 8)
    (run / "dump_data" / "npu_golden").mkdir()
    imported = import_msquickcmp(run, Workspace(tmp_path / "pd"))
    graph = imported.part("Build graph")
    assert graph is not None and graph.source.name == f"{OM_MODEL}.json"
    assert any("a_golden_model.json" in line for line in imported.skipped)
    assert any("npu_golden" in line for line in imported.skipped)


def test_force_moves_a_golden_folder_aside(tmp_path: Path) -> None:
    onnx = _run(tmp_path) / "dump_data" / "onnx"
    onnx.mkdir(parents=True)
    np.save(onnx / "n.0.1704067200000001.npy", np.ones(2, np.float32))
    mine = tmp_path / "pd" / "tf" / "dump"
    mine.mkdir(parents=True)
    np.save(mine / "mine.0.1704067200000001.npy", np.zeros(2, np.float32))
    (tmp_path / "pd" / "temp" / "vector_compare" / "empty").mkdir(parents=True)  # holds nothing: no conflict
    with pytest.raises(WorkspaceError, match=r"already holds tf/dump; an import replaces them all"):
        import_msquickcmp(tmp_path / "out", Workspace(tmp_path / "pd"))
    imported = import_msquickcmp(tmp_path / "out", Workspace(tmp_path / "pd"), force=True)
    ((old, aside),) = imported.moved_aside
    assert old == mine and aside.parent.parent.name.startswith("before_infer_") and aside.relative_to(
        aside.parent.parent) == Path("tf/dump")
    assert (aside / "mine.0.1704067200000001.npy").is_file()
    assert [p.name for p in mine.iterdir()] == ["n.0.1704067200000001.npy"]
    assert not (tmp_path / "pd" / "temp" / "vector_compare").exists()  # the empty folders went with staging
    assert sorted(p.name.split("_2")[0] for p in (tmp_path / "pd").iterdir()) == [
        "before_infer", "npu", "temp", "tf"]
