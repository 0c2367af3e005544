"""`infer DIR` on an msquickcmp output folder, then the commands a user runs on it, through the real CLI."""

from __future__ import annotations

import csv
import filecmp
import os
import math
import shutil
from pathlib import Path

from tests.infer.msquickcmp_output import DUMP_TIME, OM_MODEL, RESULT_TIME


def _rows(path: Path) -> list[list[str]]:
    with open(path, newline="") as handle:
        return list(csv.reader(handle))


def test_infer_links_each_part_where_the_workspace_reads_it(imported: Path, msquickcmp_out) -> None:  # type: ignore[no-untyped-def]
    run = msquickcmp_out.run
    graph = imported / "npu" / "debug_0" / "graph" / f"{OM_MODEL}_Build.json"
    assert graph.is_symlink() and graph.resolve() == (run / "model" / f"{OM_MODEL}.json").resolve()
    dump = imported / "npu" / "debug_0" / "dump" / DUMP_TIME
    assert dump.is_symlink() and dump.resolve() == (run / "dump_data" / "npu" / DUMP_TIME).resolve()
    golden = sorted(p.name for p in (imported / "tf" / "dump").iterdir())
    assert golden == sorted(p.name for p in (run / "dump_data" / "onnx").glob("*.npy"))
    assert all((imported / "tf" / "dump" / name).is_symlink() for name in golden)
    result = imported / "temp" / "vector_compare" / RESULT_TIME / f"result_{RESULT_TIME}.csv"
    assert not result.is_symlink() and filecmp.cmp(result, msquickcmp_out.result_csv, shallow=False)
    # the net outputs, acl.json and the inputs are not parts of a workspace
    assert not (imported / "npu" / "debug_0" / "dump" / "2024_01_01-12_00_02").exists()


def test_ls_and_ni_read_the_om_model_and_its_dumps(imported: Path, cli) -> None:  # type: ignore[no-untyped-def]
    listing = cli("ls", data=imported)
    assert listing.status == 0, listing.err
    assert f"debug_0 · {OM_MODEL}_Build.json · sub_model_NPU_0" in listing.out
    assert "19 op(s)" in listing.out
    node = cli("ni", "Concat_1211", data=imported)
    assert node.status == 0, node.err
    assert "ConcatD" in node.out and "golden Concat_1211.0" in node.out
    assert f"dump/{DUMP_TIME}/0/{OM_MODEL}/1/0/ConcatD.Concat_1211." in node.out
    assert "tf/dump/Concat_1211.0.1704067200000078.npy" in node.out


def test_vcs_shows_msquickcmp_result(imported: Path, cli, msquickcmp_out) -> None:  # type: ignore[no-untyped-def]
    rows = _rows(msquickcmp_out.result_csv)
    header = rows[0]
    assert header[-3:] == ["IsNpuOps", "IsOutputNode", "IsPrecisionError"]
    cosine = header.index("CosineSimilarity")
    compared = sum(1 for r in rows[1:] if not math.isnan(float(r[cosine])))
    summary = cli("vcs", data=imported)
    assert summary.status == 0, summary.err
    assert f"result_{RESULT_TIME}.csv" in summary.out
    assert f"18 ops, {compared} of {len(rows) - 1} tensors compared, 4 abnormal" in summary.out
    # the overflow the NPU side holds: an inf after the boxes' Cast is where the error is born
    assert "first divergent op: [1] trans_Cast_0" in summary.out
    assert "Concat_1211" in summary.out and "0.056692" in summary.out
    # msquickcmp's own verdict agrees on the op vcs names first
    flagged = {r[header.index("TensorIndex")] for r in rows[1:] if r[-1] == "YES"}
    assert "Concat_1211:output:0" in flagged


def test_ac_recaps_the_imported_result(imported: Path, cli) -> None:  # type: ignore[no-untyped-def]
    checks = cli("ac", data=imported)
    assert checks.status == 0, checks.err
    assert f"result_{RESULT_TIME}.csv: first divergent op [1] trans_Cast_0" in checks.out
    assert "trans_Cast_0, trans_Cast_2" in checks.out  # the Cast check read the om model's graph


