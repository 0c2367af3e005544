"""The promises of architecture.md, checked: layers import downward only, start-up stays light."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "precision_tool"
LOWER_LAYERS = [PACKAGE / "formats", PACKAGE / "analysis", PACKAGE / "workspace.py", PACKAGE / "config.py",
                PACKAGE / "errors.py"]
FORBIDDEN = ("precision_tool.shell", "precision_tool.render", "rich", "prompt_toolkit")


def _python_files(paths: list[Path]) -> list[Path]:
    files: list[Path] = []
    for path in paths:
        files.extend(sorted(path.rglob("*.py")) if path.is_dir() else [path])
    return files


def _imports(tree: ast.AST) -> list[str]:
    names = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.extend(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.append(node.module)
    return names


def test_formats_and_analysis_never_import_the_shell_or_print():
    offences = []
    for path in _python_files(LOWER_LAYERS):
        tree = ast.parse(path.read_text(), filename=str(path))
        for name in _imports(tree):
            if any(name == f or name.startswith(f + ".") for f in FORBIDDEN):
                offences.append(f"{path.relative_to(PACKAGE)} imports {name}")
        for node in ast.walk(tree):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "print":
                offences.append(f"{path.relative_to(PACKAGE)}:{node.lineno} prints")
    assert offences == []


def test_the_training_side_never_imports_the_shell():
    """capture/, tf_config and tf_session run inside training scripts (TF 1.15 on Python 3.7 included),
    where neither the terminal libraries nor the shell exist."""
    files = _python_files([PACKAGE / "capture", PACKAGE / "tf_config.py", PACKAGE / "tf_session.py"])
    offences = [f"{path.relative_to(PACKAGE)} imports {name}" for path in files
                for name in _imports(ast.parse(path.read_text(), filename=str(path)))
                if any(name == f or name.startswith(f + ".") for f in FORBIDDEN)]
    assert len(files) > 5 and offences == []


def test_formats_know_nothing_of_the_workspace():
    offences = [
        f"{path.relative_to(PACKAGE)} imports {name}"
        for path in _python_files([PACKAGE / "formats"])
        for name in _imports(ast.parse(path.read_text()))
        if name.startswith(("precision_tool.workspace", "precision_tool.analysis"))
    ]
    assert offences == []


def _fresh_interpreter(probe: str) -> str:
    """What `probe` prints when run in a new interpreter (so only its own imports are in sys.modules)."""
    return subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                          cwd=PACKAGE.parent, check=True).stdout.strip()


def test_startup_imports_no_heavy_modules():
    probe = (
        "import sys\n"
        "from precision_tool.shell import main, repl\n"
        "from precision_tool.shell.table import build_table\n"
        "table = build_table()\n"
        "[c.parser() for c in table]\n"
        "heavy = sorted({m.split('.')[0] for m in sys.modules} & {'tensorflow', 'pandas', 'graphviz', 'keras'})\n"
        "print(','.join(heavy))\n"
    )
    assert _fresh_interpreter(probe) == ""


def test_listing_commands_render_without_numpy():
    """`ls` and `ls dump` read names and headers only: their renderers must not pull numpy in (~0.2 s)."""
    probe = (
        "import sys\n"
        "import precision_tool.render.graphs, precision_tool.render.dumps, precision_tool.render.ops.node_info\n"
        "import precision_tool.shell.commands.ls, precision_tool.analysis.graphs.graph_index\n"
        "print('numpy' in sys.modules)\n"
    )
    assert _fresh_interpreter(probe) == "False"
