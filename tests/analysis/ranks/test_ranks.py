"""Multi-device dumps: every rank against its golden, every rank against rank 0, and the rank summary, through
the real one-shot CLI on data-parallel workspaces written by benchmarks/rank_workspace.py (one device folder
per rank, HcomAllReduce between each gradient and its weight update, one rank's gradient corrupted)."""

from __future__ import annotations

import csv
import importlib.util
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]


def _rank_workspace_module():  # type: ignore[no-untyped-def]
    spec = importlib.util.spec_from_file_location("rank_workspace", ROOT / "benchmarks" / "rank_workspace.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules["rank_workspace"] = module
    spec.loader.exec_module(module)
    return module


RW = _rank_workspace_module()


@pytest.fixture(scope="module")
def four_ranks(tmp_path_factory):  # type: ignore[no-untyped-def]
    root = tmp_path_factory.mktemp("ranks") / "precision_data"
    planted = RW.make_rank_workspace(root, ranks=4, ops=40, elements=1024, bad_collective_rank=2)
    return root, planted


def _result_dir(root: Path) -> Path:
    return sorted((root / "temp" / "vector_compare").iterdir())[-1]


def _rows(path: Path) -> list[list[str]]:
    with open(path, newline="") as handle:
        return list(csv.reader(handle))


def test_vc_compares_every_rank_and_names_the_rank_that_went_wrong_first(four_ranks, cli) -> None:  # type: ignore[no-untyped-def]
    root, planted = four_ranks
    result = cli("vc", data=root)
    assert result.status == 0, result.out + result.err
    folder = _result_dir(root)
    stamp = folder.name
    names = sorted(p.name for p in folder.glob("result_*.csv"))
    assert names == [f"result_{stamp}_rank{r}.csv" for r in range(4)]
    out = " ".join(result.out.split())
    assert planted.fault_rank == 1 and planted.fault_op == "grad/layer3"
    assert "rank 1 went wrong first: the output of [24] grad/layer3 (Mul)" in out
    assert ("the error reached ranks 0, 2, 3 through the collective [25] allreduce/layer3 (HcomAllReduce): "
            "their first failure is its output") in out
    # one row per rank in the summary table, the faulty rank's own first failure, the others' the collective
    table = {int(m.group(1)): m.group(2) for m in re.finditer(r"^\s+(?:▶ )?(\d)\s+\d+/\d+\s+\d+\s+(\[\d+\] \S+)",
                                                             result.out, re.M)}
    assert re.search(r"^\s+▶ 1\s", result.out, re.M)  # the rank that went wrong first, marked
    assert table == {0: "[25] allreduce/layer3", 1: "[24] grad/layer3", 2: "[25] allreduce/layer3",
                     3: "[25] allreduce/layer3"}
    # the full view is the faulty rank's; the other ranks get one line with their folder
    assert "rank 1: ge_default_20240613143502_1 vs golden: first divergent op [24] grad/layer3" in out
    assert f"3 more result CSVs (one per rank) in {folder}" in out
    # each rank against its own golden folder (run.json records the rank)
    import json

    runs = json.loads((folder / "run.json").read_text())["runs"]
    assert [(r["rank"], Path(r["golden_dir"]).name, Path(r["npu_dir"]).parent.name) for r in runs] == \
        [(r, f"rank_{r}", str(r)) for r in range(4)]


def test_a_rank_csv_is_msaccucmps_csv_of_that_rank(four_ranks, cli, reference_tool) -> None:  # type: ignore[no-untyped-def]
    """The per-rank CSV is what msaccucmp writes for that rank's device folder and golden, row for row."""
    root, _ = four_ranks
    result = cli("vc", "--backend", "native", data=root)
    assert result.status == 0, result.out + result.err
    folder = _result_dir(root)
    rank_dir = next((root / "npu" / "debug_0" / "dump").iterdir()) / "3" / RW.GRAPH_NAME / "1" / "0"
    out = root.parent / "ref3"
    out.mkdir()
    proc = subprocess.run([str(reference_tool), "compare", "-m", str(rank_dir), "-g", str(root / "tf" / "dump" / "rank_3"),
                           "-f", str(root / RW.REFERENCE_GRAPH), "-out", str(out)], capture_output=True, text=True,
                          timeout=600)
    found = sorted(out.glob("result_*.csv"))
    assert found, f"msaccucmp wrote no CSV (exit {proc.returncode}): {proc.stdout[-3000:]}"
    ref = found[-1]
    ours = next(folder.glob("result_*_rank3.csv"))
    strip = lambda text: text.replace(str(root), "ROOT")  # noqa: E731
    assert strip(ours.read_bytes().decode()) == strip(ref.read_bytes().decode())


def test_across_ranks_names_the_rank_whose_collective_disagrees(four_ranks, cli) -> None:  # type: ignore[no-untyped-def]
    root, planted = four_ranks
    result = cli("vc", "--across-ranks", data=root)
    assert result.status == 0, result.out + result.err
    folder = _result_dir(root)
    stamp = folder.name
    assert sorted(p.name for p in folder.glob("result_*.csv")) == \
        [f"result_{stamp}_rank{r}_vs_rank0.csv" for r in (1, 2, 3)]
    out = " ".join(result.out.split())
    assert planted.bad_collective_rank == 2 and planted.bad_collective_op == "allreduce/layer0"
    # 7 all-reduces and 7 updates must agree; rank 2's layer-0 all-reduce and its update do not
    assert "rank 2 disagrees with rank 0 on ops that must agree after the collectives" in out
    assert "rank 2: 2 of 14 ops differ, first [34] allreduce/layer0 (HcomAllReduce), max |difference| 0.5" in out
    # per-rank differences before the all-reduce are expected: no op panel of forward ops, no verdict on them
    assert "fwd/layer0" not in result.out
    # the NPU-vs-NPU CSVs are msaccucmp's two-address format
    header = _rows(next(folder.glob("result_*_rank1_vs_rank0.csv")))[0]
    assert header.count("Address") == 2


def test_across_ranks_all_agree_without_a_broken_collective(tmp_path: Path, cli) -> None:  # type: ignore[no-untyped-def]
    root = tmp_path / "precision_data"
    RW.make_rank_workspace(root, ranks=3, ops=30, elements=512)
    result = cli("vc", "--across-ranks", data=root)
    assert result.status == 0, result.out + result.err
    # no rank went wrong (no golden judged here): agreement after the collectives is the all-clear it reads as
    assert "ranks vs rank 0: all 3 ranks hold the same values on the 10 ops that must agree after the " \
           "collectives" in " ".join(result.out.split())
    assert "the error included" not in result.out


def test_vcs_shows_the_rank_summary_and_one_rank_on_request(four_ranks, cli) -> None:  # type: ignore[no-untyped-def]
    root, _ = four_ranks
    assert cli("vc", data=root).status == 0
    shown = cli("vcs", data=root)
    assert shown.status == 0, shown.err
    out = " ".join(shown.out.split())
    assert "rank 1 went wrong first: the output of [24] grad/layer3 (Mul)" in out
    assert "[24] grad/layer3" in shown.out
    one = cli("vcs", "--rank", "2", "-l", "1", data=root)
    assert one.status == 0, one.err
    assert "rank 2: ge_default_20240613143502_1 vs golden" in one.out
    assert "first divergent op: [25] allreduce/layer3" in " ".join(one.out.split())
    assert "went wrong first" not in one.out  # one rank: its own view, no summary
    missing = cli("vcs", "--rank", "9", data=root)
    assert missing.status != 0
    assert missing.err.strip().splitlines() == ["vcs: --rank 9: no result of rank 9; the results hold ranks 0, 1, 2, 3"] \
        or "no result of rank 9; the results hold ranks 0, 1, 2, 3" in missing.out + missing.err


def test_ac_c_compares_each_rank_with_golden_and_with_rank_0(four_ranks, cli) -> None:  # type: ignore[no-untyped-def]
    root, _ = four_ranks
    result = cli("ac", "-c", data=root)
    assert result.status == 0, result.out + result.err
    folder = _result_dir(root)
    names = [p.name for p in folder.glob("result_*.csv")]
    # (the folder's stamp, and its _N when an earlier command made a folder in the same second)
    assert len([n for n in names if re.fullmatch(r"result_\d+(_\d+)?_rank\d\.csv", n)]) == 4
    assert len([n for n in names if n.endswith("_vs_rank0.csv")]) == 3
    answer = " ".join(re.split(r"answer ─+", result.out)[-1].split())  # the block ac ends with
    assert "rank 1 went wrong first: the output of [24] grad/layer3 (Mul)" in answer
    assert "rank 2 disagrees with rank 0" in answer
    assert "6 more result CSVs (3 more rank(s) against golden, 3 NPU against NPU) in the same folder" in answer
    assert f"results (`vcs -l N` lists more abnormal ops): {folder}" in answer


def test_resume_finishes_a_missing_rank(four_ranks, cli) -> None:  # type: ignore[no-untyped-def]
    root, _ = four_ranks
    assert cli("vc", data=root).status == 0
    folder = _result_dir(root)
    lost = next(folder.glob("result_*_rank2.csv"))
    before = lost.read_bytes()
    lost.unlink()
    resumed = cli("vc", "--resume", data=root)
    assert resumed.status == 0, resumed.out + resumed.err
    assert lost.read_bytes() == before


def test_shared_golden_is_said_once(tmp_path: Path, cli) -> None:  # type: ignore[no-untyped-def]
    root = tmp_path / "precision_data"
    RW.make_rank_workspace(root, ranks=2, ops=20, elements=256, shared_golden=True)
    result = cli("vc", data=root)
    assert result.status == 0, result.out + result.err
    out = " ".join(result.out.split())
    assert f"2 ranks and no {root / 'tf' / 'dump'}/rank_<r>/ folders: every rank is compared with the same golden " \
           "tensors" in out
    import json

    runs = json.loads((_result_dir(root) / "run.json").read_text())["runs"]
    assert {Path(r["golden_dir"]).name for r in runs} == {"dump"}


def test_errors_are_one_line(tmp_path: Path, four_ranks, cli) -> None:  # type: ignore[no-untyped-def]
    root, _ = four_ranks
    single = tmp_path / "single"
    RW.make_rank_workspace(single, ranks=2, ops=20, elements=256)
    (next((single / "npu" / "debug_0" / "dump").iterdir()) / "1").rename(single / "rank1_elsewhere")
    for args, data, expected in (
        (("vc", "--across-ranks"), single, "holds the dump of one device; it needs one folder per device"),
        (("vc", "--across-ranks", "-lt", str(root)), root, "vc --across-ranks compares the ranks of the workspace's"),
        (("ls", "dump", "-r", "7"), root, "ls dump -r 7: no rank 7; the dumps hold ranks 0, 1, 2, 3"),
        (("ls", "dump", "-r", "0"), single, "the dumps are of a single device"),
        (("ls", "-r", "1"), root, "ls: -r N picks the dump files of rank N: `ls dump -r N`"),
    ):
        result = cli(*args, data=data)
        assert result.status != 0, args
        text = (result.out + result.err).strip()
        assert expected in text, (args, text)
        assert "Traceback" not in text
        assert len(text.splitlines()) == 1, text


def test_ls_dump_lists_rank_by_rank(four_ranks, cli) -> None:  # type: ignore[no-untyped-def]
    root, _ = four_ranks
    result = cli("ls", "dump", "-t", "HcomAllReduce", data=root)
    assert result.status == 0, result.err
    headings = re.findall(r"^debug_0 rank (\d): 7 dump file\(s\) in (\S+)$", result.out, re.M)
    assert [int(r) for r, _ in headings] == [0, 1, 2, 3]
    assert all(Path(folder).name == rank for rank, folder in headings)
    assert "28 dump file(s) in 4 rank folder(s)" in result.out
    one = cli("ls", "dump", "-r", "3", "-n", "allreduce_layer0", data=root)
    assert one.status == 0, one.err
    assert re.findall(r"^ *1 +1 +(\S+)$", one.out, re.M) == ["HcomAllReduce.allreduce_layer0.33.0.1718260502000034"]


def test_rank_invariant_ops_follow_the_collectives(tmp_path: Path) -> None:
    from precision_tool.analysis.ranks import rank_invariant_ops, ranks_text
    from precision_tool.formats.ge.ge_graph import load_graph

    root = tmp_path / "precision_data"
    RW.make_rank_workspace(root, ranks=2, ops=20, elements=64)
    model = load_graph(next((root / "npu" / "debug_0" / "graph").iterdir()))
    ops = [op for _, op in model.iter_ops()]
    invariant = rank_invariant_ops(ops)
    layers = RW.layer_count(20)
    assert invariant == {f"allreduce/layer{k}" for k in range(layers)} | {f"update/w{k}" for k in range(layers)}
    assert ranks_text([0, 1, 2, 5, 6, 9]) == "0-2, 5, 6, 9"


def test_rank_workspace_script_runs(tmp_path: Path) -> None:
    proc = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "rank_workspace.py"), "--ranks", "2", "--ops",
                           "12", "--elements", "64", "--out", str(tmp_path / "ws")], capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert sorted(p.name for p in next((tmp_path / "ws" / "npu" / "debug_0" / "dump").iterdir()).iterdir()) == ["0", "1"]


