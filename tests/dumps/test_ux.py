"""Fixes from the UX review of `pt`, `ls dump` and `dc`, driven through the one-shot CLI."""

from __future__ import annotations

from pathlib import Path

import numpy as np


def test_pt_refuses_non_numeric_npy_in_one_line(cli, tmp_path: Path) -> None:
    cases = {
        "s.npy": (np.array(["a", "b"]), "dtype <U1 is not numeric"),
        "rec.npy": (np.zeros(3, dtype=[("a", "<i4"), ("b", "<f4")]), "structured (record) type, not numeric"),
        "when.npy": (np.array(["2020-01-01"], dtype="datetime64[D]"), "dtype datetime64[D] is not numeric"),
        "b.npy": (np.array([b"ab"]), "dtype |S2 is not numeric"),
    }
    for name, (array, problem) in cases.items():
        path = tmp_path / name
        np.save(path, array)
        result = cli("pt", str(path), data=tmp_path)
        assert result.status == 1, result.out + result.err
        lines = (result.out + result.err).strip().splitlines()
        assert len(lines) == 1, lines
        assert lines[0].startswith(f"{path}: ") and problem in lines[0] and "pt shows numeric tensors" in lines[0]
        assert "Traceback" not in result.err and "unexpected" not in result.err


def test_pt_complex_says_the_numbers_are_magnitudes(cli, tmp_path: Path) -> None:
    path = tmp_path / "c.npy"
    np.save(path, np.array([1 + 2j, 3 - 4j]))
    result = cli("pt", str(path), data=tmp_path)
    assert result.status == 0, result.err
    assert "max |x|" in result.out and "min |x|" in result.out and "mean |x|" in result.out
    assert "magnitudes" in result.out
    assert "5" in result.out.split("max |x|")[1].splitlines()[0]


def test_pt_on_a_folder_says_it_is_a_folder(cli, tmp_path: Path) -> None:
    folder = tmp_path / "decoded"
    folder.mkdir()
    result = cli("pt", str(folder), data=tmp_path)
    assert result.status == 1
    text = result.out + result.err
    assert f"{folder} is a folder" in text and f"dc {folder}" in text
    assert "no such file" not in text
