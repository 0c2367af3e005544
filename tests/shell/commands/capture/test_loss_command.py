"""`loss` as a user types it: both curves and where they part, `loss import` of a log (default and own regular
expression) and of a CSV, the one-line mistakes, and `ac`'s loss-curves lines. The records are written by our
writer (formats/loss_record.py), as the capture hooks write them (real trainings: tests/capture/test_loss_capture.py)."""

from __future__ import annotations

from pathlib import Path

from precision_tool.formats.loss_record import LossPoint, read_loss, write_loss
from precision_tool.shell.command import CompletionRequest
from precision_tool.shell.table import build_table
from precision_tool.workspace import Workspace
from tests.conftest import run_cli

PART_AT = 12


def _curves(ws: Workspace, part_at: int | None = PART_AT, steps: int = 30, debug_id: int = 0) -> None:
    """A golden curve and an NPU one equal to it until `part_at`, then 2% higher per step (None: never)."""
    golden = [LossPoint(s, 2.3 * 0.95 ** s) for s in range(steps)]
    npu = [LossPoint(p.step, p.loss * (1 + 0.02 * (p.step - part_at + 1) if part_at is not None and p.step >= part_at
                                       else 1 + 1e-4)) for p in golden]
    write_loss(ws.golden_loss_file, golden)
    write_loss(ws.loss_file(debug_id), npu)


def _lines(result) -> list[str]:
    return [line for line in (result.out + result.err).splitlines() if line.strip()]


def test_help_says_what_it_shows_and_imports():
    result = run_cli("loss", "-h")
    assert result.status == 0
    for words in ("import FILE", "LOSS_TOLERANCE", "TF_DUMP_STEP", "-r, --regex RE", "-s, --side", "step and loss"):
        assert words in result.out, words


def test_loss_shows_where_the_curves_part_and_which_step_to_dump(tmp_path):
    ws = Workspace(tmp_path / "pd")
    _curves(ws)
    result = run_cli("loss", data=ws.root)
    assert result.status == 0, result.err
    assert f"loss curves part first at step {PART_AT}: golden" in result.out
    assert f"they still agree at step {PART_AT - 1}" in result.out
    assert f"TF_DUMP_STEP='{PART_AT - 1}|{PART_AT}'" in result.out and "checkpoint nearest before" in result.out
    assert "first parting" in result.out and "18 of 30 common steps apart" in result.out
    # a looser tolerance moves the parting later
    looser = run_cli("loss", "-t", "0.05", data=ws.root)
    assert f"part first at step {PART_AT + 2}:" in looser.out
    every = run_cli("loss", "--all", data=ws.root)
    assert "loss at all 30 common steps" in every.out


def test_ac_names_the_parting_step_and_the_dump_advice(tmp_path):
    ws = Workspace(tmp_path / "pd")
    _curves(ws)
    result = run_cli("ac", data=ws.root)
    lines = [line for line in _lines(result) if "loss" in line.lower() or "TF_DUMP_STEP" in line]
    assert lines[0].startswith(f"loss curves part first at step {PART_AT}:")
    assert lines[1].startswith(f"to see why: dump steps {PART_AT - 1} and {PART_AT}: "
                               f"TF_DUMP_STEP='{PART_AT - 1}|{PART_AT}'")


def test_ac_says_in_one_line_when_the_curves_never_part_or_a_side_is_missing(tmp_path):
    ws = Workspace(tmp_path / "pd")
    _curves(ws, part_at=None)
    agree = [line for line in _lines(run_cli("ac", data=ws.root)) if "loss curves" in line]
    assert len(agree) == 1 and "agree within LOSS_TOLERANCE 0.01 at all 30 steps" in agree[0]
    ws.loss_file(0).unlink()
    alone = [line for line in _lines(run_cli("ac", data=ws.root)) if "loss" in line]
    assert len(alone) == 1 and "only the golden run's" in alone[0] and "loss import LOG --side npu" in alone[0]
    ws.golden_loss_file.unlink()
    assert not [line for line in _lines(run_cli("ac", data=ws.root)) if "loss" in line]


