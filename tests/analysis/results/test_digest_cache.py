"""What a summary needs of a result CSV kept between commands (digest_cache.py): read back only while the
CSV is the one it came from, summarised exactly as the CSV is, and a damaged or unwritable cache only means
reading the CSV again."""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
from pathlib import Path

import pytest

from precision_tool.analysis.results import digest_cache
from precision_tool.analysis.results.results import read_result_csv, summarize
from precision_tool.errors import FormatError

CSV = ("Index,OpType,NPUDump,DataType,Address,GroundTruth,DataType,TensorIndex,Shape,CosineSimilarity,"
       "MaxAbsoluteError,CompareFailReason\r\n"
       "0,Add,a,float16,1,a,float32,a:input:0,[2],0.999,0.1,\r\n"
       "0,Add,a,float16,1,a,float32,a:output:0,[2],0.5,1.5,\r\n"
       "1,Mul,b,float16,1,b,float32,b:output:0,[2],nan,inf,\r\n"
       "2,Mul,c,NaN,NaN,c,NaN,NaN,NaN,NaN,NaN,no dump\r\n")


def _summaries(path: Path, cache: Path) -> tuple[str, str]:
    return repr(digest_cache.summarize_result_csv(path, 0.98, cache_dir=cache)), repr(summarize(read_result_csv(path)))


