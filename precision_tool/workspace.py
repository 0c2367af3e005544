"""The one module that knows the precision_data/ layout (docs: formats.md §1, README "Workspace").

Finding things never creates folders; `Workspace.ensure_dir` is called by writers just before they write.
"""

from __future__ import annotations

import os
import re
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

from precision_tool.errors import WorkspaceError, WorkspaceWriteError

GOLDEN_RANK_PREFIX = "rank_"
"""Golden tensors of rank r of a multi-device job live in <golden dir>/rank_<r>/ (tf_dump writes them from
tf/tf_debug/rank_<r>/)."""
GOLDEN_RANK_FOLDER = re.compile(r"^rank_(\d+)$")


def rank_golden_folders(golden_root: Path) -> list[tuple[int, Path]]:
    """(rank, folder) of every rank_<r>/ folder of a golden dir, by rank; [] when there are none."""
    try:
        entries = os.scandir(golden_root)
    except (FileNotFoundError, NotADirectoryError):
        return []
    with entries:  # names first: a golden folder can hold a million tensors beside its rank folders
        found = [(GOLDEN_RANK_FOLDER.match(e.name), e) for e in entries if e.name.startswith("rank_")]
        return sorted((int(match.group(1)), Path(e.path)) for match, e in found if match and e.is_dir())


_RANK_FOLDER = re.compile(r"^\d{1,5}$")  # a device folder of a dump: dump/<time>/<device_id>/


@dataclass(frozen=True)
class RankDir:
    """One device folder of a multi-device dump (`dump/<time>/<device_id>/`)."""

    rank: int
    path: Path


def rank_dirs(dump_dir: Path) -> list[RankDir]:
    """The device folders of a dump (`<time>/<device_id>/`), by rank; [] unless there are at least two
    (one device folder is an ordinary single-device dump)."""
    if not dump_dir.is_dir():
        return []
    found = [RankDir(int(child.name), child) for child in dump_dir.iterdir()
             if _RANK_FOLDER.match(child.name) and child.is_dir()]
    found.sort(key=lambda r: r.rank)
    return found if len(found) >= 2 else []


def rank_of_path(path: Path, dump_dir: Path) -> int | None:
    """The rank a file under a multi-rank `dump_dir` belongs to (its first folder below it), else None."""
    try:
        first = Path(path).relative_to(dump_dir).parts[0]
    except (ValueError, IndexError):
        return None
    return int(first) if _RANK_FOLDER.match(first) else None


def golden_dir_for_rank(golden_root: Path, rank: int) -> tuple[Path, bool]:
    """(golden folder of `rank`, True when it is the rank's own): tf/dump/rank_<r>/ when it exists, else
    the shared tf/dump/ (right when every rank was fed the same batch)."""
    own = golden_root / f"{GOLDEN_RANK_PREFIX}{rank}"
    if own.is_dir():
        return own, True
    return golden_root, False


def has_rank_goldens(golden_root: Path) -> bool:
    return bool(rank_golden_folders(golden_root))


GOLDEN_STEP_PREFIX = "step_"
"""Golden tensors of training step N live in <golden dir>/step_<N>/ (docs/steps.md; `tf_dump --step all`
writes them); step N is compared with the NPU dump iteration folder named N."""
GOLDEN_STEP_FOLDER = re.compile(r"^step_(\d+)$")


def step_golden_folders(golden_root: Path) -> list[tuple[int, Path]]:
    """(step, folder) of every step_<N>/ folder of a golden dir, by step; [] when there are none."""
    try:
        entries = os.scandir(golden_root)
    except (FileNotFoundError, NotADirectoryError):
        return []
    with entries:  # names first, as rank_golden_folders
        found = [(GOLDEN_STEP_FOLDER.match(e.name), e) for e in entries if e.name.startswith(GOLDEN_STEP_PREFIX)]
        return sorted((int(match.group(1)), Path(e.path)) for match, e in found if match and e.is_dir())


