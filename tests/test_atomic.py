"""Atomic writes: the old file survives a failed write, and no temp file is left behind."""

from __future__ import annotations

import pytest

from precision_tool.atomic import atomic_path, write_atomic, write_text_atomic


def test_success_replaces_and_leaves_no_temp(tmp_path):
    target = tmp_path / "sub" / "out.bin"
    write_atomic(target, [b"ab", memoryview(b"cd")])
    write_text_atomic(tmp_path / "t.txt", "héllo")
    assert target.read_bytes() == b"abcd"
    assert (tmp_path / "t.txt").read_text(encoding="utf-8") == "héllo"
    assert sorted(p.name for p in tmp_path.rglob("*")) == ["out.bin", "sub", "t.txt"]


def test_failure_keeps_the_old_file(tmp_path):
    target = tmp_path / "out.txt"
    target.write_text("old")
    with pytest.raises(RuntimeError):
        with atomic_path(target) as temp:
            temp.write_text("half")
            raise RuntimeError("disk full")
    assert target.read_text() == "old"
    assert [p.name for p in tmp_path.iterdir()] == ["out.txt"]
