"""A summary counts a result on its digest's plain fields and makes an OpResult only for the ops it names
(result_ops.OpSequence): it must say exactly what the summary made of every op said, and its ops must read,
compare and pickle as the tuple of every op."""

from __future__ import annotations

import dataclasses
import math
import pickle
import random
from pathlib import Path

import pytest

from precision_tool.analysis.graphs.op_labels import labels_of_ops
from precision_tool.analysis.results import result_ops
from precision_tool.analysis.results.counts import counts_of
from precision_tool.analysis.results.result_ops import OpSequence, op_results
from precision_tool.analysis.results.results import FirstFailure, RowDigest, summarize_digest

COSINES = [0.999, 0.9801, 0.98, 0.5, -1.0, 0.0, math.nan, math.inf, -math.inf]


def _tensor(rng: random.Random, op: str, kind: str, index: int) -> tuple[str, float, bool, float]:
    cosine = rng.choice(COSINES)
    nan_data = rng.random() < 0.15 and (cosine != cosine or abs(cosine) == math.inf)
    return f"{op}:{kind}:{index}", cosine, nan_data, rng.choice([0.0, 1.5, math.nan])


def _digest(rng: random.Random, ops: int) -> RowDigest:
    fields = []
    for k in range(ops):
        name = f"net/op{k}"
        inputs = tuple(_tensor(rng, name, "input", i) for i in range(rng.randint(0, 2)))
        outputs = tuple(_tensor(rng, name, "output", i) for i in range(rng.randint(0, 2)))
        overflowed = (f"{name}:output:0",) if outputs and rng.random() < 0.1 else ()
        fields.append((str(k), name, name, "Add", inputs, outputs, (), overflowed))
    return RowDigest(fields, rows=ops, compared=ops)


def _made_one_by_one(digest: RowDigest, threshold: float, labels):  # type: ignore[no-untyped-def]
    """The summary as it was made before OpSequence: every op an OpResult first, then each question asked of them."""
    ops = op_results(digest.ops, labels)
    abnormal = tuple(op for op in ops if op.failing_outputs(threshold))
    divergent = next((op for op in abnormal if not op.failing_inputs(threshold)), None)
    first = None
    for op in ops:
        if op.failing_inputs(threshold):
            first = FirstFailure(op, op.failing_inputs(threshold)[0], is_graph_input=True)
            break
        if op.failing_outputs(threshold):
            first = FirstFailure(op, op.failing_outputs(threshold)[0], is_graph_input=False)
            break
    cosines = [t.cosine for op in ops for t in op.outputs if not math.isnan(t.cosine)]
    return (tuple(ops), abnormal, divergent, first, sum(len(op.nan_data_outputs) for op in ops),
            min(cosines) if cosines else math.nan, tuple(op for op in ops if op.overflowed))


def _same_number(a: float, b: float) -> bool:
    return (math.isnan(a) and math.isnan(b)) or a == b


@pytest.mark.parametrize("seed", range(60))
def test_the_summary_says_what_every_op_made_first_said(seed: int) -> None:
    rng = random.Random(seed)
    digest = _digest(rng, rng.randint(0, 40))
    threshold = rng.choice([0.98, 0.5, 0.0])
    labels = labels_of_ops("g.pbtxt", [(100 + k, f"net/op{k}") for k in range(0, len(digest.ops), 2)]) \
        if seed % 2 else None
    summary = summarize_digest(digest, Path("result_1.csv"), threshold, labels=labels)
    ops, abnormal, divergent, first, nan_data, low, overflowed = _made_one_by_one(digest, threshold, labels)
    assert summary.abnormal_ops == abnormal
    assert summary.first_divergent_op == divergent
    assert summary.first_failure == first
    assert summary.nan_data_outputs == nan_data
    assert _same_number(summary.min_output_cosine, low)
    assert summary.overflow_ops == overflowed
    # counted on the plain fields, as counts_of counts every op made
    assert counts_of(summary) == counts_of(dataclasses.replace(summary, output_counts=None))
    assert summary.ops == ops and ops == tuple(summary.ops)


def test_a_summary_makes_only_the_ops_it_names(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    made: list[str] = []
    real = result_ops.op_results

    def counting(fields, labels=None):  # type: ignore[no-untyped-def]
        fields = list(fields)
        made.extend(f[1] for f in fields)
        return real(fields, labels)

    monkeypatch.setattr(result_ops, "op_results", counting)
    passing = ("t:output:0", 0.999, False, 0.0)
    fields = [(str(k), f"op{k}", f"op{k}", "Add", (), (passing,), (), ()) for k in range(1000)]
    fields[500] = ("500", "op500", "op500", "Add", (), (("op500:output:0", 0.1, False, 2.0),), (), ())
    summary = summarize_digest(RowDigest(fields, 1000, 1000), Path("result_1.csv"), 0.98)
    assert made == ["op500"] and summary.abnormal_ops[0].npu_op == "op500"
    assert counts_of(summary).ops == 1000 and made == ["op500"]
    assert summary.first_failure is not None and summary.first_failure.op is summary.ops[500]
    assert len(list(summary.ops)) == 1000 and sorted(made) == sorted(f"op{k}" for k in range(1000))  # each once


def test_the_ops_read_compare_and_pickle_as_a_tuple() -> None:
    digest = _digest(random.Random(7), 12)
    labels = labels_of_ops("g.pbtxt", [(100 + k, f"net/op{k}") for k in range(12)])
    every = tuple(op_results(digest.ops, labels))
    ops = OpSequence(digest.ops, labels)
    assert ops[3] == every[3] and ops[3] is ops[3] and ops[-1] == every[-1]
    assert ops[2:5] == every[2:5] and isinstance(ops[2:5], tuple)
    assert len(ops) == 12 and list(ops) == list(every) and ops == every and ops != list(every)  # (as a tuple is)
    assert ops == OpSequence(digest.ops, labels) and ops != every[:-1]
    assert every[4] in ops and ops.index(every[4]) == 4 and repr(ops) == repr(every)
    assert every[:2] + ops == every[:2] + every and ops + every[:1] == every + every[:1] and ops + ops == every * 2
    again = pickle.loads(pickle.dumps(ops))  # (as a tuple; compared by repr: a NaN read back is another NaN)
    assert isinstance(again, tuple) and repr(again) == repr(every)
    with pytest.raises(IndexError):
        ops[12]
    with pytest.raises(TypeError):
        hash(ops)
    assert OpSequence([]) == () and not OpSequence([])