def golden_dir_for_step(golden_root: Path, step: int | None) -> Path:
    """The golden folder to compare dump iteration `step` with: tf/dump/step_<N>/ when it exists, else the
    flat tf/dump/ (one step's tensors, as before golden folders per step)."""
    if step is not None:
        own = golden_root / f"{GOLDEN_STEP_PREFIX}{step}"
        if own.is_dir():
            return own
    return golden_root


SIMULATED_MARKER = "simulated.json"  # in npu/debug_N/ of a simulated run (train -d sim)
STEP_MANIFEST = "manifest.json"
"""The captured step's manifest in tf/checkpoints (capture/step_manifest.py writes it)."""

RUN_CONFIG = "run_config.json"
"""The run-config record (formats/run_config.py) of one side: tf/run_config.json for the golden run,
npu/debug_N/run_config.json for an NPU run, beside that side's dumps so it travels with them."""

_DEBUG_DIR = re.compile(r"^debug_(\d+)$")
_TOP_LEVEL = ("npu", "tf", "overflow", "fusion", "temp")  # the folders a workspace root holds

# What to do when a folder cannot be written (the default hint of Workspace.ensure_dir).
WRITE_HINT = "open a writable copy, or choose another workspace with --data DIR (or $PRECISION_DATA)"


@dataclass(frozen=True)
class Missing:
    """Something the workspace lacks, and how a user gets it."""

    what: str
    how: str


def walk_files(folder: Path) -> Iterator[Path]:
    """Every file below `folder`, recursively, following symlinks (dump trees use them), sorted per folder."""
    for dirpath, name in walk_file_names(folder):
        yield Path(dirpath, name)


def walk_file_names(folder: str | os.PathLike[str],
                    folders: list[str | None] | None = None) -> Iterator[tuple[str, str]]:
    """walk_files as text (no Path per file); `folders` gets each folder walked (None: one not listable)."""
    seen: set[str] = set()
    for dirpath, dirnames, filenames in os.walk(folder, followlinks=True,
                                                onerror=None if folders is None else lambda _: folders.append(None)):
        real = os.path.realpath(dirpath)
        if real in seen:  # a symlink loop
            dirnames[:] = []
            continue
        seen.add(real)
        if folders is not None:
            folders.append(dirpath)
        dirnames.sort()
        for name in sorted(filenames):
            yield dirpath, name


def absolute_path(path: str | os.PathLike[str]) -> Path:
    """`path` made absolute from the current folder. A workspace's root is made absolute once, when it is
    opened: child processes (replay, train, the demo, Dask workers) run in other folders and must be handed
    the same one. `..` is resolved as the kernel resolves it (through symlinks); other parts stay as typed,
    so a workspace reached through a symlink keeps the name the user gave it."""
    given = Path(path).expanduser()
    try:
        full = given if given.is_absolute() else Path.cwd() / given
    except OSError:  # the current folder was deleted: nothing to anchor a relative path to
        return given
    if ".." in full.parts:
        try:
            return full.resolve()
        except (OSError, RuntimeError):  # a symlink loop: the textual form is the best there is
            pass
    return Path(os.path.normpath(full))