def test_ni_names_each_rank_and_its_golden(four_ranks, cli) -> None:  # type: ignore[no-untyped-def]
    root, _ = four_ranks
    result = cli("ni", "allreduce/layer3", data=root)
    assert result.status == 0, result.err
    # the corrupted input differs on rank 1 only; the all-reduced output is one row for the four ranks
    inputs = result.out.split("input 0")[1].split("output 0")[0]
    assert re.findall(r"debug_0 rank (\d)", inputs) == ["0", "1", "2", "3"]
    output = result.out.split("output 0")[1].split("Files")[0]
    assert "debug_0 rank 0, debug_0 rank 1, debug_0 rank 2, debug_0 rank 3" in output
    assert "golden rank 0, golden rank 1, golden rank 2, golden rank 3" in output  # the job's mean: the same
    files = result.out.split("Files")[1]
    for r in range(4):
        assert re.search(rf"debug_0 rank {r}: \S+/{r}/ge_default_20240613143502_1/1/0/HcomAllReduce\.allreduce_layer3\.",
                         files)
        assert re.search(rf"golden rank {r} allreduce_layer3\.0: \S+/tf/dump/rank_{r}/allreduce_layer3\.0\.", files)


def test_the_shell_start_sees_golden_tensors_in_rank_folders(four_ranks, tmp_path) -> None:  # type: ignore[no-untyped-def]
    """tf/dump/rank_<r>/ holds the golden tensors of a multi-device job: no 'missing golden tensors' at start;
    rank folders without .npy files still are missing ones."""
    from precision_tool.workspace import Workspace

    root, _planted = four_ranks
    assert not [gap for gap in Workspace(root).missing() if "golden" in gap.what]
    empty = tmp_path / "precision_data"
    (empty / "tf" / "dump" / "rank_0").mkdir(parents=True)
    assert [gap for gap in Workspace(empty).missing() if "golden" in gap.what]


def test_the_report_carries_the_rank_verdict_of_the_answer(four_ranks, cli) -> None:  # type: ignore[no-untyped-def]
    import html

    root, _ = four_ranks
    checked = cli("ac", "-c", "--report", data=root)
    assert checked.status == 0, checked.out + checked.err
    page = sorted((root / "temp" / "report").iterdir())[-1] / "report.html"
    text = page.read_text(encoding="utf-8")
    block = text[text.index('id="answer"'):text.index('id="runs"')]
    shown = " ".join(html.unescape(re.sub(r"<[^>]+>", "", block)).split())
    answer = re.split(r"answer ─+", checked.out)[-1].splitlines()
    lines = [" ".join(line.split()) for line in answer
             if line.strip() and not line.startswith(("results", "report", "  /"))]
    assert any(line.startswith("rank 1 went wrong first") for line in lines)
    for line in lines:
        assert line in shown, line
