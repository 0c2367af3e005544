"""The map of docs/architecture.md, checked: every import in precision_tool/ (at module level, inside
functions and under TYPE_CHECKING alike) goes down the map, never in a circle; modules and folders stay
small enough to read at a glance.

A *folder* here is a subpackage of analysis/, formats/, render/ or shell/commands/ (analysis/compare/,
formats/ge/, ...), or capture/, simulate/, demo/, backends/ as a whole; any other module (analysis/ranks.py,
render/console.py, workspace.py) stands for itself.
"""

from __future__ import annotations

import ast

from tests.tools.import_graph import PACKAGE, find_cycle, imports, modules

MAX_LINES = 500
MAX_MODULES_PER_FOLDER = 12

# Which layer each folder or module belongs to, and the layers each layer may import besides its own.
BASE = {"precision_tool", "errors", "atomic", "shapes", "gc_pause", "config", "workspace", "child_env"}
LAYERS_ALLOWED = {
    "base": set(),
    "formats": {"base"},  # and of the base only errors, atomic, shapes, gc_pause (test_layers.py)
    "capture": {"base", "formats"},  # the training side: never the analysis, the shell or tf_config
    "training": {"base", "capture"},  # tf_config.py, tf_session.py: imported by training scripts
    "analysis": {"base", "formats"},
    "simulate": {"base", "formats", "capture"},  # the simulated NPU run: reads a captured step, writes dumps
    "demo": {"base", "formats", "capture", "training", "simulate"},  # its golden step is a training script
    "backends": {"base", "formats", "analysis"},
    "render": {"base", "formats", "analysis"},
    "shell": {"base", "formats", "analysis", "capture", "simulate", "demo", "backends", "render"},
    "entry": {"shell"},  # cli.py, __main__.py
}

# Between the folders of formats/ and analysis/: who may read whom (formats/* may be read by any of
# analysis/; the base by everyone). The comparison engine never reads replay or the report; the
# report's data reads everything below it.
FORMATS = {"formats.ge", "formats.npu", "formats.tf", "formats.run_config", "formats.loss_record",
           "formats.small_files"}
ANALYSIS_ALLOWED = {
    "formats.small_files": set(),
    "formats.ge": set(),
    "formats.npu": {"formats.small_files"},  # (how dumps and golden files are read: one rule for both)
    "formats.tf": {"formats.small_files"},
    "formats.run_config": set(),
    "formats.loss_record": set(),
    "analysis.graphs": set(),
    "analysis.results": {"analysis.graphs"},
    "analysis.dumps": {"analysis.graphs", "analysis.results"},
    "analysis.checks": {"analysis.graphs", "analysis.dumps"},
    "analysis.ranks": {"analysis.results"},
    "analysis.compare": {"analysis.graphs", "analysis.results", "analysis.checks", "analysis.ranks"},
    "analysis.ops": {"analysis.graphs", "analysis.results", "analysis.dumps", "analysis.compare"},
    "analysis.replay": {"analysis.graphs", "analysis.results", "analysis.dumps", "analysis.ops",
                        "analysis.compare"},  # `replay --all` on a Dask cluster: the compare's connection
    "analysis.report": {"analysis.graphs", "analysis.results", "analysis.dumps", "analysis.checks",
                        "analysis.ranks", "analysis.compare", "analysis.ops", "analysis.replay",
                        "analysis.steps"},
    "analysis.infer_import": {"analysis.results"},
    "analysis.golden_extract": set(),
    "analysis.steps": {"analysis.results", "analysis.compare", "analysis.golden_extract"},
    "analysis.bisect": {"analysis.graphs", "analysis.results", "analysis.compare", "analysis.replay"},
    "analysis.explore": {"analysis.graphs", "analysis.results", "analysis.compare", "analysis.replay",
                         "analysis.report"},
}


def _folder(module: str) -> str:
    parts = module.split(".")[1:]
    if not parts:
        return "precision_tool"
    if parts[0] in ("analysis", "formats", "render") and len(parts) >= 3:
        return ".".join(parts[:2])
    if parts[:2] == ["shell", "commands"] and len(parts) >= 4:
        return ".".join(parts[:3])
    if parts[0] in ("capture", "simulate", "demo", "backends"):
        return parts[0]
    return ".".join(parts)