class Workspace:
    """Where each kind of data lives under the workspace root (always an absolute path: see absolute_path)."""

    def __init__(self, root: str | os.PathLike[str]) -> None:
        self.root = absolute_path(root)
        if self.root.exists() and not self.root.is_dir():
            raise WorkspaceError(
                f"workspace {self.root} is a file, not a folder; pass a folder with --data DIR"
            )

    def __repr__(self) -> str:
        return f"Workspace({str(self.root)!r})"

    # --- NPU side -------------------------------------------------------------------------------
    @property
    def npu_dir(self) -> Path:
        return self.root / "npu"

    def debug_ids(self) -> list[int]:
        """The N of every npu/debug_N folder, ascending."""
        if not self.npu_dir.is_dir():
            return []
        ids = []
        for child in self.npu_dir.iterdir():
            match = _DEBUG_DIR.match(child.name)
            if match and child.is_dir():
                ids.append(int(match.group(1)))
        return sorted(ids)

    def debug_dir(self, debug_id: int = 0) -> Path:
        return self.npu_dir / f"debug_{debug_id}"

    def is_simulated(self, debug_id: int | None) -> bool:
        """True when npu/debug_N was written by `train -d sim` (or a demo): no NPU computed it."""
        return debug_id is not None and (self.debug_dir(debug_id) / SIMULATED_MARKER).is_file()

    def dump_root(self, debug_id: int = 0) -> Path:
        return self.debug_dir(debug_id) / "dump"

    def newest_dump_dir(self, debug_id: int = 0) -> Path | None:
        """The newest `dump/<timestamp>` folder (by name, then mtime), or dump/ itself when files sit there."""
        return _newest_child(self.dump_root(debug_id))

    def run_of(self, folder: Path) -> int | None:
        """N when `folder` lies inside this workspace's npu/debug_N/dump, else None."""
        try:
            target = Path(folder).resolve()
        except OSError:
            return None
        for debug_id in self.debug_ids():
            root = self.dump_root(debug_id).resolve()
            if target == root or root in target.parents:
                return debug_id
        return None

    def relocate(self, path: str | os.PathLike[str]) -> Path:
        """A path recorded in another copy of this workspace (run.json holds absolute paths, and workspaces
        are copied between machines and folders): when `path` lies outside this workspace but its part from
        a top-level folder (npu/, tf/, ...) on exists in this one, that; else `path` unchanged."""
        given = Path(path)
        root = self.root.resolve()
        try:
            if root == given.resolve() or root in given.resolve().parents:
                return given
        except OSError:
            return given
        parts = given.parts
        for i in range(len(parts) - 1, -1, -1):  # the innermost top-level name first
            if parts[i] in _TOP_LEVEL:
                moved = self.root.joinpath(*parts[i:])
                if moved.exists():
                    return moved
        return given

    def run_config_file(self, debug_id: int = 0) -> Path:
        """npu/debug_N/run_config.json: what decided that NPU run's numbers (options, versions, seeds)."""
        return self.debug_dir(debug_id) / RUN_CONFIG

    def loss_file(self, debug_id: int = 0) -> Path:
        """npu/debug_N/loss.csv: that NPU run's loss at every step (formats/loss_record.py)."""
        return self.debug_dir(debug_id) / "loss.csv"

    def graph_dir(self, debug_id: int = 0) -> Path:
        return self.debug_dir(debug_id) / "graph"

    def profiling_dir(self, debug_id: int = 0) -> Path:
        """Where the NPU run's profiling data goes (`profiling_options` "output"), as the original put it."""
        return self.debug_dir(debug_id) / "prof"

    def graph_files(self, debug_id: int = 0) -> list[Path]:
        folder = self.graph_dir(debug_id)
        if not folder.is_dir():
            return []
        return sorted(p for p in folder.iterdir() if p.is_file() and p.suffix in (".txt", ".json", ".pbtxt"))

    def build_graph_files(self, debug_id: int = 0) -> list[Path]:
        """The compiled graphs that dumps belong to: any `*_Build.txt` (or its `*_Build.json`); when there is
        none, GE's ONNX-style Build dumps (`ge_onnx_*_Build.pbtxt`), which never shadow a ge_proto one."""
        build = [p for p in self.graph_files(debug_id) if p.stem.endswith("_Build")]
        return [p for p in build if p.suffix != ".pbtxt"] or build

    # --- overflow, fusion -------------------------------------------------------------------------
    @property
    def overflow_root(self) -> Path:
        return self.root / "overflow" / "dump"

    def newest_overflow_dir(self) -> Path | None:
        return _newest_child(self.overflow_root)

    @property
    def fusion_file(self) -> Path:
        return self.root / "fusion" / "fusion_result.json"

    @property
    def fusion_off_file(self) -> Path:
        """The switch file that turns every fusion pass off (`train -a fusion_off`, action 'fusion_off')."""
        return self.root / "fusion" / "fusion_off.cfg"

    @property
    def fusion_switch_file(self) -> Path:
        """The fusion switch file an NPU run is pointed at (`fusion_switch_file`); written by the tool,
        edited by the user when bisecting fusion passes (never a file inside the installed package)."""
        return self.root / "fusion" / "fusion_switch.cfg"

    # --- TensorFlow side --------------------------------------------------------------------------
    @property
    def tf_debug_dir(self) -> Path:
        return self.root / "tf" / "tf_debug"

    @property
    def golden_dir(self) -> Path:
        return self.root / "tf" / "dump"

    @property
    def op_sources_file(self) -> Path:
        """Where each golden op was created in the user's code (formats/tf/op_sources.py)."""
        return self.root / "tf" / "source" / "op_sources.json"

    @property
    def golden_run_config_file(self) -> Path:
        """tf/run_config.json: what decided the golden run's numbers (versions, seeds, environment)."""
        return self.root / "tf" / RUN_CONFIG

    @property
    def golden_loss_file(self) -> Path:
        """tf/loss.csv: the golden run's loss at every step (formats/loss_record.py)."""
        return self.root / "tf" / "loss.csv"

    @property
    def checkpoint_dir(self) -> Path:
        """tf/checkpoints: the captured step (checkpoint, fed inputs, manifest) that `train` replays."""
        return self.root / "tf" / "checkpoints"

    @property
    def fix_dir(self) -> Path:
        """fix/: what replays write for the user to act on (ops_info.json, reproducer folders)."""
        return self.root / "fix"

    @property
    def ops_info_file(self) -> Path:
        """fix/ops_info.json: the mixed-precision list (modify_mixlist) a *precision* replay writes."""
        return self.fix_dir / "ops_info.json"

    # --- results and scratch ----------------------------------------------------------------------
    @property
    def temp_dir(self) -> Path:
        return self.root / "temp"

    @property
    def op_graph_dir(self) -> Path:
        return self.temp_dir / "op_graph"

    def decode_dir(self, kind: str = "dump_convert") -> Path:
        if kind not in ("dump_decode", "overflow_decode", "dump_convert"):
            raise ValueError(kind)
        return self.temp_dir / "decode" / kind

    @property
    def vector_compare_dir(self) -> Path:
        return self.temp_dir / "vector_compare"

    def result_dirs(self) -> list[Path]:
        """vector_compare/<YYYYmmddHHMMSS> folders, oldest first."""
        return result_dirs(self.vector_compare_dir)

    def newest_result_dir(self) -> Path | None:
        dirs = self.result_dirs()
        return dirs[-1] if dirs else None

    def new_result_dir(self) -> Path:
        """A fresh vector_compare/<YYYYmmddHHMMSS> folder (created; a second suffix avoids collisions)."""
        return new_result_dir(self.vector_compare_dir)

    @property
    def report_dir(self) -> Path:
        """temp/report/<YYYYmmddHHMMSS>/report.html: the HTML reports (`report`, `ac -c --report`)."""
        return self.temp_dir / "report"

    @property
    def cache_dir(self) -> Path:
        return self.temp_dir / "cache"

    @property
    def log_file(self) -> Path:
        return self.temp_dir / "precision_tool.log"

    @property
    def history_file(self) -> Path:
        return self.temp_dir / "history"

    @staticmethod
    def ensure_dir(path: Path, what: str = "folder", hint: str | None = None) -> Path:
        """Create `path` (and parents) and check it can be written; any failure is one WorkspaceError line.

        "cannot write the <what> <path>: <reason>; <hint>" — the reason is the system's (permission
        denied, read-only file system, no space left on device, a file in the way).
        """
        path = Path(path)
        hint = hint or WRITE_HINT

        def refuse(reason: str) -> WorkspaceWriteError:
            return WorkspaceWriteError(f"cannot write the {what} {path}: {reason}; {hint}")

        if path.exists() and not path.is_dir():
            raise refuse("it is a file, not a folder")
        try:
            path.mkdir(parents=True, exist_ok=True)
            # An existing folder may still refuse writes (read-only mount, no permission, full disk):
            # find out now, with the system's reason, rather than halfway through writing.
            with tempfile.TemporaryFile(dir=path):
                pass
        except OSError as exc:
            raise refuse(exc.strerror or str(exc)) from None
        return path

    # --- what is missing --------------------------------------------------------------------------
    def has_tfdbg_dumps(self) -> bool:
        return self.tf_debug_dir.is_dir() and any(self.tf_debug_dir.iterdir())

    def has_captured_step(self) -> bool:
        """A step captured by PrecisionTfSession / PrecisionKerasCapture, which `train` replays."""
        return (self.checkpoint_dir / STEP_MANIFEST).is_file()

    def has_golden_tensors(self) -> bool:
        """Golden .npy files in tf/dump, or in its rank_<r>/ or step_<N>/ folders."""
        golden = self.golden_dir
        return _holds_npy(golden) or any(_holds_npy(folder) for _, folder in rank_golden_folders(golden)) or any(
            _holds_npy(folder) for _, folder in step_golden_folders(golden))

    def golden_hint(self) -> str:
        """What to run to get golden tensors into tf/dump, from what the workspace already holds."""
        if self.has_tfdbg_dumps():
            return f"run `tf_dump` to extract the tfdbg dumps already in {self.tf_debug_dir}"
        if self.has_captured_step():
            return f"run `train -d cpu` to replay the step captured in {self.checkpoint_dir} on CPU"
        return "run the CPU/GPU training with sess_dump(sess) from tf_config, then `tf_dump`"

    def npu_dump_hint(self) -> str:
        """What to run to get NPU dumps into npu/debug_0/dump."""
        if self.has_captured_step():
            return (f"run `train -d npu` on the NPU machine to replay the step captured in {self.checkpoint_dir}, or "
                    "`npu_dump \"python3 train.py\"`")
        return ("train on the NPU with session_dump_config(config, action='dump') from tf_config, or "
                "`npu_dump \"python3 train.py\"`")

    def missing(self) -> list[Missing]:
        """What a full workspace has that this one lacks, with how to get it (shown at shell start)."""
        gaps: list[Missing] = []
        if not self.root.is_dir():
            return [
                Missing(
                    f"workspace {self.root} (the folder does not exist)",
                    "run the training script with `import precision_tool.tf_config`, or "
                    "`precision-tool demo` for an example, or point --data at an existing precision_data",
                )
            ]
        if self.newest_dump_dir(0) is None:
            gaps.append(Missing(f"NPU dumps in {self.dump_root(0)}", self.npu_dump_hint()))
        if not self.build_graph_files(0):
            gaps.append(
                Missing(
                    f"GE Build graphs in {self.graph_dir(0)}",
                    "the same NPU run writes them (DUMP_GE_GRAPH=2, set by tf_config)",
                )
            )
        if not self.has_golden_tensors():
            gaps.append(Missing(f"golden tensors in {self.golden_dir}", self.golden_hint()))
        return gaps