def test_vc_compares_the_imported_dumps_again(imported: Path, cli, msquickcmp_out, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    data = tmp_path / "precision_data"
    shutil.copytree(imported, data, symlinks=True)  # the shared workspace stays as imported
    again = cli("vc", data=data)
    assert again.status == 0, again.out + again.err
    (new,) = [p for p in (data / "temp" / "vector_compare").glob("*/result_*.csv") if RESULT_TIME not in p.name]
    theirs = [row[:-3] for row in _rows(msquickcmp_out.result_csv)]  # without msquickcmp's three columns
    assert _rows(new) == theirs


def test_copy_makes_a_workspace_that_outlives_the_folder(msquickcmp_out, cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    source = tmp_path / "out"
    shutil.copytree(msquickcmp_out.output, source)
    data = tmp_path / "precision_data"
    result = cli("infer", str(source / "20240101120000"), "--copy", data=data)
    assert result.status == 0, result.out + result.err
    shutil.rmtree(source)
    links = [p for p in data.rglob("*") if p.is_symlink()]
    assert links == []
    summary = cli("vcs", data=data)
    assert "4 abnormal" in summary.out
    node = cli("ni", "Slice_1218", data=data)
    assert node.status == 0 and "golden Slice_1218.0" in node.out


def test_a_second_import_is_refused_then_forced_aside(msquickcmp_out, cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    data = tmp_path / "precision_data"
    assert cli("infer", str(msquickcmp_out.output), data=data).status == 0
    before = sorted(str(p) for p in data.rglob("*"))
    refused = cli("infer", str(msquickcmp_out.output), data=data)
    assert refused.status == 1
    lines = [line for line in (refused.out + refused.err).splitlines() if line.strip()]
    assert len(lines) == 1 and "already holds" in lines[0] and "--force" in lines[0]
    assert sorted(str(p) for p in data.rglob("*")) == before
    forced = cli("infer", str(msquickcmp_out.output), "--force", data=data)
    assert forced.status == 0, forced.out + forced.err
    assert "moved aside" in forced.out
    aside = [p for p in (data / "npu" / "debug_0").iterdir() if ".before_infer_" in p.name]
    assert sorted(p.name.split(".")[0] for p in aside) == ["dump", "graph"]
    old_graph = next(p for p in aside if p.name.startswith("graph"))
    assert (old_graph / f"{OM_MODEL}_Build.json").is_symlink()  # moved, not deleted
    assert (data / "npu" / "debug_0" / "graph" / f"{OM_MODEL}_Build.json").is_symlink()
    assert cli("vcs", data=data).status == 0


def test_errors_are_one_line(cli, tmp_path: Path, msquickcmp_out) -> None:  # type: ignore[no-untyped-def]
    def one_line(*args: str) -> str:
        result = cli(*args, data=tmp_path / "pd")
        assert result.status == 1, result.out
        text = [line for line in (result.out + result.err).splitlines()
                if line.strip() and "does not exist; fix the path" not in line]
        assert len(text) == 1 and "Traceback" not in result.err, result.out + result.err
        return text[0]

    assert "does not exist" in one_line("infer", str(tmp_path / "nowhere"))
    a_file = tmp_path / "file.txt"
    a_file.write_text("x")
    assert "is a file, not a folder" in one_line("infer", str(a_file))
    (tmp_path / "empty").mkdir()
    message = one_line("infer", str(tmp_path / "empty"))
    assert "holds no msquickcmp output" in message and "model/*.json" in message and "result_*.csv" in message
    bad_model = tmp_path / "bad_model" / "20240101000000"
    (bad_model / "model").mkdir(parents=True)
    (bad_model / "model" / "m.json").write_text('{"name": "m"}')
    assert "m.json" in one_line("infer", str(bad_model))
    bad_csv = tmp_path / "bad_csv" / "20240101000000"
    bad_csv.mkdir(parents=True)
    (bad_csv / "result_20240101000001.csv").write_text("a,b\n1,2\n")
    assert "not an msaccucmp/vc result CSV" in one_line("infer", str(bad_csv))
    assert not (tmp_path / "pd").exists()  # nothing half-written


def test_one_shot_from_a_terminal_opens_the_shell_on_the_import(msquickcmp_out, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """`cli.py infer DIR` in a terminal, as the original: the import, then the shell on that workspace."""
    import sys

    import pexpect

    from tests.shell.conftest import PROMPT, ROOT, run_line

    data = tmp_path / "precision_data"
    env = {k: v for k, v in os.environ.items() if k not in ("PRECISION_TOOL_CONFIG", "PRECISION_DATA")}
    env.update({"NO_COLOR": "1", "TERM": "xterm", "PROMPT_TOOLKIT_NO_CPR": "1", "COLUMNS": "200", "LINES": "40",
                "PRECISION_TOOL_HISTORY": str(tmp_path / "history")})
    child = pexpect.spawn(sys.executable, [str(ROOT / "precision_tool" / "cli.py"), "--data", str(data), "infer",
                                           str(msquickcmp_out.output)],
                          env=env, encoding="utf-8", timeout=30, dimensions=(40, 200), cwd=str(tmp_path))
    try:
        child.expect_exact("Imported msquickcmp output")
        child.expect_exact(PROMPT)
        assert f"result_{RESULT_TIME}.csv" in run_line(child, "vcs")
    finally:
        child.close(force=True)
