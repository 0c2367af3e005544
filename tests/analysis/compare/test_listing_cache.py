"""A dump folder's index and a golden folder's listing kept between runs (listing_cache.py): the same as
listed, used only while every folder watched is as it was, never kept while a folder is changing, and a
damaged or unwritable cache only means listing again."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from precision_tool.analysis.compare import listing_cache
from precision_tool.analysis.compare.matching import index_dumps
from precision_tool.formats.tf import golden as golden_module
from precision_tool.formats.tf.golden import golden_file_paths

OLD_NS = 1_600_000_000 * 10**9  # long before any listing: nothing here is "still changing"


def _age(*folders: Path) -> None:
    for folder in folders:
        os.utime(folder, ns=(OLD_NS, OLD_NS))


def _dump_tree(root: Path) -> tuple[Path, list[Path]]:
    """A dump tree of two iteration folders, a numbered file named by mapping.csv, a file that is no dump,
    a statistics CSV and an older dump of the same op (the latest wins)."""
    dump = root / "dump"
    step0, step1 = dump / "20240101" / "0" / "graph_1" / "1" / "0", dump / "20240101" / "0" / "graph_1" / "1" / "1"
    for folder in (step0, step1, step0.parent / "2"):  # 2: empty, for now
        folder.mkdir(parents=True)
    for name in ("Add.net_add.1.2.1700000000000001", "Add.net_add.1.2.1700000000000000",
                 "MatMulV2.net_dense_MatMul.3.2.1700000000000005", "not_a_dump", "notes.txt",
                 "Conv2D.net_conv.4.2.1700000000000002.csv"):
        (step0 / name).write_bytes(b"")
    (step0 / "42").write_bytes(b"")
    (step0 / "mapping.csv").write_text("42,Relu.net_a_very_long_relu_name.7.2.1700000000000009\n")
    (step1 / "Add.net_add.1.2.1700000000000101").write_bytes(b"")
    folders = [dump, *dump.rglob("*")]
    folders = [f for f in folders if f.is_dir()]
    _age(*folders, step0 / "mapping.csv")
    return dump, folders


def _same(a, b) -> None:  # type: ignore[no-untyped-def]
    assert (a.by_op, a.names, a.ignored, a.stats_files) == (b.by_op, b.names, b.ignored, b.stats_files)


@pytest.mark.parametrize("step", [None, 0, 1])
def test_a_kept_index_reads_as_listed_and_is_used_while_nothing_changes(tmp_path: Path, step, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    dump, _ = _dump_tree(tmp_path)
    cache = tmp_path / "cache"
    listed = index_dumps(dump, with_graph=True, step=step)
    assert listed.by_op and (step == 1 or "net_a_very_long_relu_name" in listed.by_op)
    first = listing_cache.cached_dump_index(dump, cache, with_graph=True, step=step)
    _same(first, listed)
    assert len(list((cache / "listings").glob("*.json"))) == 1

    def no_listing(*args, **kwargs):  # type: ignore[no-untyped-def]
        raise AssertionError("listed again although nothing changed")

    monkeypatch.setattr(listing_cache, "index_dumps", no_listing)
    _same(listing_cache.cached_dump_index(dump, cache, with_graph=True, step=step), listed)


def test_the_key_keeps_runs_with_and_without_a_graph_and_of_other_steps_apart(tmp_path: Path) -> None:
    dump, _ = _dump_tree(tmp_path)
    cache = tmp_path / "cache"
    for with_graph in (True, False):
        for step in (None, 0, 1):
            _same(listing_cache.cached_dump_index(dump, cache, with_graph=with_graph, step=step),
                  index_dumps(dump, with_graph=with_graph, step=step))
    assert len(list((cache / "listings").glob("*.json"))) == 6


@pytest.mark.parametrize("change", ["new file", "new folder", "empty folder filled", "removed file", "mapping rewritten",
                                    "replaced folder"])
def test_any_change_to_a_watched_folder_lists_again(tmp_path: Path, change: str) -> None:
    dump, folders = _dump_tree(tmp_path)
    cache = tmp_path / "cache"
    listing_cache.cached_dump_index(dump, cache, with_graph=True, step=None)
    step0 = dump / "20240101" / "0" / "graph_1" / "1" / "0"
    if change == "new file":
        (step0 / "Mul.net_mul.9.2.1700000000000011").write_bytes(b"")
    elif change == "new folder":  # made and filled: its parent's mtime moved when it was made
        (step0.parent / "3").mkdir()
        (step0.parent / "3" / "Mul.net_mul.9.2.1700000000000011").write_bytes(b"")
    elif change == "empty folder filled":  # its parent's mtime stays: the empty folder itself is watched
        (step0.parent / "2" / "Mul.net_mul.9.2.1700000000000011").write_bytes(b"")
    elif change == "removed file":
        (step0 / "MatMulV2.net_dense_MatMul.3.2.1700000000000005").unlink()
    elif change == "mapping rewritten":  # in place: the folder's own mtime does not move
        (step0 / "mapping.csv").write_text("42,Relu.net_other_relu.7.2.1700000000000009\n")
        _age(step0)
    else:  # the same names in a folder put in its place, mtimes as they were (cp -a): another inode
        step1 = step0.parent / "1"
        step1.rename(tmp_path / "old_step1")
        (tmp_path / "new_step1").mkdir()
        (tmp_path / "new_step1" / "Sub.net_sub.1.2.1700000000000101").write_bytes(b"")
        (tmp_path / "new_step1").rename(step1)
        _age(step1, step0.parent)
    _same(listing_cache.cached_dump_index(dump, cache, with_graph=True, step=None),
          index_dumps(dump, with_graph=True, step=None))


def test_a_folder_still_changing_is_not_kept(tmp_path: Path) -> None:
    dump, _ = _dump_tree(tmp_path)
    (dump / "20240101" / "0" / "graph_1" / "1" / "0" / "Mul.net_mul.9.2.1700000000000011").write_bytes(b"")
    cache = tmp_path / "cache"
    _same(listing_cache.cached_dump_index(dump, cache, with_graph=True, step=None),
          index_dumps(dump, with_graph=True, step=None))
    assert not list(cache.rglob("*.json"))  # a second change in the same clock tick would go unseen


@pytest.mark.parametrize("damage", ["not json", "wrong ops", "ops and files apart", "wrong version", "names changed",
                                    "names cut"])
def test_a_damaged_cache_lists_again(tmp_path: Path, damage: str) -> None:
    """Damage anywhere, the file names' line included (read later, only when asked for: its CRC is checked
    when the index is read), means listing again."""
    dump, _ = _dump_tree(tmp_path)
    cache = tmp_path / "cache"
    listing_cache.cached_dump_index(dump, cache, with_graph=True, step=None)
    (kept,) = (cache / "listings").glob("*.json")
    head, names = kept.read_bytes().split(b"\n")
    tree = json.loads(head)
    if damage == "not json":
        kept.write_bytes(head[:100])
    elif damage in ("wrong ops", "ops and files apart", "wrong version"):
        if damage == "wrong ops":
            tree["listing"]["ops"][0] = ["too", "short"]
        elif damage == "ops and files apart":
            tree["listing"]["files"].pop()
        else:
            tree["version"] = 0
        kept.write_bytes(json.dumps(tree).encode() + b"\n" + names)
    elif damage == "names changed":
        kept.write_bytes(head + b"\n" + names.replace(b"Add", b"Sub", 1))
    else:
        kept.write_bytes(head + b"\n" + names[:-5])
    _same(listing_cache.cached_dump_index(dump, cache, with_graph=True, step=None),
          index_dumps(dump, with_graph=True, step=None))


def test_golden_listing_is_kept_while_its_folder_is_unchanged(tmp_path: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    golden = tmp_path / "golden"
    golden.mkdir()
    for name in ("net_add.0.1700000000000000.npy", "net_add.0.1700000000000005.npy", "net_mul.1.17.npy", "x.txt"):
        (golden / name).write_bytes(b"")
    _age(golden)
    cache = tmp_path / "cache"
    calls = []

    def listing(folder: Path) -> dict[str, str]:
        calls.append(folder)
        return golden_file_paths(folder)

    monkeypatch.setattr(golden_module, "golden_file_paths", listing)  # (counted: read from the cache or not)

    first = listing_cache.cached_golden_paths(golden, cache)
    assert first == golden_file_paths(golden) and len(first) == 2
    assert listing_cache.cached_golden_paths(golden, cache) == first
    assert len(calls) == 1
    (golden / "net_new.0.1700000000000009.npy").write_bytes(b"")
    again = listing_cache.cached_golden_paths(golden, cache)
    assert again == golden_file_paths(golden) and "net_new.0" in again
    assert len(calls) == 2


def test_an_unwritable_cache_still_lists(tmp_path: Path) -> None:
    dump, _ = _dump_tree(tmp_path)
    blocked = tmp_path / "cache"
    blocked.write_text("a file where the cache folder would go")
    _same(listing_cache.cached_dump_index(dump, blocked, with_graph=True, step=None),
          index_dumps(dump, with_graph=True, step=None))
    assert listing_cache.cached_golden_paths(tmp_path, blocked) == {}


def test_vc_twice_gives_the_same_csv_and_misses_a_golden_removed_between(demo_workspace: Path, tmp_path: Path) -> None:
    import shutil

    from tests.conftest import run_demo_cli

    ws = tmp_path / "ws"
    shutil.copytree(demo_workspace, ws, symlinks=True)
    shutil.rmtree(ws / "temp", ignore_errors=True)
    _age(*[f for f in ws.rglob("*") if f.is_dir()])  # a workspace written long ago: its listings are kept

    def result() -> str:
        proc = run_demo_cli("--data", str(ws), "vc")
        assert proc.returncode == 0, proc.stdout + proc.stderr
        (folder,) = (ws / "temp" / "vector_compare").iterdir()
        (csv,) = [p for p in folder.glob("result_*.csv") if "npu_vs_npu" not in p.name]
        text = csv.read_text()
        shutil.rmtree(folder)
        return text

    first = result()
    assert len(list((ws / "temp" / "cache" / "listings").glob("*.json"))) >= 2  # NPU dump and golden folder
    assert result() == first
    # a golden tensor removed between the runs is missed, not read from the kept listing
    victim = sorted((ws / "tf" / "dump").glob("*.npy"))[-1]
    victim.unlink()
    third = result()
    missing = "There is no the ground truth dump file"
    assert third.count(missing) > first.count(missing)


def test_a_folder_that_could_not_be_listed_is_not_kept(tmp_path: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """A folder os.walk cannot list (no read permission) is skipped by the index; once readable it would
    still be skipped if that index were kept, its parent's mtime being unchanged: so it is not kept."""
    dump, _ = _dump_tree(tmp_path)
    blocked = str(dump / "20240101" / "0" / "graph_1" / "1" / "1")
    real_scandir = os.scandir

    def scandir(path=".") -> object:  # type: ignore[no-untyped-def]
        if os.fspath(path) == blocked:
            raise PermissionError(13, "Permission denied", blocked)
        return real_scandir(path)

    monkeypatch.setattr(os, "scandir", scandir)
    cache = tmp_path / "cache"
    index = listing_cache.cached_dump_index(dump, cache, with_graph=True, step=None)
    assert index.by_op["net_add"].parent.name == "0"  # the newer dump in the unlisted folder is not seen
    assert not list(cache.rglob("*.json"))
    monkeypatch.setattr(os, "scandir", real_scandir)
    index = listing_cache.cached_dump_index(dump, cache, with_graph=True, step=None)
    assert index.by_op["net_add"].parent.name == "1"