def _holds_npy(folder: Path) -> bool:
    """Whether a folder holds a .npy file (stops at the first: no listing of a million names)."""
    try:
        with os.scandir(folder) as entries:
            return any(e.name.endswith(".npy") for e in entries)
    except OSError:
        return False


def _newest_child(folder: Path) -> Path | None:
    if not folder.is_dir():
        return None
    children = [c for c in folder.iterdir() if c.is_dir()]
    if children:
        return max(children, key=lambda c: (c.name, c.stat().st_mtime))
    if any(c.is_file() for c in folder.iterdir()):
        return folder
    return None


# --- result folders: <root>/<YYYYmmddHHMMSS>/, under temp/vector_compare or the folder `vc -o` names -----
def result_dirs(root: Path) -> list[Path]:
    """The result folders directly under `root`, oldest first (their names are times)."""
    if not root.is_dir():
        return []
    return sorted(p for p in root.iterdir() if p.is_dir())


def new_result_dir(root: Path, hint: str | None = None, what: str = "comparison results folder") -> Path:
    """A fresh `<root>/<YYYYmmddHHMMSS>` folder (a suffix avoids collisions). A root that cannot be written
    is one WorkspaceError line naming it (as `what`) and how to choose another (`hint`)."""
    Workspace.ensure_dir(root, what, hint=hint)
    stamp = time.strftime("%Y%m%d%H%M%S")
    folder = root / stamp
    n = 1
    while folder.exists():
        folder = root / f"{stamp}_{n}"
        n += 1
    Workspace.ensure_dir(folder, what, hint=hint)
    return folder