def test_import_a_log_with_the_default_pattern(tmp_path):
    ws = Workspace(tmp_path / "pd")
    log = tmp_path / "train.log"
    log.write_text("INFO:tensorflow:Saving checkpoints\n"
                   "INFO:tensorflow:loss = 2.30, step = 0\n"
                   "epoch 1 Step 1/100: train_loss=2.1 lr 0.1\n"
                   "global_step: 2, loss: nan\n"
                   "step 3 loss 1.9e+00 (0.2 sec)\n"
                   "step 3 loss 1.8\n")  # a restarted training logs step 3 again: the last line wins
    result = run_cli("loss", "import", str(log), data=ws.root)
    assert result.status == 0, result.err
    assert f"4 steps (0..3) of the log {log} into {ws.loss_file(0)}" in result.out
    points = read_loss(ws.loss_file(0))
    assert [p.step for p in points] == [0, 1, 2, 3]
    assert [p.loss for p in points][:2] == [2.30, 2.1] and points[3].loss == 1.8
    assert points[2].loss != points[2].loss  # nan: an overflowed step says so
    again = run_cli("loss", "import", str(log), data=ws.root)
    assert "(replacing the 4 steps recorded there)" in again.out


def test_import_with_an_own_regex_and_a_csv(tmp_path):
    ws = Workspace(tmp_path / "pd")
    log = tmp_path / "gpu.log"
    log.write_text("it 0 cost=2.3 gnorm=1.5\nit 1 cost=2.2 gnorm=1.25\nvalidation cost=9\n")
    result = run_cli("loss", "import", str(log), "--side", "golden", "-r",
                     r"it (?P<step>\d+) cost=(?P<loss>\S+) gnorm=(?P<grad_norm>\S+)", data=ws.root)
    assert result.status == 0, result.err
    assert [(p.step, p.loss, p.grad_norm) for p in read_loss(ws.golden_loss_file)] == [(0, 2.3, 1.5), (1, 2.2, 1.25)]
    table = tmp_path / "npu_loss.txt"  # a CSV by its header, whatever its name
    table.write_text("Epoch,Step,Loss,accuracy\n0,0,2.3,0.1\n0,1,2.4,0.2\n0,2,,0.3\n")
    result = run_cli("loss", "import", str(table), "-n", "1", data=ws.root)
    assert result.status == 0, result.err
    assert f"2 steps (0..1) of the CSV {table} into {ws.loss_file(1)}" in result.out
    assert [(p.step, p.loss) for p in read_loss(ws.loss_file(1))] == [(0, 2.3), (1, 2.4)]
    shown = run_cli("loss", data=ws.root)  # the first run with a record: debug_1
    assert "loss curves part first at step 1: golden 2.2, NPU 2.4" in shown.out


def test_import_mistakes_are_one_line_and_write_nothing(tmp_path):
    ws = Workspace(tmp_path / "pd")
    ws.root.mkdir()
    log = tmp_path / "b.log"
    log.write_text("it 0 cost=2.3\nit 1 cost=2.1\n")
    bad_csv = tmp_path / "bad.csv"
    bad_csv.write_text("epoch,value\n1,2\n")
    for args, words in (
            (("loss", "import", str(log)), "no line matches the default"),
            (("loss", "import", str(log), "-r", "it"), "has no named group (?P<step>...), (?P<loss>...)"),
            (("loss", "import", str(log), "-r", "(("), "is not a regular expression"),
            (("loss", "import", str(tmp_path / "nope.log")), "does not exist"),
            (("loss", "import", str(bad_csv)), "has no step and loss columns"),
            (("loss", "import"), "give one FILE"),
            (("loss", "import", str(log), "--side", "golden", "-n", "2"), "--debug names an NPU run"),
            (("loss", "import", str(log), "--side", "cpu"), "-s/--side takes one of: npu, golden"),
            (("loss", "-t", "0"), "must be above 0"),
            (("loss", "fold"), "unknown word 'fold'"),
            (("loss",), "no loss record in")):
        result = run_cli(*args, data=ws.root)
        lines = _lines(result)
        assert result.status == 1 and len(lines) == 1 and words in lines[0], (args, lines)
    assert not list(ws.root.rglob("loss.csv"))


def test_a_damaged_record_is_one_line_naming_it(tmp_path):
    ws = Workspace(tmp_path / "pd")
    _curves(ws)
    ws.golden_loss_file.write_text("epoch,value\n")
    result = run_cli("loss", data=ws.root)
    lines = _lines(result)
    assert result.status == 1 and len(lines) == 1 and str(ws.golden_loss_file) in lines[0]


def test_completion_offers_import_then_paths(tmp_path):
    (tmp_path / "train.log").write_text("step 0 loss 1\n")
    command = build_table().get("loss")
    ws = Workspace(tmp_path)
    assert command.completer(CompletionRequest(["loss"], "im", None, ws)) == ["import"]
    assert command.completer(CompletionRequest(["loss", "import"], f"{tmp_path}/tr", None, ws)) == [
        f"{tmp_path}/train.log"]
    assert command.completer(CompletionRequest(["loss", "import", "x", "-s"], "g", "-s", ws)) == ["golden"]