def _kept_only(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    def no_read(path: Path):  # type: ignore[no-untyped-def]
        raise AssertionError(f"{path} read again although its digest was kept")

    monkeypatch.setattr(digest_cache, "read_csv_digest", no_read)


def test_the_kept_digest_is_used_while_the_csv_is_unchanged(tmp_path: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    path, cache = tmp_path / "result_1.csv", tmp_path / "cache"
    path.write_bytes(CSV.encode())
    first, whole = _summaries(path, cache)
    assert first == whole
    _kept_only(monkeypatch)
    assert repr(digest_cache.summarize_result_csv(path, 0.98, cache_dir=cache)) == whole


@pytest.mark.parametrize("change", ["row added", "same size edited", "replaced by a copy", "moved"])
def test_a_changed_csv_is_read_again(tmp_path: Path, change: str) -> None:
    path, cache = tmp_path / "result_1.csv", tmp_path / "cache"
    path.write_bytes(CSV.encode())
    digest_cache.summarize_result_csv(path, 0.98, cache_dir=cache)
    stat = os.stat(path)
    if change == "row added":
        path.write_bytes((CSV + "3,Sub,d,float16,1,d,float32,d:output:0,[2],0.1,9.0,\r\n").encode())
    elif change == "same size edited":  # another cosine, the same bytes long, the same mtime and inode
        path.write_bytes(CSV.replace("0.999", "0.001").encode())
        os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    elif change == "replaced by a copy":  # another file (inode) with the old size and mtime
        other = tmp_path / "other.csv"
        other.write_bytes(CSV.replace("0.5,", "0.9,").encode())
        os.utime(other, ns=(stat.st_atime_ns, stat.st_mtime_ns))
        other.replace(path)
    else:
        moved = tmp_path / "moved"
        moved.mkdir()
        path = Path(shutil.move(str(path), moved / path.name))
    kept, whole = _summaries(path, cache)
    assert kept == whole


@pytest.mark.parametrize("damage", ["not json", "wrong ops", "another csv"])
def test_a_damaged_kept_digest_reads_the_csv(tmp_path: Path, damage: str) -> None:
    path, cache = tmp_path / "result_1.csv", tmp_path / "cache"
    path.write_bytes(CSV.encode())
    digest_cache.summarize_result_csv(path, 0.98, cache_dir=cache)
    (kept,) = (cache / "digests").glob("*.json")
    tree = json.loads(kept.read_text())
    if damage == "not json":
        kept.write_text(kept.read_text()[:40])
    elif damage == "wrong ops":
        tree["ops"][0] = ["short"]
        kept.write_text(json.dumps(tree))
    else:
        tree["csv"] = str(tmp_path / "result_2.csv")
        kept.write_text(json.dumps(tree))
    first, whole = _summaries(path, cache)
    assert first == whole


def test_an_unwritable_cache_still_summarises(tmp_path: Path) -> None:
    path, blocked = tmp_path / "result_1.csv", tmp_path / "cache"
    path.write_bytes(CSV.encode())
    blocked.write_text("a file where the cache folder would go")
    first, whole = _summaries(path, blocked)
    assert first == whole


def test_vcs_keeps_the_digest_and_shows_an_edited_csv_as_it_now_is(demo_workspace: Path, tmp_path: Path) -> None:
    from tests.conftest import run_demo_cli

    ws = tmp_path / "ws"
    shutil.copytree(demo_workspace, ws, symlinks=True)
    shutil.rmtree(ws / "temp" / "cache", ignore_errors=True)

    def vcs() -> str:
        proc = run_demo_cli("--data", str(ws), "vcs", "-l", "3")
        assert proc.returncode == 0, proc.stdout + proc.stderr
        return proc.stdout

    first = vcs()
    assert list((ws / "temp" / "cache" / "digests").glob("*.json"))
    assert vcs() == first  # from the kept digests
    newest = max((ws / "temp" / "vector_compare").iterdir(), key=lambda p: p.name)
    (csv,) = [p for p in newest.glob("result_*.csv") if "npu_vs_npu" not in p.name]
    lines = csv.read_text().splitlines(keepends=True)
    csv.write_text("".join(lines[:3]))  # a user cut the result down to two rows
    assert vcs() != first


def test_vcs_of_a_csv_with_no_workspace_around_it_makes_no_folder(tmp_path: Path) -> None:
    from tests.conftest import run_demo_cli

    path = tmp_path / "result_1.csv"
    path.write_bytes(CSV.encode())
    missing = tmp_path / "no_workspace"
    proc = run_demo_cli("--data", str(missing), "vcs", "-f", str(path))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "3 ops (2 abnormal)" in proc.stdout
    assert not missing.exists()


def test_only_the_newest_digests_are_kept(tmp_path: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """One digest per result CSV summarised (5 MB at 20,000 ops): beyond KEEP_BYTES in all the oldest go, so
    the cache stays bounded."""
    cache = tmp_path / "cache"
    paths = []
    for number in range(4):
        path = tmp_path / f"result_{number}.csv"
        path.write_bytes(CSV.encode())
        digest_cache.summarize_result_csv(path, 0.98, cache_dir=cache)
        written = digest_cache._cache_file(cache, path)
        os.utime(written, ns=(10**18 + number, 10**18 + number))  # written in this order, whatever the clock tick
        monkeypatch.setattr(digest_cache, "KEEP_BYTES", 2 * written.stat().st_size)  # room for two
        paths.append(path)
    kept = list((cache / "digests").glob("*.json"))
    assert {p.name for p in kept} == {digest_cache._cache_file(cache, p).name for p in paths[2:]}


def _stamp(path: Path) -> list[object]:
    data = path.read_bytes()
    return [len(data), hashlib.sha1(data).hexdigest()]


@pytest.mark.parametrize("change", [None, "same size edited", "replaced by a copy", "removed"])
@pytest.mark.parametrize("cache", [True, False])
def test_a_digest_this_process_wrote_is_used_while_its_csv_holds_those_bytes(
        tmp_path: Path, change: str | None, cache: bool) -> None:
    """`vc` hands its workers' digest to the summaries after it in the same process (remember_written, with
    the stamp of the bytes it wrote); any other bytes since, even of the same size, mtime and inode, are
    parsed."""
    path, cache_dir = tmp_path / "result_1.csv", (tmp_path / "cache") if cache else None
    path.write_bytes(CSV.encode())
    other = tmp_path / "other.csv"  # what the held digest says: told apart from the CSV's own rows
    other.write_bytes(CSV.replace("0.999", "0.100").encode())
    digest_cache.remember_written(path, digest_cache.read_csv_digest(other), _stamp(path))
    stat = os.stat(path)
    if change == "same size edited":
        path.write_bytes(CSV.replace("0.5,", "0.7,").encode())
        os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    elif change == "replaced by a copy":
        copy = tmp_path / "copy.csv"
        copy.write_bytes(CSV.replace("0.5,", "0.7,").encode())
        os.utime(copy, ns=(stat.st_atime_ns, stat.st_mtime_ns))
        copy.replace(path)
    elif change == "removed":
        path.unlink()
        with pytest.raises(FormatError, match="result_1.csv"):
            digest_cache.summarize_result_csv(path, 0.98, cache_dir=cache_dir)
        assert os.path.abspath(path) not in digest_cache._WRITTEN
        return
    got = repr(digest_cache.summarize_result_csv(path, 0.98, cache_dir=cache_dir))
    wanted = repr(summarize(read_result_csv(other if change is None else path)))
    assert got == wanted.replace(str(other), str(path))
    assert (os.path.abspath(path) in digest_cache._WRITTEN) == (change is None)


def test_only_the_newest_written_digests_are_held(tmp_path: Path) -> None:
    paths = []
    for number in range(digest_cache.KEPT_WRITTEN + 2):
        path = tmp_path / f"result_{number}.csv"
        path.write_bytes(CSV.encode())
        digest_cache.remember_written(path, digest_cache.read_csv_digest(path), _stamp(path))
        paths.append(os.path.abspath(path))
    assert list(digest_cache._WRITTEN)[-digest_cache.KEPT_WRITTEN:] == paths[2:]
    assert not set(paths[:2]) & set(digest_cache._WRITTEN)


def test_a_result_writer_s_stamp_is_that_of_its_file(tmp_path: Path) -> None:
    from precision_tool.analysis.results.result_writer import ResultWriter

    writer = ResultWriter(tmp_path / "result_1.csv", False)
    writer.write_text("0,Add,a,float16,1,a,float32,a:output:0,[2],0.5,\"µ, \"\"q\"\"\",\r\n")
    writer.finish()
    assert writer.stamp == _stamp(tmp_path / "result_1.csv")
    appended = ResultWriter(tmp_path / "result_1.csv", False, resume=True)
    appended.write_text("1,Mul,b,float16,1,b,float32,b:output:0,[2],0.5,\r\n")
    appended.finish()
    assert appended.stamp is None  # (its earlier bytes were not written by it)


def test_vcs_after_vc_in_one_shell_shows_what_parsing_the_csv_shows(demo_workspace: Path, tmp_path: Path,
                                                                      monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """In the shell `vcs` right after `vc` takes vc's digest (no parse: 0.4 s at 20,000 ops) and prints what
    the CSV read back prints; after the CSV is cut down it prints the cut file."""
    import io

    from precision_tool.config import load_settings
    from precision_tool.render.console import make_console
    from precision_tool.shell.command import Context
    from precision_tool.shell.dispatch import execute
    from precision_tool.shell.table import build_table
    from precision_tool.workspace import Workspace

    ws = tmp_path / "ws"
    shutil.copytree(demo_workspace, ws, symlinks=True)
    table = build_table()

    def run(line: str) -> str:
        out = io.StringIO()
        ctx = Context(settings=load_settings(data_dir=str(ws)), workspace=Workspace(ws),
                      console=make_console(file=out, width=100), table=table)
        assert execute(line, ctx).ok, out.getvalue()
        return out.getvalue()

    run("vc")
    with monkeypatch.context() as patch:
        _kept_only(patch)
        held = run("vcs -l 3")
    digest_cache._WRITTEN.clear()
    shutil.rmtree(ws / "temp" / "cache" / "digests", ignore_errors=True)
    assert held == run("vcs -l 3")  # parsed from the CSV
    run("vc")
    newest = max((ws / "temp" / "vector_compare").iterdir(), key=lambda p: p.name)
    (csv,) = [p for p in newest.glob("result_*.csv") if "npu_vs_npu" not in p.name]
    csv.write_text("".join(csv.read_text().splitlines(keepends=True)[:3]))  # a user cut it to two rows
    cut = run("vcs -l 3")
    assert "2 ops (0 abnormal) · 0 outputs" in cut.split("debug_0 vs debug_1")[0]  # the cut CSV, parsed
    assert os.path.abspath(csv) not in digest_cache._WRITTEN  # (its held digest let go)

    def other_run(text: str) -> str:  # (the second vc wrote a result folder of its own)
        return re.sub(r"\d{14}(_\d+)?", "TIME", text.split("debug_0 vs debug_1")[1])

    assert other_run(cut) == other_run(held)  # the other run's CSV, unchanged, from its held digest
    assert os.path.abspath(csv.with_name(csv.stem + "_npu_vs_npu.csv")) in digest_cache._WRITTEN
