"""Prose wraps like text: at word boundaries, indented continuations, words (paths, op names) never split."""

from __future__ import annotations

import io

from hypothesis import given, settings
from hypothesis import strategies as st
from rich.text import Text

from precision_tool.render.console import HANGING_INDENT, Paged, make_console, show, wrap_prose

WORDS = st.text(alphabet="abcdefghij/_.:-0123456789", min_size=1, max_size=60)


@settings(max_examples=300, deadline=None)
@given(st.integers(0, 6), st.lists(WORDS, min_size=1, max_size=40), st.integers(20, 200))
def test_words_survive_and_lines_fit(indent: int, words: list[str], width: int) -> None:
    line = " " * indent + " ".join(words)
    lines = wrap_prose(Text(line), width).plain.split("\n")
    # The same words in the same order: nothing split, nothing lost.
    assert " ".join(lines).split() == words
    for i, out in enumerate(lines):
        if len(out) > width:  # only a line holding one word too long for any line
            assert len(out.split()) == 1
        if i and len(out.split()) > 1:
            assert out.startswith(" " * min(indent + HANGING_INDENT, width // 2))
    assert lines[0].startswith(" " * indent) or indent + len(lines[0]) > width


def test_a_path_too_long_for_its_indent_moves_left_only_as_far_as_it_must() -> None:
    path = "/tmp/pd/temp/vector_compare/20261201041350/result_20261201041350_npu_vs_npu.csv"  # 79 cells
    assert wrap_prose(Text("  " + path), 80).plain == " " + path
    assert wrap_prose(Text("result: " + path), 80).plain == "result:\n " + path
    assert wrap_prose(Text("result: " + path), 79).plain == "result:\n" + path
    # under an indented label, as ni's Replay section has it: indented, never past the line
    label = " " * 15 + "reproducer for the op's vendor: "
    lines = wrap_prose(Text(label + path[:69]), 80).plain.split("\n")
    assert lines == [label.rstrip(), " " * 11 + path[:69]]


def test_short_lines_and_blank_lines_are_kept() -> None:
    text = Text("one\n\n  two three")
    assert wrap_prose(text, 80).plain == "one\n\n  two three"


def test_styles_follow_their_words() -> None:
    text = Text.assemble(("first divergent op: ", "bold"), ("[16] bn2/FusedBatchNormV3", "op"), " — born here")
    wrapped = wrap_prose(text, 24)
    assert wrapped.plain.split("\n")[0] == "first divergent op: [16]"
    op_spans = [wrapped.plain[s.start:s.end] for s in wrapped.spans if s.style == "op"]
    assert op_spans == ["[16]", "bn2/FusedBatchNormV3"]


def _render(result: object, *, terminal: bool, width: int = 40) -> str:
    out = io.StringIO()
    show(make_console(file=out, width=width, terminal=terminal), result)
    return out.getvalue()


def test_terminal_wraps_and_pipe_keeps_one_line() -> None:
    message = "could not read /a/very/long/path/that/is/longer/than/forty/columns.npy: truncated file"
    in_terminal = _render(message, terminal=True)
    # a word too long for any line keeps its hanging indent: folded either way, it stays under its sentence
    assert "\n  /a/very/long/path/that/is/longer/than/forty/columns.npy" in in_terminal.replace("\x1b[0m", "")
    assert _render(message, terminal=False) == message + "\n"


def test_paged_prints_plainly_outside_the_interactive_shell() -> None:
    assert _render(Paged(["a", "b"]), terminal=False) == "a\nb\n"


def test_a_plain_block_prints_what_a_no_wrap_text_printed() -> None:
    """`ls dump`'s listing (render/console.PlainBlock): one write instead of rich's line-by-line layout, and the
    same bytes a Text with no_wrap printed: its header bold, lines longer than the width whole (the terminal
    folds them), the control codes a Text strips stripped, in a pipe, a terminal and through Paged."""
    from precision_tool.render.console import PlainBlock

    header = "in  out  dump file"
    rows = [" 1    1  Add.a_b.1.0.17", " 2    1  " + "Long." * 20 + "x", " 1    0  bell\x07cr\rend"]
    text = header + "\n" + "\n".join(rows)
    for terminal in (False, True):
        for width in (20, 200):
            block = _render(PlainBlock(text, bold_head=len(header)), terminal=terminal, width=width)
            before = Text(text, no_wrap=True)
            before.stylize("bold", 0, len(header))
            assert block == _render(before, terminal=terminal, width=width)
            assert _render(Paged([PlainBlock(text, bold_head=len(header))]), terminal=terminal, width=width) == block
    assert "\x07" not in block and "\r" not in block and ("Long." * 20) in block
    assert block.startswith("\x1b[1m" + header)  # the last one rendered in a terminal
    assert PlainBlock(text, bold_head=len(header)).plain == text.replace("\x07", "").replace("\r", "")
