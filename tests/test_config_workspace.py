"""Settings and the workspace layout, on real folders."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from precision_tool.config import Settings, load_settings, read_config_file, settings_from_mapping
from precision_tool.errors import ConfigError, WorkspaceError
from precision_tool.workspace import WRITE_HINT, Workspace, walk_files

ROOT = Path(__file__).resolve().parents[1]


def test_example_config_documents_every_default():
    values = read_config_file(ROOT / "config.example.py")
    assert set(values) == {f for f in Settings.__dataclass_fields__}
    assert settings_from_mapping(values) == Settings()


def test_precedence_defaults_config_env_flag(tmp_path):
    (tmp_path / "config.py").write_text("ROOT_DIR = 'from_config'\nWORKERS = 3\n")
    assert load_settings(env={}, cwd=tmp_path).ROOT_DIR == "from_config"
    assert load_settings(env={"PRECISION_DATA": "from_env"}, cwd=tmp_path).ROOT_DIR == "from_env"
    assert load_settings("from_flag", env={"PRECISION_DATA": "from_env"}, cwd=tmp_path).ROOT_DIR == "from_flag"
    assert load_settings(env={}, cwd=tmp_path).workers == 3
    assert load_settings(env={}, cwd=tmp_path / "nothing").ROOT_DIR == "./precision_data"


def test_settings_are_frozen_and_checked():
    settings = Settings()
    with pytest.raises(AttributeError):
        settings.ROOT_DIR = "x"  # type: ignore[misc]
    with pytest.raises(ConfigError, match="LOG_LEVEL"):
        settings_from_mapping({"LOG_LEVEL": "LOUD"})
    with pytest.raises(ConfigError, match="COSINE_THRESHOLD must lie"):
        settings_from_mapping({"COSINE_THRESHOLD": 2})
    assert settings_from_mapping({"COSINE_THRESHOLD": 1}).COSINE_THRESHOLD == 1.0


def _touch(path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"x")
    return path


def test_workspace_finds_things_and_creates_nothing(tmp_path):
    ws = Workspace(tmp_path / "precision_data")
    assert ws.debug_ids() == [] and ws.newest_dump_dir() is None and ws.build_graph_files() == []
    assert [m.what for m in ws.missing()] == [f"workspace {ws.root} (the folder does not exist)"]
    assert not ws.root.exists()

    _touch(ws.dump_root(0) / "20240101000000" / "0" / "old")
    newest = ws.dump_root(0) / "20240102000000"
    _touch(newest / "0" / "g" / "1" / "0" / "Add.add.1.2.1700000000000000")
    _touch(ws.graph_dir(0) / "ge_proto_00000001_graph_1_Build.txt")
    _touch(ws.graph_dir(0) / "ge_proto_00000000_PreRunBegin.txt")
    _touch(ws.debug_dir(1) / "graph" / "x")
    (ws.npu_dir / "debug_x").mkdir()
    assert ws.debug_ids() == [0, 1]
    assert ws.newest_dump_dir(0) == newest
    assert [p.name for p in ws.build_graph_files(0)] == ["ge_proto_00000001_graph_1_Build.txt"]
    assert len(ws.graph_files(0)) == 2
    assert [m.what.split()[0] for m in ws.missing()] == ["golden"]
    assert [p.name for p in walk_files(ws.dump_root(0))] == ["old", "Add.add.1.2.1700000000000000"]
    assert not ws.temp_dir.exists()


def test_walk_files_follows_symlinks_without_looping(tmp_path):
    real = tmp_path / "real"
    _touch(real / "a")
    (real / "loop").symlink_to(real)
    (tmp_path / "link").symlink_to(real)
    assert sorted(p.name for p in walk_files(tmp_path / "link")) == ["a"]


def test_new_result_dir_is_unique(tmp_path):
    ws = Workspace(tmp_path)
    first, second = ws.new_result_dir(), ws.new_result_dir()
    assert first != second and first.parent == ws.vector_compare_dir
    assert ws.newest_result_dir() in (first, second)


def test_workspace_that_is_a_file(tmp_path):
    (tmp_path / "f").write_text("")
    with pytest.raises(WorkspaceError, match="is a file"):
        Workspace(tmp_path / "f")


def test_ensure_dir_names_the_folder_and_the_reason(tmp_path):
    out = tmp_path / "a" / "b"
    assert Workspace.ensure_dir(out) == out and out.is_dir()
    (tmp_path / "f").write_text("")
    with pytest.raises(WorkspaceError) as caught:
        Workspace.ensure_dir(tmp_path / "f", "output folder (-o OUT)")
    assert str(caught.value) == (f"cannot write the output folder (-o OUT) {tmp_path / 'f'}: it is a file, "
                                 f"not a folder; {WRITE_HINT}")
    with pytest.raises(OSError) as caught:  # also an OSError: optional writers (caches) skip it
        Workspace.ensure_dir(tmp_path / "f" / "sub", "golden folder", hint="give another --out DIR")
    assert str(caught.value) == (f"cannot write the golden folder {tmp_path / 'f' / 'sub'}: "
                                 "Not a directory; give another --out DIR")


def test_ensure_dir_on_a_read_only_mount_and_a_full_disk(tmp_path):
    # A private mount namespace (unshare -rm works as root and as a user) holds a read-only tmpfs and
    # one without free inodes; ensure_dir reports the system's reason for each.
    ro, full = tmp_path / "ro", tmp_path / "full"
    ro.mkdir()
    full.mkdir()
    script = (
        "from precision_tool.workspace import Workspace\n"
        "import sys\n"
        "for p in sys.argv[1:]:\n"
        "    try:\n"
        "        Workspace.ensure_dir(p, 'folder', hint='H')\n"
        "    except OSError as e:\n"
        "        print(e)\n"
    )
    shell = (f"mount -t tmpfs -o ro,size=16k tmpfs {ro} && "
             f"mount -t tmpfs -o size=16k,nr_inodes=2 tmpfs {full} && mkdir {full}/x && "
             f'"{sys.executable}" -c "$0" {ro} {ro}/sub {full}/y')
    done = subprocess.run(["unshare", "-rm", "sh", "-c", shell, script], capture_output=True, text=True,
                          cwd=ROOT, check=True)
    assert done.stdout.splitlines() == [
        f"cannot write the folder {ro}: Read-only file system; H",
        f"cannot write the folder {ro}/sub: Read-only file system; H",
        f"cannot write the folder {full}/y: No space left on device; H",
    ]


def test_replay_tolerances_are_checked_by_name():

    assert settings_from_mapping({"REPLAY_FLOAT16_COSINE": 0.9995, "REPLAY_FLOAT32_ERROR": 1e-5}).REPLAY_FLOAT16_COSINE \
        == 0.9995
    for values, message in (({"REPLAY_FLOAT16_COSINE": 1.5}, "REPLAY_FLOAT16_COSINE must lie in [-1, 1]"),
                            ({"REPLAY_BFLOAT16_ERROR": -0.1}, "REPLAY_BFLOAT16_ERROR must not be negative")):
        with pytest.raises(ConfigError, match=re.escape(message)):
            settings_from_mapping(values)
