"""Cross-checks with msaccucmp itself: the ten metrics on many array pairs, and whole CSVs on a network."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest

from precision_tool.analysis.results.metrics import METRIC_NAMES, compare_arrays

HERE = Path(__file__).parent
pytestmark = pytest.mark.reference


def _pairs(rng: np.random.Generator) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    cases: dict[str, tuple[np.ndarray, np.ndarray]] = {}
    for n in (1, 7, 100, 1000, 262144, 300001):
        y = rng.standard_normal(n).astype(np.float32)
        cases[f"fp16_{n}"] = ((y + rng.standard_normal(n).astype(np.float32) * 0.01).astype(np.float16), y)
    y = rng.standard_normal(5000).astype(np.float32)
    cases["bf16"] = (y.astype(ml_dtypes.bfloat16).astype(np.float32), y)
    cases["zero_both"] = (np.zeros(100, np.float16), np.zeros(100, np.float32))
    cases["zero_npu"] = (np.zeros(100, np.float16), np.ones(100, np.float32))
    cases["zero_golden"] = (np.ones(100, np.float16), np.zeros(100, np.float32))
    a = rng.standard_normal(100).astype(np.float32)
    a[3] = np.nan
    cases["nan"] = (a, rng.standard_normal(100).astype(np.float32))
    a = rng.standard_normal(100).astype(np.float32)
    a[5] = np.inf
    cases["inf"] = (a, rng.standard_normal(100).astype(np.float32))
    b = rng.standard_normal(100).astype(np.float32)
    b[5] = -np.inf
    cases["inf_golden"] = (rng.standard_normal(100).astype(np.float32), b)
    cases["scalar_1"] = (np.array([3.0], np.float32), np.array([2.0], np.float32))
    cases["scalar_0d"] = (np.array(3.0, np.float32), np.array(2.0, np.float32))
    cases["bool"] = (rng.random(50) > 0.5, rng.random(50) > 0.5)
    cases["bool_false_golden"] = (rng.random(50) > 0.5, np.zeros(50, bool))
    cases["bool_vs_float"] = (rng.random(50) > 0.5, rng.random(50).astype(np.float32))
    cases["constant"] = (np.full(64, 2.0, np.float32), np.full(64, 2.0, np.float32))
    cases["int32"] = (rng.integers(-5, 5, 300).astype(np.int32), rng.integers(-5, 5, 300).astype(np.int32))
    cases["large_mean"] = ((rng.standard_normal(1000) + 1000).astype(np.float32),
                           (rng.standard_normal(1000) + 1000).astype(np.float32))
    z = rng.standard_normal(4096)
    z = (z - z.mean()) / z.std()
    cases["std_on_rounding_boundary"] = ((z * 1.0005).astype(np.float32), (z * 0.1235).astype(np.float32))
    cases["std_near_clip"] = ((rng.standard_normal(5000) * 0.001).astype(np.float32),
                              (rng.standard_normal(5000) * 0.00099 + 0.0005).astype(np.float32))
    cases["golden_half_zero"] = (rng.standard_normal(1000).astype(np.float32),
                                 np.where(rng.random(1000) > 0.5, 0, 1).astype(np.float32))
    return cases


def test_ten_metrics_match_msaccucmp_bit_for_bit(tmp_path: Path, reference_tool: Path, reference_helpers) -> None:  # type: ignore[no-untyped-def]
    """All ten columns and the fail reasons equal msaccucmp's strings, also when computed in small leaves."""
    reference_python = reference_helpers[1]
    python, source = reference_python(reference_tool)
    cases = _pairs(np.random.default_rng(3))
    listing = []
    for name, (x, y) in cases.items():
        np.save(tmp_path / f"{name}_x.npy", x)
        np.save(tmp_path / f"{name}_y.npy", y)
        listing.append({"npu": str(tmp_path / f"{name}_x.npy"), "golden": str(tmp_path / f"{name}_y.npy"),
                        "shape": list(x.shape), "npu_file": f"/dump/{name}", "golden_file": f"/golden/{name}.npy"})
    (tmp_path / "cases.json").write_text(json.dumps(listing))
    subprocess.run([python, str(HERE / "reference_metrics.py"), source, str(tmp_path / "cases.json"),
                    str(tmp_path / "ref.json")], check=True, capture_output=True, timeout=300)
    reference = json.loads((tmp_path / "ref.json").read_text())
    assert tuple(reference["names"]) == METRIC_NAMES
    for leaf in (1 << 22, 128, 1000):  # one leaf, and many leaves of numpy's summation tree
        for (name, (x, y)), item, ref in zip(cases.items(), listing, reference["results"]):
            ours = compare_arrays(x, y, shape=x.shape, npu_file=item["npu_file"], golden_file=item["golden_file"],
                                  leaf=leaf)
            assert list(ours.values) == ref["values"], (name, leaf)
            assert list(ours.reasons) == ref["reasons"], (name, leaf)


def _strip(text: str, root: Path) -> str:
    return text.replace(str(root), "ROOT")


def test_network_csv_identical_to_msaccucmp(tmp_path: Path, reference_tool: Path, cli, make_net, reference_helpers) -> None:  # type: ignore[no-untyped-def]
    """Same header, same rows, same numbers, same reasons (paths aside) on the generated network; and
    `vcs` reads both tools' CSVs to the same summary."""
    run_reference = reference_helpers[0]
    net = make_net(tmp_path / "precision_data", chain=3, elements=1000)
    ref_csv = run_reference(reference_tool, net.dump_dir, net.golden_dir, net.graph_json, tmp_path / "ref")
    result = cli("vc", "-j", "2", "--backend", "native", data=net.root)
    assert result.status == 0, result.out + result.err
    ours = sorted((net.root / "temp" / "vector_compare").glob("*/result_*.csv"))
    assert len(ours) == 1
    ours_bytes = ours[0].read_bytes()
    assert b"\r\n" in ours_bytes
    assert oct(ours[0].stat().st_mode & 0o777) == "0o600"
    ref_text = _strip(ref_csv.read_bytes().decode(), net.root)
    ours_text = _strip(ours_bytes.decode(), net.root)
    assert ours_text.splitlines()[0] == ref_text.splitlines()[0]
    assert ours_text == ref_text
    assert "first divergent op: [3] relu1/Relu" in result.out
    for csv_path in (ref_csv, ours[0]):
        shown = cli("vcs", "-f", str(csv_path), "-l", "1", data=net.root)
        assert shown.status == 0, shown.err
        assert "[3] relu1/Relu" in shown.out
        assert "first divergent op: [3] relu1/Relu" in shown.out


def test_cann_backend_runs_msaccucmp_and_vcs_reads_it(tmp_path: Path, reference_tool: Path, cli, make_net) -> None:  # type: ignore[no-untyped-def]
    """`vc --backend cann` converts the text graph to JSON, runs msaccucmp, and its CSV is summarised."""
    net = make_net(tmp_path / "precision_data")
    config = tmp_path / "config.py"
    config.write_text(f"CMD_ROOT_PATH = {str(reference_tool.parent)!r}\n")
    result = cli("vc", "--backend", "cann", data=net.root, env={"PRECISION_TOOL_CONFIG": str(config)})
    assert result.status == 0, result.out + result.err
    assert "msaccucmp" in result.out
    assert "first divergent op: [3] relu1/Relu" in result.out
    written = sorted((net.root / "temp" / "vector_compare").glob("*/result_*.csv"))
    assert len(written) == 1
    assert written[0].read_text().startswith("Index,OpType,NPUDump,DataType,Address,GroundTruth,DataType,")
