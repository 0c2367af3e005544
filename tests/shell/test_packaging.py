"""`pip install .` gives a working `precision-tool` console script with its data files."""

from __future__ import annotations

import importlib.util
import os
import site
import subprocess
import sysconfig
import venv
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _setuptools_can_build() -> bool:
    """Whether the running environment has the setuptools pyproject.toml asks for (>= 64)."""
    if importlib.util.find_spec("setuptools") is None:
        return False
    import setuptools

    return int(setuptools.__version__.split(".")[0]) >= 64


def test_pip_install_gives_console_script(tmp_path):
    # The running interpreter's environment (a venv or the system's) supplies the dependencies: a .pth
    # file puts its site-packages on the new venv's path. `system_site_packages` would not do: from a venv
    # it gives the *base* interpreter's packages, which may lack them (and setuptools).
    target = tmp_path / "venv"
    venv.EnvBuilder(with_pip=True).create(target)
    python = target / "bin" / "python"
    new_site = subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                              capture_output=True, text=True, check=True).stdout.strip()
    ours = {sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"], *site.getsitepackages()}
    if site.ENABLE_USER_SITE and os.path.isdir(site.getusersitepackages()):
        ours.add(site.getusersitepackages())  # `pip install --user` (Debian's dist-packages: getsitepackages)
    (Path(new_site) / "outer_env.pth").write_text("\n".join(sorted(ours)) + "\n")
    # Build with the running environment's setuptools when it has a suitable one, else let pip build in
    # isolation from the configured index, as `pip install .` on a user's machine does.
    isolation = [] if not _setuptools_can_build() else ["--no-build-isolation"]
    built = subprocess.run([str(python), "-m", "pip", "install", "-q", "--no-deps", *isolation,
                            "--disable-pip-version-check", str(ROOT)], capture_output=True, text=True, cwd=tmp_path)
    assert built.returncode == 0, built.stdout + built.stderr
    script = target / "bin" / "precision-tool"
    proc = subprocess.run([str(script), "--data", str(tmp_path / "ws"), "help"], capture_output=True,
                          text=True, cwd=tmp_path, env={"NO_COLOR": "1", "PATH": "/usr/bin:/bin"})
    assert proc.returncode == 0, proc.stderr
    assert "auto check" in proc.stdout
    # The installed package, not the checkout, answered, and its shipped data files came along.
    where = subprocess.run([str(python), "-c", "import precision_tool, pathlib; "
                            "p = pathlib.Path(precision_tool.__file__).parent; "
                            "print(p); print(sorted(str(f.relative_to(p)) for f in p.rglob('*') "
                            "if f.is_file() and f.suffix not in ('.py', '.pyc')))"],
                           capture_output=True, text=True, cwd=tmp_path, check=True).stdout.splitlines()
    assert where[0].startswith(str(target)) and "site-packages" in where[0]
    package = ROOT / "precision_tool"
    shipped = sorted(str(f.relative_to(package)) for f in package.rglob("*")
                     if f.is_file() and f.suffix not in (".py", ".pyc") and "__pycache__" not in f.parts)
    assert "py.typed" in shipped and where[1] == repr(shipped)