def _layer(folder: str) -> str:
    top = folder.split(".")[0]
    if folder in BASE:
        return "base"
    if folder in ("tf_config", "tf_session"):
        return "training"
    if folder in ("cli", "__main__"):
        return "entry"
    return top


def _folder_edges() -> dict[tuple[str, str], str]:
    """(folder, folder it imports) → one example 'module:line imports module'."""
    edges: dict[tuple[str, str], str] = {}
    for module, targets in imports().items():
        for target, line in targets.items():
            pair = (_folder(module), _folder(target))
            if pair[0] != pair[1]:
                edges.setdefault(pair, f"{module}:{line} imports {target}")
    return edges


def test_the_walk_sees_the_imports_it_must_see():
    """The checks below are only as good as the walk: imports inside functions and `from pkg import
    module` both count."""
    graph = imports()
    assert len(graph) > 150
    assert "precision_tool.analysis.dumps.origin_layout" in graph["precision_tool.analysis.checks.overflow"]
    # function-level: ni -c hands over to replay
    assert "precision_tool.shell.commands.replay" in graph["precision_tool.shell.commands.graphs"]
    # `from precision_tool.capture import tf_setup` inside a function
    assert "precision_tool.capture.tf_setup" in graph["precision_tool.capture.replay_step"]


def test_no_import_circle_betweenmodules():
    edges = {module: set(targets) for module, targets in imports().items()}
    assert find_cycle(edges) is None, " → ".join(find_cycle(edges) or [])


def test_no_circle_between_folders():
    edges: dict[str, set[str]] = {}
    for source, target in _folder_edges():
        edges.setdefault(source, set()).add(target)
    cycle = find_cycle(edges)
    examples = _folder_edges()
    assert cycle is None, "; ".join(examples[(a, b)] for a, b in zip(cycle, cycle[1:]))


def test_layers_import_only_the_layers_below_them():
    offences = [example for (source, target), example in _folder_edges().items()
                if _layer(target) not in LAYERS_ALLOWED[_layer(source)] | {_layer(source)}]
    assert offences == []


def test_analysis_and_formats_folders_follow_the_map():
    offences = []
    for (source, target), example in _folder_edges().items():
        if source not in ANALYSIS_ALLOWED or not target.startswith(("analysis", "formats")):
            continue
        allowed = ANALYSIS_ALLOWED[source] | (FORMATS if source.startswith("analysis") else set())
        if target not in allowed:
            offences.append(example)
    assert offences == []
    # every folder of analysis/ and formats/ is on the map
    folders = {_folder(m) for m in modules() if m.startswith(("precision_tool.analysis.", "precision_tool.formats."))}
    assert folders == set(ANALYSIS_ALLOWED)


def test_every_package_says_what_it_holds_and_imports_nothing():
    """An __init__ holds its folder's docstring only (what it holds, what it may import, what may import
    it), so importing any module never drags its siblings in."""
    offences = []
    for init in sorted(PACKAGE.rglob("__init__.py")):
        tree = ast.parse(init.read_text(encoding="utf-8"))
        if not ast.get_docstring(tree):
            offences.append(f"{init.relative_to(PACKAGE)} has no docstring")
        if any(isinstance(node, (ast.Import, ast.ImportFrom)) for node in ast.walk(tree)):
            offences.append(f"{init.relative_to(PACKAGE)} imports something")
    assert offences == []


def test_modules_and_folders_stay_small():
    long = [f"{path.relative_to(PACKAGE)}: {n} lines" for path in modules().values()
            if (n := len(path.read_text(encoding="utf-8").splitlines())) > MAX_LINES]
    crowded = [f"{folder.relative_to(PACKAGE)}/: {n} modules" for folder in [PACKAGE, *PACKAGE.rglob("*")]
               if folder.is_dir() and (n := len([p for p in folder.glob("*.py") if p.name != "__init__.py"]))
               > MAX_MODULES_PER_FOLDER]
    assert long == [] and crowded == []
