"""Tab completion decisions, on the real command table."""

from __future__ import annotations

from precision_tool.shell.completion import ShellCompleter
from precision_tool.shell.table import build_table
from precision_tool.workspace import Workspace


def _suggest(tmp_path, text: str) -> list[str]:
    return list(ShellCompleter(build_table(), Workspace(tmp_path)).suggestions(text))


def test_command_names_options_and_fixed_values(tmp_path):
    # the original's spelling `vector_compare` (an alias of vc) completes too
    assert _suggest(tmp_path, "v") == ["vc", "vcs", "vector_compare"]
    assert _suggest(tmp_path, "help v") == ["vc", "vcs", "vector_compare"]
    assert _suggest(tmp_path, "ac --l") == ["--limit"]
    assert _suggest(tmp_path, "vc --backend ") == ["auto", "native", "cann"]
    assert _suggest(tmp_path, "vc --backend n") == ["native"]
    assert _suggest(tmp_path, "help ac ") == []  # help takes one command


def test_ls_graph_filter_completes_graph_files(tmp_path):
    graph_dir = Workspace(tmp_path).graph_dir(0)
    graph_dir.mkdir(parents=True)
    (graph_dir / "ge_proto_00000001_graph_1_Build.txt").write_text('graph { name: "g1" op { name: "a" type: "Data" } }\n')
    assert "ge_proto_00000001_graph_1_Build.txt" in _suggest(tmp_path, "ls -g ")


def test_a_failing_completer_offers_nothing_instead_of_a_traceback(tmp_path):
    from prompt_toolkit.completion import CompleteEvent
    from prompt_toolkit.document import Document

    from precision_tool.shell.command import Command, CommandTable

    def unreadable(request):
        raise PermissionError(13, "Permission denied", str(tmp_path))

    table = CommandTable([Command("look", "reads a folder", lambda p: p.add_argument("x"), lambda a, c: None,
                                  completer=unreadable)])
    completer = ShellCompleter(table, Workspace(tmp_path))
    assert list(completer.get_completions(Document("look "), CompleteEvent(completion_requested=True))) == []
    assert [c.text for c in completer.get_completions(Document("lo"), CompleteEvent())] == ["look"]
