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


def _offered(root, text: str) -> list[str]:
    from prompt_toolkit.completion import CompleteEvent
    from prompt_toolkit.document import Document

    completer = ShellCompleter(build_table(), Workspace(root))
    completions = list(completer.get_completions(Document(text), CompleteEvent(completion_requested=True)))
    typed = text.split()[-1]
    assert all(c.start_position == -len(typed) for c in completions)  # each replaces the word typed
    return [c.text for c in completions]


def test_the_start_of_an_op_part_offers_its_dump_files_golden_files_and_op(demo_workspace, monkeypatch):
    from precision_tool.analysis.dumps import dump_files
    from precision_tool.analysis.graphs.graph_index import index_for

    index_for(Workspace(demo_workspace)).load()  # op names are offered once the index is loaded
    dumps = sorted(p.name for p in (demo_workspace / "npu").glob("debug_[01]/dump/*/**/BatchNorm.bn2_Fused*"))
    golden = sorted(p.name for p in (demo_workspace / "tf" / "dump").glob("bn2_FusedBatchNormV3.*.npy"))
    assert len(dumps) == 2 and len(golden) == 6
    # as the dump file names spell the op, whatever the type prefix; the golden .npy; the op itself
    assert _offered(demo_workspace, "pt bn2_Fu") == dumps + golden + ["bn2_FusedBatchNormV3"]
    assert _offered(demo_workspace, "cp bn2_Fu") == dumps + golden + ["bn2_FusedBatchNormV3"]
    assert _offered(demo_workspace, "dc bn2_Fu") == dumps + ["bn2_FusedBatchNormV3"]  # dc decodes dumps only
    assert _offered(demo_workspace, "pt bn2/Fu") == ["bn2/FusedBatchNormV3"]  # the graph spelling
    assert _offered(demo_workspace, "pt BatchNorm.bn2") == dumps  # the whole name, as before
    assert _offered(demo_workspace, "pt bn2_FusedBatchNormV3.3") == [golden[3]]
    assert _offered(demo_workspace, "pt zzz_nothing") == []
    # the names are kept per workspace: later keystrokes read no dump folder
    scans = []
    real_scan = dump_files.scan_dump_folder
    monkeypatch.setattr(dump_files, "scan_dump_folder", lambda folder: scans.append(folder) or real_scan(folder))
    for text in ("pt b", "pt bn", "pt bn2_", "pt bn2_R", "pt conv1_C"):
        assert _offered(demo_workspace, text)
    assert scans == []