def test_only_the_newest_listings_are_kept(tmp_path: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setattr(listing_cache, "KEEP_BYTES", 1)  # only the newest
    dump, _ = _dump_tree(tmp_path)
    cache = tmp_path / "cache"
    listing_cache.cached_dump_index(dump, cache, with_graph=True, step=None)
    (first,) = (cache / "listings").glob("*.json")
    os.utime(first, ns=(OLD_NS, OLD_NS))  # written before the next one, whatever the clock tick
    listing_cache.cached_dump_index(dump, cache, with_graph=False, step=None)
    (kept,) = (cache / "listings").glob("*.json")
    assert kept != first


def test_a_kept_index_gives_the_paths_a_listing_gives() -> None:
    """Read back, an index keeps its paths as text for a plan (plan_paths) and makes by_op's Paths on first
    use: both spell each file as Path(folder) / name does, whatever the folder ('.', '/', a trailing slash)."""
    from precision_tool.analysis.compare.listing_cache import _index_from_json

    folders = [".", "/", "/data/dump/", "/data/dump/0", "rel/dir"]
    count = range(len(folders))
    names = json.dumps([["Add", f"op{i}", i, 0, 17, []] for i in count]).encode()
    index = _index_from_json({"folders": folders, "ops": [f"op{i}" for i in count], "numbers": list(count),
                              "files": [f"Add.op{i}.{i}.0.17" for i in count], "ignored": [], "stats_files": 0},
                             names)
    expected = {f"op{i}": Path(folder) / f"Add.op{i}.{i}.0.17" for i, folder in enumerate(folders)}
    assert {op: str(path) for op, path in index.plan_paths().items()} == {op: str(p) for op, p in expected.items()}
    assert index.by_op == expected
    assert index.plan_paths() == expected  # (by_op once made: a plan takes it)
    assert index.names["op3"].task_id == 3 and index.stats_files == 0


def test_kept_iterations_read_as_walked_and_a_new_iteration_is_seen(tmp_path: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """The dump iterations choosing the step needs (a walk of the whole tree) are kept like the index."""
    from precision_tool.analysis.compare.matching import dump_iterations

    dump, _ = _dump_tree(tmp_path)
    cache = tmp_path / "cache"
    walked = dump_iterations(dump)
    assert sorted(walked) == [0, 1]
    assert listing_cache.cached_dump_iterations(dump, cache) == walked
    monkeypatch.setattr(listing_cache, "dump_iterations", lambda *a: pytest.fail("walked again"))
    assert listing_cache.cached_dump_iterations(dump, cache) == walked  # (read back: Paths, in step order)
    monkeypatch.undo()
    (dump / "20240101" / "0" / "graph_1" / "1" / "2" / "Add.net_add.1.2.1700000000000201").write_bytes(b"")
    again = listing_cache.cached_dump_iterations(dump, cache)  # the empty folder 2 got a file: it is watched
    assert again == dump_iterations(dump) and sorted(again) == [0, 1, 2]


def test_kept_step_folders_follow_the_golden_folder(tmp_path: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    from precision_tool.workspace import step_golden_folders

    golden = tmp_path / "golden"
    (golden / "step_3").mkdir(parents=True)
    (golden / "net_add.0.1700000000000000.npy").write_bytes(b"")
    _age(golden)
    cache = tmp_path / "cache"
    assert listing_cache.cached_step_folders(golden, cache) == step_golden_folders(golden) == [(3, golden / "step_3")]
    monkeypatch.setattr(listing_cache, "step_golden_folders", lambda *a: pytest.fail("listed again"))
    assert listing_cache.cached_step_folders(golden, cache) == [(3, golden / "step_3")]
    monkeypatch.undo()
    (golden / "step_1").mkdir()
    assert listing_cache.cached_step_folders(golden, cache) == [(1, golden / "step_1"), (3, golden / "step_3")]
    assert listing_cache.cached_step_folders(tmp_path / "none", cache) == []
