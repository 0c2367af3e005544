"""`infer DIR` on an msquickcmp output folder, then the commands a user runs on it, through the real CLI."""

from __future__ import annotations

import csv
import filecmp
import hashlib
import math
import re
import os
import resource
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import numpy as np

from tests.conftest import ROOT

from tests.analysis.infer_import.msquickcmp_output import DUMP_TIME, OM_MODEL, RESULT_TIME


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
    cosine, tensor = header.index("CosineSimilarity"), header.index("TensorIndex")
    outputs = [r for r in rows[1:] if ":output:" in r[tensor]]
    compared = sum(1 for r in outputs if not math.isnan(float(r[cosine])) or r[cosine].strip() != "NaN")
    summary = cli("vcs", data=imported)
    assert summary.status == 0, summary.err
    assert f"result_{RESULT_TIME}.csv" in summary.out
    assert re.search(rf"18 ops \(4 abnormal\) · {len(outputs)} outputs: {compared} compared, ", summary.out), summary.out
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


def _snapshot(root: Path) -> dict[str, str]:
    """Every path under `root` (links not followed): what it is and what it holds."""
    found = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames:
            path = Path(dirpath) / name
            rel = str(path.relative_to(root))
            if path.is_symlink():
                found[rel] = "link " + os.readlink(path)
            elif path.is_dir():
                found[rel] = "folder"
            else:
                found[rel] = "file " + hashlib.sha1(path.read_bytes()).hexdigest()
    return found


REPLACED = ["npu/debug_0", "npu/debug_1", "tf/tf_debug", "tf/checkpoints", "tf/dump", "temp/vector_compare"]


def _old_workspace(data: Path, msquickcmp_out, cli) -> None:  # type: ignore[no-untyped-def]
    """A workspace holding every part an import replaces: an earlier import (debug_0's graph and dump,
    tf/dump, a result), a second NPU run, tfdbg dumps, a captured step, and a result newer than the import's."""
    assert cli("infer", str(msquickcmp_out.output), data=data).status == 0
    for rel in ("npu/debug_1/dump/20990101000000/x", "tf/tf_debug/run_1/x", "tf/checkpoints/manifest.json"):
        (data / rel).parent.mkdir(parents=True)
        (data / rel).write_text("old " + rel)
    newer = data / "temp" / "vector_compare" / "20990101000000"
    newer.mkdir()
    shutil.copyfile(msquickcmp_out.result_csv, newer / "result_20990101000000.csv")


def test_a_second_import_is_refused_then_forced_aside_as_a_whole(msquickcmp_out, cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """--force moves every part an import replaces aside (kept, with its path) so nothing old mixes with the
    import: not just the folders the import writes into (the old graph, tfdbg dumps, results stayed)."""
    data = tmp_path / "precision_data"
    _old_workspace(data, msquickcmp_out, cli)
    before = _snapshot(data)
    refused = cli("infer", str(msquickcmp_out.output), data=data)
    assert refused.status == 1
    lines = [line for line in (refused.out + refused.err).splitlines() if line.strip()]
    assert len(lines) == 1 and "already holds" in lines[0] and "--force" in lines[0], lines
    assert all(part in lines[0] for part in REPLACED), lines[0]
    assert _snapshot(data) == before
    forced = cli("infer", str(msquickcmp_out.output), "--force", data=data)
    assert forced.status == 0, forced.out + forced.err
    assert "moved aside" in forced.out
    (aside,) = data.glob("before_infer_*")
    # every old part, moved with its path and contents: nothing deleted
    old_parts = {rel: kind for rel, kind in before.items() if any(rel == p or rel.startswith(p + "/") for p in REPLACED)}
    assert {rel: kind for rel, kind in _snapshot(aside).items() if rel not in ("npu", "tf", "temp")} == old_parts
    assert not any(p.name.startswith(".infer_tmp_") for p in data.iterdir())
    # what is left is the import alone
    assert not (data / "npu" / "debug_1").exists()
    assert not (data / "tf" / "tf_debug").exists() and not (data / "tf" / "checkpoints").exists()
    assert [p.name for p in (data / "temp" / "vector_compare").iterdir()] == [RESULT_TIME]
    summary = cli("vcs", data=data)
    assert summary.status == 0 and f"result_{RESULT_TIME}.csv" in summary.out, summary.out + summary.err
    assert "20990101000000" not in summary.out
    assert (data / "npu" / "debug_0" / "graph" / f"{OM_MODEL}_Build.json").is_symlink()


def _cli_with_file_size_limit(limit: int, *args: str, data: Path) -> tuple[int, str]:
    """The CLI in a child whose files may not grow past `limit` bytes: a bigger write fails with EFBIG
    (SIGXFSZ ignored, so the write returns the error instead of killing the process)."""
    def limit_file_size() -> None:
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    env = {k: v for k, v in os.environ.items() if k not in ("PRECISION_TOOL_CONFIG", "PRECISION_DATA")}
    env.update({"COLUMNS": "200", "NO_COLOR": "1", "PYTHONDONTWRITEBYTECODE": "1"})
    proc = subprocess.run([sys.executable, str(ROOT / "precision_tool" / "cli.py"), "--data", str(data), *args],
                          capture_output=True, text=True, env=env, cwd=ROOT, preexec_fn=limit_file_size,
                          timeout=600)
    return proc.returncode, proc.stdout + proc.stderr


def test_a_copy_that_fails_to_write_leaves_the_workspace_as_it_was(msquickcmp_out, cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """A real write error halfway through --copy (the graph and the dumps are copied, a golden tensor is too
    big): nothing of the import stays, the old parts are where they were, and the one line names the file
    in the workspace that could not be written, with the system's reason."""
    source = tmp_path / "out"
    shutil.copytree(msquickcmp_out.output, source)
    golden = source / "20240101120000" / "dump_data" / "onnx"
    big = "big_node.0.1704067200000999.npy"
    np.save(golden / big, np.zeros(1 << 21, np.float32))  # 8 MiB, past the 2 MiB limit
    limit = 2 << 20
    assert all(p.stat().st_size < limit for p in source.rglob("*") if p.is_file() and p.name != big)

    data = tmp_path / "precision_data"
    _old_workspace(data, msquickcmp_out, cli)
    before = _snapshot(data)
    status, out = _cli_with_file_size_limit(limit, "infer", str(source), "--copy", "--force", data=data)
    assert status == 1, out
    lines = [line for line in out.splitlines() if line.strip()]
    assert len(lines) == 1 and "Traceback" not in out, out
    assert f"cannot write {data / 'tf' / 'dump' / big}: File too large" in lines[0], lines[0]
    assert str(golden) not in lines[0]  # the target, not the source
    assert "left as it was" in lines[0]
    after = _snapshot(data)
    after.pop("temp/precision_tool.log", None)  # the tool's own log of the failure
    before.pop("temp/precision_tool.log", None)
    assert after == before

    # into a workspace that did not exist: it still does not
    fresh = tmp_path / "fresh" / "precision_data"
    status, out = _cli_with_file_size_limit(limit, "infer", str(source), "--copy", data=fresh)
    assert status == 1 and f"cannot write {fresh / 'tf' / 'dump' / big}: File too large" in out, out
    assert not (tmp_path / "fresh").exists() or not any((tmp_path / "fresh").iterdir())


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
