"""`vc --step all` pairs NPU dump iteration N with golden tf/dump/step_<N>/ by number (docs/steps.md)."""

from __future__ import annotations

from tests.analysis.compare.test_layouts_and_names import _two_iterations


def test_iterations_pair_with_golden_steps_by_number(make_case, cli, tmp_path):
    """Iterations 0 and 5 (TF_DUMP_STEP='0|5') meet step_0/ and step_5/, not the first two golden steps."""
    import numpy as np

    case = _two_iterations(make_case)  # iteration 5 holds the negated data of iteration 0
    golden = case.golden_dir
    for npy in sorted(golden.glob("*.npy")):
        value = np.load(npy)
        for step, sign in ((0, 1), (3, 1), (5, -1)):
            (golden / f"step_{step}").mkdir(exist_ok=True)
            np.save(golden / f"step_{step}" / npy.name, sign * value)
        npy.unlink()
    result = cli("vc", "--step", "all", data=case.data)
    assert result.status == 0, result.out + result.err
    text = " ".join(result.out.split())
    assert "steps 0, 5: every step meets the threshold" in text
    assert "golden step(s) 3 have no NPU dump iteration" in text
    folder = sorted((case.data / "temp" / "vector_compare").iterdir())[-1]
    assert sorted(p.name for p in folder.glob("result_*.csv")) == [f"result_{folder.name}_step0.csv", f"result_{folder.name}_step5.csv"]
