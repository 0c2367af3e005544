"""Help text reflows to the width at word boundaries; every parser error speaks the usage line's words."""

from __future__ import annotations

import argparse
import re

import pytest

from precision_tool.shell.table import build_table

ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
TABLE = build_table()
NAMES = [c.name for c in TABLE]
HEADINGS = ("usage:", "positional arguments:", "options:", "examples:")


def _description_lines(text: str) -> list[str]:
    """The description's prose: after the usage block, before the argument sections, not indented."""
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if not line.strip())  # usage ends at the first blank
    end = next((i for i, line in enumerate(lines) if line in ("positional arguments:", "options:")), len(lines))
    return lines[start:end]


def _assert_filled(lines: list[str], width: int, where: str) -> None:
    """Greedy fill: no prose line ends early, i.e. the next line's first word would not have fitted."""
    for line, after in zip(lines, lines[1:]):
        if not line or not after or line[0] == " " or after[0] == " " or line.endswith(":"):
            continue
        first = after.split()[0]
        assert len(line) + 1 + len(first) > width, f"{where}: {line!r} broke before {first!r}"
        assert len(line) <= width or " " not in line, f"{where}: {line!r} is wider than {width}"


@pytest.mark.parametrize("width", [80, 120, 200])
def test_every_command_help_reflows_in_a_pipe(cli, tmp_path, width):
    for command in TABLE:
        result = cli(command.name, "-h", data=tmp_path, env={"COLUMNS": str(width)})
        assert result.status == 0 and result.out.startswith(f"usage: {command.name}"), result.out
        shown = min(width, 120)  # help, like panels, is no wider than 120 columns
        lines = result.out.splitlines()
        _assert_filled(_description_lines(result.out), shown, f"{command.name} -h at {width}")
        for line in lines:
            # Only a single word longer than the line (a path) may be wider: it is never split.
            assert len(line) <= shown or len(line.split()) == 1 or line.startswith("  "), (command.name, line)
        # Nothing lost: every word of the description is printed whole.
        words = result.out.split()
        for word in (command.description or command.summary).split():
            assert word in words, (command.name, word)
        assert result.out == cli("help", command.name, data=tmp_path, env={"COLUMNS": str(width)}).out


@pytest.mark.parametrize("columns", [80, 120, 200])
def test_help_in_a_terminal_reflows_to_its_width(tmp_path, spawn, run, columns):
    data = tmp_path / "precision_data"
    data.mkdir()
    child = spawn(data, tmp_path / "history", {"COLUMNS": str(columns)}, columns=columns)
    shown = min(columns, 120)
    for line in [f"help {name}" for name in NAMES] + ["tf_dump -h", "help"]:
        screen = ANSI.sub("", run(child, line)).replace("\r\n", "\n")
        lines = screen.splitlines()
        assert all(len(row) <= (columns if line == "help" else shown) for row in lines), (line, screen)
        if line != "help":
            assert screen.strip("\n").startswith(f"usage: {line.split()[1] if line.startswith('help') else 'tf_dump'}")
            _assert_filled(_description_lines(screen.strip("\n")), shown, line)
    # The command table: names whole in their column, summaries wrapped at words under theirs.
    rows = [r for r in screen.splitlines() if r.strip()]
    column = rows[0].index("what it does")
    for command in TABLE:
        row = next(r for r in rows if re.match(rf"\s*{command.name}[ ,]", r))
        at = rows.index(row)
        text = row[column:]
        for more in rows[at + 1:]:
            if more[:column].strip():
                break
            text += " " + more[column:]
        assert " ".join(text.split()).startswith(" ".join(command.summary.split())[:40]), (command.name, text)
    child.close(force=True)


def test_a_long_example_wraps_its_explanation_under_itself(cli, tmp_path):
    out = cli("demo", "-h", data=tmp_path, env={"COLUMNS": "80"}).out.splitlines()
    at = next(i for i, line in enumerate(out) if line.startswith("  demo /tmp/pd --force"))
    column = out[at].index("rebuild")
    assert len(out[at]) <= 80 and out[at + 1].startswith(" " * column) and out[at + 1][column] != " "


def test_top_level_help_lists_every_command(cli):
    result = cli("-h", env={"COLUMNS": "80"})
    assert result.status == 0
    listed = result.out[result.out.index("commands ("):]
    for command in TABLE:
        assert re.search(rf"^  {re.escape(command.name)}\b", listed, re.M), command.name
        assert " ".join(command.summary.split()) in " ".join(listed.split()), command.name
    assert "exit, quit" in listed


