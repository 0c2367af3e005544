"""Running the tool as a user whom file permissions bind (tests of read-only workspaces): `nobody` as
root, or the current user on folders made read-only with chmod."""

from __future__ import annotations

import os
import pwd
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _blocking_ancestor(path: Path) -> Path | None:
    """The topmost folder above (or at) `path` that other users cannot enter, or None."""
    for folder in reversed([path, *path.parents]):
        if not os.stat(folder).st_mode & 0o001:
            return folder
    return None


def _needed_paths(extra: list[Path]) -> list[Path]:
    """What another user must reach to run this interpreter on the checkout: its prefixes and the checkout."""
    import site

    paths = {Path(os.path.realpath(p)) for p in (sys.prefix, sys.base_prefix, os.path.dirname(sys.executable),
                                                   os.path.dirname(os.path.realpath(sys.executable)), ROOT,
                                                   *site.getsitepackages(), *extra)}
    paths = {p for p in paths if p.exists()}
    return sorted(p for p in paths if not any(q != p and q in p.parents for q in paths))


def as_nobody(command: list[str], reach: list[Path] = ()) -> list[str]:
    """`command` run as the user nobody (root only), with a HOME that does not exist.

    The interpreter often lives under a folder only root may enter (/root/.pyenv): a private mount
    namespace covers each such folder with an empty world-enterable tmpfs and binds back just the paths
    needed, at the same place. Nothing changes outside that namespace.
    """
    steps: list[str] = []
    binds: list[tuple[Path, int]] = []
    covered: list[Path] = []
    for n, path in enumerate(_needed_paths(list(reach))):
        blocker = _blocking_ancestor(path)
        if blocker is None:
            continue
        binds.append((path, n))
        if blocker not in covered:
            covered.append(blocker)
    steps.append("stash=$(mktemp -d)")
    for path, n in binds:
        steps.append(f"mkdir $stash/{n} && mount --bind '{path}' $stash/{n}")
    for blocker in covered:
        steps.append(f"mount -t tmpfs -o mode=755,size=1m tmpfs '{blocker}'")
    for path, n in binds:
        steps.append(f"mkdir -p '{path}' && mount --move $stash/{n} '{path}'")
    steps.append('rm -r "$stash"')
    # nobody's own group by number: Debian calls it nogroup, other systems nobody
    gid = pwd.getpwnam("nobody").pw_gid
    steps.append(f'exec setpriv --reuid=nobody --regid={gid} --clear-groups env HOME=/nonexistent "$@"')
    return ["unshare", "-m", "--propagation", "private", "sh", "-c", " && ".join(steps), "sh", *command]


def read_only_user_command(command: list[str], workspace: Path) -> list[str]:
    """As root: `command` as nobody on `workspace` made read-only for others. Otherwise (CI may run as a
    user) the current user on a workspace made read-only with chmod, with HOME=/nonexistent."""
    for folder in [workspace, *(p for p in workspace.rglob("*") if p.is_dir())]:
        folder.chmod(0o555)
    for file in (p for p in workspace.rglob("*") if p.is_file()):
        file.chmod(0o444)
    if os.geteuid() == 0:
        return as_nobody(command, reach=[workspace])
    return ["env", "HOME=/nonexistent", *command]


def make_writable_again(workspace: Path) -> None:
    """So pytest can remove the temporary folder afterwards."""
    for folder in [workspace, *(p for p in workspace.rglob("*") if p.is_dir())]:
        folder.chmod(0o755)
