"""`tf_dump --step all`: every tfdbg run (v2: step) into its own tf/dump/step_<N>/ (docs/steps.md)."""

from __future__ import annotations


def _names(folder):
    return sorted(p.name for p in folder.iterdir())


def test_v1_runs_go_to_their_own_step_folders(cli, copy_workspace, v1_sess_workspace):
    ws = copy_workspace(v1_sess_workspace)
    result = cli("tf_dump", "--step", "all", data=ws)
    assert result.status == 0, result.out + result.err
    golden = ws / "tf" / "dump"
    assert _names(golden) == ["step_0", "step_1"]  # nothing flat: the flat folder would be a third step
    for step in (0, 1):
        alone = cli("tf_dump", "--run", str(step), "--out", str(ws / f"run{step}"), data=ws)
        assert alone.status == 0
        assert _names(golden / f"step_{step}") == _names(ws / f"run{step}")
        assert f"step {step} " in result.out
    assert "2 step folder(s)" in result.out and "vc --step all" in result.out
    later = cli("tf_dump", "--step", "all", "--first-step", "300", "--out", str(ws / "later"), data=ws)
    assert later.status == 0 and _names(ws / "later") == ["step_300", "step_301"]


def test_v2_steps_go_to_their_own_step_folders(cli, copy_workspace, v2_workspace):
    ws = copy_workspace(v2_workspace)
    result = cli("tf_dump", "--step", "all", data=ws)
    assert result.status == 0, result.out + result.err
    golden = ws / "tf" / "dump"
    assert _names(golden) == ["step_0", "step_1"]
    every = cli("tf_dump", "--run", "all", "--out", str(ws / "flat"), data=ws)
    assert every.status == 0
    # the two steps together are what --run all writes into one folder (a name both steps wrote in the same
    # µs, tf.data's parallel map, is one file there)
    assert set(_names(golden / "step_0")) | set(_names(golden / "step_1")) == set(_names(ws / "flat"))


def test_step_options_that_do_not_fit_are_one_line(cli, copy_workspace, v1_sess_workspace):
    ws = copy_workspace(v1_sess_workspace)
    both = cli("tf_dump", "--step", "all", "--run", "0", data=ws)
    assert both.status != 0 and "leave out --run 0" in both.out + both.err and "Traceback" not in both.err
    alone = cli("tf_dump", "--first-step", "3", data=ws)
    assert alone.status != 0 and "add --step all" in alone.out + alone.err
    negative = cli("tf_dump", "--step", "all", "--first-step", "-1", data=ws)
    assert negative.status != 0 and "0 or more" in negative.out + negative.err
    assert not (ws / "tf" / "dump").exists()  # refused before anything was written


def test_each_rank_gets_its_step_folders(cli, copy_workspace, v1_sess_workspace):
    import shutil

    ws = copy_workspace(v1_sess_workspace)
    debug = ws / "tf" / "tf_debug"
    for rank in (0, 1):
        shutil.copytree(v1_sess_workspace / "tf" / "tf_debug", debug / f"rank_{rank}")
    for run in [p for p in debug.iterdir() if p.name.startswith("run_")]:
        shutil.rmtree(run)
    result = cli("tf_dump", "--step", "all", data=ws)
    assert result.status == 0, result.out + result.err
    golden = ws / "tf" / "dump"
    assert _names(golden) == ["rank_0", "rank_1"]
    assert _names(golden / "rank_0") == _names(golden / "rank_1") == ["step_0", "step_1"]
    assert "2 rank(s), 4 step folder(s)" in result.out