@pytest.mark.parametrize("width", [80, 200])
def test_top_level_help_ends_with_examples_that_run(cli, width):
    import shlex

    from precision_tool.shell.main import top_parser

    out = cli("--help", env={"COLUMNS": str(width)}).out.splitlines()
    at = out.index("examples:")
    assert out[at - 1] == "" and at > next(i for i, line in enumerate(out) if line.startswith("commands ("))
    examples = [line for line in out[at + 1:] if line.startswith("  precision-tool ")]
    commands = [re.split(r"\s{2,}", line.strip())[0] for line in examples]
    assert commands == ["precision-tool demo", "precision-tool --data DIR", "precision-tool --data DIR ac -c",
                        "precision-tool vcs -c 0.99 -l 10", "precision-tool ni OP -s 3",
                        "precision-tool replay OP", "precision-tool tf_dump"]
    # each one line whose explanation starts at one column, beside its command even at 80 columns
    assert len({line.index(re.split(r"\s{2,}", line.strip())[1]) for line in examples}) == 1
    assert all(len(line) <= 80 for line in examples), examples
    for command in commands:  # each parses as written, top level and command (OP, DIR filled in)
        words = shlex.split(command.replace("OP", "bn2/FusedBatchNormV3").replace("DIR", "/tmp/pd"))[1:]
        args = top_parser(TABLE).parse_args(words)
        if args.command:
            TABLE.get(args.command[0]).parser().parse_args(args.command[1:])


def _bad_inputs(command) -> list[list[str]]:
    """Command lines a user can get wrong, one per argument of the parser."""
    parser = command.parser()
    cases: list[list[str]] = []
    for action in parser._actions:
        if action.dest == "help":
            continue
        if action.option_strings:
            option = action.option_strings[-1]
            if action.nargs == 0:
                cases.append([f"{option}=x"] if option.startswith("--") else [])
            else:
                cases.append([option])  # no value
                if action.choices or action.type not in (None, str):
                    cases.append([option, "zz"])
        elif action.choices:
            cases.append(["zz"])
        elif action.required:
            cases.append([])
    return [c for c in cases if c or any(a.required for a in parser._actions)]


def test_no_parser_error_shows_an_internal_name(cli, tmp_path):
    import shlex

    lines, internal = [], []
    for command in TABLE:
        names = {a.dest for a in command.parser()._actions if not a.option_strings and a.metavar != a.dest}
        for words in _bad_inputs(command):
            lines.append(shlex.join([command.name, *words]))
            internal.append(names)
    assert len(lines) > 20
    # stdin mode: one process, one line of output per bad line
    result = cli(data=tmp_path, stdin="\n".join(lines) + "\n")
    said = result.out.strip().splitlines()
    assert result.status == 1 and len(said) == len(lines), (lines, result.out)
    for typed, line, names in zip(lines, said, internal):
        name = typed.split()[0]
        assert line.startswith(f"{name}: "), (typed, line)
        assert "argument " not in line and "invalid choice" not in line, (typed, line)
        assert not any(re.search(rf"\b{re.escape(n)}\b", line) for n in names), (typed, line)


def test_choice_and_value_messages(cli, tmp_path):
    cases = {
        ("ls", "|"): "ls: `|` is shell syntax, and the tool's commands do not go through a shell; from bash: "
                     f"precision-tool --data {tmp_path} ls |",
        ("ls", "bogus"): "ls: 'bogus' is not one of: dump (see `ls -h`)",
        ("dc",): "dc: give one dump file, folder or op name: `dc NAME` or `dc -n NAME` (see `dc -h`)",
        ("cp", "-n", "a"): "cp: -n/--name needs 2 values (see `cp -h`)",
        ("tf_dump", "--format", "v3"): "tf_dump: --format takes one of: auto, v1, v2; not 'v3' (see `tf_dump -h`)",
        ("tf_dump", "--force=3"): "tf_dump: --force takes no value (got '3') (see `tf_dump -h`)",
        ("ac", "-l"): "ac: -l/--limit needs a value (see `ac -h`)",
        ("ac", "-l", "x"): "ac: -l/--limit: 'x' is not a whole number (see `ac -h`)",
    }
    for words, expected in cases.items():
        result = cli(*words, data=tmp_path)
        assert result.status == 1 and result.out.strip() == expected, (words, result.out)


def test_positionals_show_their_metavar_in_usage():
    usage = TABLE.get("dc").parser().format_usage()
    assert "TARGET" in usage and "target" not in usage
    assert isinstance(TABLE.get("run").parser()._actions[-1].nargs, str)  # run keeps its raw remainder
    assert TABLE.get("run").parser()._actions[-1].nargs == argparse.REMAINDER


def test_a_plain_int_or_float_option_speaks_like_ours():
    from precision_tool.errors import UsageError
    from precision_tool.shell.command import CommandParser

    parser = CommandParser(prog="x")
    parser.add_argument("-n", type=int)
    parser.add_argument("-f", type=float)
    parser.add_argument("thing", nargs="+")
    said = []
    for words in (["-n", "q", "a"], ["-f", "q", "a"], []):
        with pytest.raises(UsageError) as caught:
            parser.parse_args(words)
        said.append(str(caught.value))
    assert said == ["x: -n: 'q' is not a whole number (see `x -h`)", "x: -f: 'q' is not a number (see `x -h`)",
                    "x: the following arguments are required: THING (see `x -h`)"]
