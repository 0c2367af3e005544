"""labels_of_ops: each op found by its graph name and by its dump-file spelling; a name or spelling two
different ops share names neither (no single id to show)."""

from __future__ import annotations

from precision_tool.analysis.graphs.op_labels import OpLabel, labels_of_ops


def test_an_op_is_found_by_name_and_by_dump_spelling() -> None:
    labels = labels_of_ops("g.txt", [(3, "net/conv1/Conv2D"), (4, "relu")])
    assert labels.get("net/conv1/Conv2D") == OpLabel("3", "net/conv1/Conv2D")
    assert labels.get("net_conv1_Conv2D") == OpLabel("3", "net/conv1/Conv2D")
    assert labels.get("relu") == OpLabel("4", "relu")
    assert labels.get("missing") is None


def test_a_shared_name_or_spelling_names_no_op() -> None:
    # two graphs holding one name under two ids; two names that spell the same dump-file name
    labels = labels_of_ops("a.txt, b.txt", [(1, "x/y"), (2, "x/y"), (5, "a/b"), (6, "a_b"), (7, "c"), (7, "c")])
    assert labels.get("x/y") is None and labels.get("x_y") is None
    assert labels.get("a/b") == OpLabel("5", "a/b")  # its own name still names it
    assert labels.get("a_b") is None  # the spelling of "a/b" and the name of op 6
    assert labels.get("c") == OpLabel("7", "c")  # the same op twice is no clash
