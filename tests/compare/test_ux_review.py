"""Fixes from the UX review of vc/vcs/cp, each driven through the one-shot CLI on data written by the
project's own writers."""

from __future__ import annotations

from pathlib import Path


def test_failed_vc_leaves_no_result_folder_and_vcs_skips_broken_ones(tmp_path: Path, cli, make_net) -> None:  # type: ignore[no-untyped-def]
    net = make_net(tmp_path / "precision_data")
    data = net.root
    assert cli("vc", "-j", "1", data=data).status == 0
    results = data / "temp" / "vector_compare"
    good = sorted(results.iterdir())
    garbage = tmp_path / "garbage.txt"
    garbage.write_text("garbage\n")
    for args in (("-lt", str(tmp_path / "nonexistent")), ("-g", str(garbage))):
        failed = cli("vc", *args, data=data)
        assert failed.status == 1, failed.out + failed.err
        assert sorted(results.iterdir()) == good, args
    # a folder left by an older version (run.json only) is skipped with a warning, not fatal
    broken = results / "29990101000000"
    broken.mkdir()
    (broken / "run.json").write_text('{"runs": []}')
    for command in (("vcs",), ("ac", "-l", "1")):
        shown = cli(*command, data=data)
        assert shown.status == 0, shown.out + shown.err
        text = shown.out + shown.err
        assert "skipped 1 newer result folder" in text and "29990101000000" in text
        assert "first divergent op" in text
