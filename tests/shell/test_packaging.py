"""`pip install .` gives a working `precision-tool` console script with its data files."""

from __future__ import annotations

import subprocess
import venv
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_pip_install_gives_console_script(tmp_path):
    # System site-packages supply the dependencies; the project itself is installed (not editable) anew.
    venv.EnvBuilder(system_site_packages=True, with_pip=True).create(tmp_path / "venv")
    python = tmp_path / "venv" / "bin" / "python"
    subprocess.run([str(python), "-m", "pip", "install", "-q", "--no-deps", "--no-build-isolation",
                    "--disable-pip-version-check", str(ROOT)], check=True, capture_output=True, cwd=tmp_path)
    script = tmp_path / "venv" / "bin" / "precision-tool"
    proc = subprocess.run([str(script), "--data", str(tmp_path / "ws"), "help"], capture_output=True,
                          text=True, cwd=tmp_path, env={"NO_COLOR": "1", "PATH": "/usr/bin:/bin"})
    assert proc.returncode == 0, proc.stderr
    assert "auto check" in proc.stdout
    # The installed package, not the checkout, answered, and its shipped data files came along.
    where = subprocess.run([str(python), "-c", "import precision_tool, pathlib; "
                            "p = pathlib.Path(precision_tool.__file__).parent; "
                            "print(p); print(len(list(p.rglob('*.json'))))"],
                           capture_output=True, text=True, cwd=tmp_path, check=True).stdout.split()
    assert "site-packages" in where[0]
    shipped = len(list((ROOT / "precision_tool").rglob("*.json")))
    assert int(where[1]) == shipped
