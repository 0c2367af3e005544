"""Import an msquickcmp / `msit debug compare` output folder into a workspace (`infer DIR`, docs/infer.md).

msquickcmp runs an offline model (.om) on the NPU with dumps on, runs the original ONNX / TF / Caffe model
on the CPU dumping every node, and compares the two with msaccucmp. Its output folder is
`{output}/{YYYYmmddHHMMSS}[/{input shape}]/` holding `dump_data/npu/<time>/<device>/<om model>/<model id>/
<iteration>/` (NPU dumps), `dump_data/{onnx,tf,caffe}/*.npy` (golden tensors), `model/<om model>.json`
(the om as atc JSON) and `result_<time>.csv`. Those become the parts of a precision_data workspace our
commands read: the Build graph and dump of npu/debug_0, the golden tensors of tf/dump and a result folder
of temp/vector_compare. Everything is checked before anything is written, so a bad folder leaves the
workspace as it was; existing parts are refused, or with `force` moved aside (never deleted). The parts are
written into a staging folder inside the workspace and renamed into place only when all of them were written,
so a write error (a full disk, a file too large) also leaves the workspace as it was.
"""

from __future__ import annotations

import csv
import os
import re
import shutil
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterator

from precision_tool.errors import FormatError, UsageError, WorkspaceError
from precision_tool.formats.tf.golden import TIMESTAMP_DIGITS, parse_golden_name
from precision_tool.workspace import Workspace

GOLDEN_FOLDERS = ("onnx", "tf", "caffe")
"""dump_data/<name>: the golden side msquickcmp wrote, by the kind of the original model."""
RESULT_NAME = re.compile(r"^result_(\d{14})\.csv$")
_RUN_STAMP = re.compile(r"^\d{14}$")
"""msquickcmp's run folder: `{output}/{time.strftime('%Y%m%d%H%M%S')}`."""
_TF_NAME = re.compile(r"^([A-Za-z0-9_-]+)\.(\d+)\.(\d+)\.(\d+)\.npy$")
"""msit's TF golden name: `<tensor, / and : → _ and .>.<µs timestamp>.<repeat>.npy` (the tensor's ':slot'
gives the slot: `conv1_Relu.0.<ts>.<repeat>.npy`)."""
ONNX_NAME_MAP = "mapping.csv"
"""dump_data/onnx/mapping.csv: `<short name>,<real name>` for golden names too long for the file system."""
MAX_NAME_BYTES = 255
ASIDE_PREFIX = "before_infer_"
"""<workspace>/before_infer_<time>/: where `force` moves the old parts, keeping their paths."""
STAGING_PREFIX = ".infer_tmp_"
"""<workspace>/.infer_tmp_<time>_<random>/: where the parts are written before they are renamed into place."""
LOOKED_FOR = ("model/*.json (the om model as atc JSON), dump_data/npu/<time>/ (NPU dumps), "
              "dump_data/onnx|tf|caffe/*.npy (golden tensors) or result_*.csv")


@dataclass(frozen=True)
class ImportedPart:
    """One part of the workspace the import made."""

    what: str
    """'Build graph', 'NPU dump', 'golden tensors' or 'comparison result'."""
    source: Path
    target: Path
    files: int
    linked: bool
    """A symlink (or links per file) to the msquickcmp folder, not a copy."""


@dataclass(frozen=True)
class InferImport:
    """What `import_msquickcmp` did: the run folder it read, the parts it made, and what it left out."""

    source: Path
    """The msquickcmp run folder (`{output}/{time}[/{shape}]`) the parts come from."""
    workspace: Path
    parts: tuple[ImportedPart, ...]
    skipped: tuple[str, ...]
    """One line per thing found but not imported, and why."""
    moved_aside: tuple[tuple[Path, Path], ...]
    """(old part, where it went) for parts `force` moved out of the way."""
    other_runs: tuple[Path, ...]
    """Other run folders under DIR, left alone (import one by naming it)."""

    def part(self, what: str) -> ImportedPart | None:
        return next((p for p in self.parts if p.what == what), None)


@dataclass(frozen=True)
class _Plan:
    """Everything found and checked, before anything is written."""

    run: Path
    graph: Path | None
    graph_name: str
    npu_dumps: tuple[Path, ...]
    goldens: tuple[tuple[Path, str], ...]  # (file, the name it gets in tf/dump)
    golden_folder: Path | None
    results: tuple[tuple[Path, str], ...]  # (csv, result folder name)
    skipped: tuple[str, ...]


def import_msquickcmp(folder: str | os.PathLike[str], workspace: Workspace, *, copy: bool = False,
                      force: bool = False) -> InferImport:
    """Import the msquickcmp output under `folder` into `workspace` (links unless `copy`)."""
    source = Path(folder).expanduser()
    if not source.exists():
        raise UsageError(f"infer: {source} does not exist; give the folder msquickcmp (msit debug compare) "
                         "wrote with -o/--output")
    if not source.is_dir():
        raise UsageError(f"infer: {source} is a file, not a folder; give the folder msquickcmp "
                         "(msit debug compare) wrote with -o/--output")
    runs = _run_folders(source)
    if not runs:
        raise UsageError(f"infer: {source} holds no msquickcmp output: looked for {LOOKED_FOR}")
    run = max(runs, key=_run_order)
    plan = _plan(run)
    if plan.graph is None and not plan.npu_dumps and not plan.goldens and not plan.results:
        raise UsageError(f"infer: {run} holds no msquickcmp output: looked for {LOOKED_FOR}")
    held = [p for p in replaced_parts(workspace) if _holds_data(p)]
    if held and not force:
        names = ", ".join(str(p.relative_to(workspace.root)) for p in held)
        raise WorkspaceError(f"infer: the workspace {workspace.root} already holds {names}; an import replaces "
                             f"them all (so no old graph, dump or result mixes with it): add --force to move "
                             f"them aside to {workspace.root / (ASIDE_PREFIX + '<time>')} (nothing is deleted), "
                             "or choose another workspace with --data DIR")
    parts, moved = _Transaction(plan, workspace, copy).run()
    others = tuple(sorted(r for r in runs if r != run))
    return InferImport(run, workspace.root, tuple(parts), plan.skipped, tuple(moved), others)


# --- finding -----------------------------------------------------------------------------------
def _run_folders(root: Path) -> list[Path]:
    """Folders holding msquickcmp's parts (dump_data/, model/ or a result_*.csv), `root` included."""
    found = []
    for dirpath, dirnames, filenames in os.walk(root, followlinks=True):
        here = Path(dirpath)
        if "dump_data" in dirnames or "model" in dirnames or any(RESULT_NAME.match(f) for f in filenames):
            found.append(here)
            dirnames[:] = [d for d in dirnames if d not in ("dump_data", "model", "input", "tmp")]
        if len(here.relative_to(root).parts) >= 3:  # {output}/{time}/{shape} is as deep as it goes
            dirnames[:] = []
    return found


def _run_order(run: Path) -> tuple[str, str]:
    """Newest last: by the run's `{YYYYmmddHHMMSS}` folder (a shape folder `{time}/{shape}` below it must
    not decide which run is newest), then by the whole path."""
    stamp = next((part for part in reversed(run.absolute().parts) if _RUN_STAMP.match(part)), "")
    return stamp, str(run)


def _plan(run: Path) -> _Plan:
    skipped: list[str] = []
    npu_dumps, model_name = _npu_dumps(run / "dump_data" / "npu", skipped)
    graph, graph_name = _model_json(run / "model", model_name, skipped)
    goldens, golden_folder = _goldens(run / "dump_data", skipped)
    if (run / "dump_data" / "npu_golden").is_dir():
        skipped.append(f"{run / 'dump_data' / 'npu_golden'}: the golden om's NPU dumps (om against om); "
                       "not imported, compare them with `vc -lt ... -rt ...`")
    results = []
    for csv_file in sorted(run.glob("result_*.csv")):
        from precision_tool.analysis.results.results import read_result_csv

        read_result_csv(csv_file)  # a CSV we cannot read is one line now, not a broken `vcs` later
        match = RESULT_NAME.match(csv_file.name)
        results.append((csv_file, match.group(1) if match else time.strftime("%Y%m%d%H%M%S")))
    return _Plan(run, graph, graph_name, tuple(npu_dumps), tuple(goldens), golden_folder, tuple(results),
                 tuple(skipped))


def _npu_dumps(npu: Path, skipped: list[str]) -> tuple[list[Path], str]:
    """dump_data/npu/<digits>/ folders holding dump files, and the om model name their path gives."""
    if not npu.is_dir():
        return [], ""
    dumps, model = [], ""
    for child in sorted(npu.iterdir()):
        if child.is_dir() and child.name.isdigit() and _has_files(child):
            dumps.append(child)
            # <time>/<device>/<om model>/<model id>/<iteration>/files
            for path in _files(child):
                parts = path.relative_to(child).parts
                if len(parts) >= 3 and not model:
                    model = parts[1]
                break
        elif child.is_dir():
            skipped.append(f"{child}: the model's net outputs (ais_bench); not needed for the comparison")
    return dumps, model


def _model_json(model_dir: Path, dump_model: str, skipped: list[str]) -> tuple[Path | None, str]:
    """The om model's atc JSON (the one named after the dumped model when there are several), read once
    so that a JSON we cannot read is its reader's one line."""
    from precision_tool.formats.ge.ge_graph import load_graph

    if not model_dir.is_dir():
        return None, ""
    candidates = sorted(p for p in model_dir.iterdir() if p.is_file() and p.suffix == ".json")
    if not candidates:
        return None, ""
    chosen = next((p for p in candidates if p.stem == dump_model), candidates[0])
    for other in candidates:
        if other != chosen:
            skipped.append(f"{other}: another model's JSON (the NPU dumps belong to {chosen.name})")
    load_graph(chosen)
    return chosen, chosen.stem


def _goldens(dump_data: Path, skipped: list[str]) -> tuple[list[tuple[Path, str]], Path | None]:
    """The golden .npy files and the name each gets in tf/dump (msaccucmp's `<op>.<slot>.<timestamp>.npy`)."""
    folders = [dump_data / n for n in GOLDEN_FOLDERS if (dump_data / n).is_dir()]
    folders = [f for f in folders if any(f.glob("*.npy"))]
    if not folders:
        return [], None
    folder = folders[0]
    for other in folders[1:]:
        skipped.append(f"{other}: a second golden folder; {folder.name} was imported")
    real_names = _onnx_name_map(folder / ONNX_NAME_MAP)
    chosen: dict[str, tuple[Path, str]] = {}
    unnamed, repeats, too_long = [], 0, []
    for path in sorted(folder.glob("*.npy")):
        name = real_names.get(path.name, path.name)
        if len(name.encode()) > MAX_NAME_BYTES:
            too_long.append(name)
            continue
        if parse_golden_name(name) is not None:
            chosen.setdefault(name, (path, name))
            continue
        tf = _TF_NAME.match(name)
        if tf is None:
            unnamed.append(path.name)
            continue
        if int(tf.group(4)) != 0:  # the same tensor again (a loop): the first one is the golden
            repeats += 1
            continue
        target = f"{tf.group(1)}.{tf.group(2)}.{int(tf.group(3)):0{TIMESTAMP_DIGITS}d}.npy"
        chosen.setdefault(target, (path, target))
    if unnamed:
        skipped.append(f"{len(unnamed)} file(s) in {folder} not named <op>.<slot>.<timestamp>.npy "
                       f"(e.g. {unnamed[0]})")
    if repeats:
        skipped.append(f"{repeats} repeated TF tensor(s) in {folder} (repeat > 0); the first of each was imported")
    if too_long:
        skipped.append(f"{len(too_long)} golden name(s) from {ONNX_NAME_MAP} longer than a file name may be")
    return sorted(chosen.values(), key=lambda item: item[1]), folder


def _onnx_name_map(path: Path) -> dict[str, str]:
    if not path.is_file():
        return {}
    try:
        with open(path, newline="", encoding="utf-8", errors="replace") as handle:
            return {row[0].strip(): row[1].strip() for row in csv.reader(handle) if len(row) >= 2}
    except (OSError, csv.Error) as exc:
        raise FormatError(path, f"cannot read msquickcmp's golden name map ({exc})") from None


def _files(folder: Path) -> Iterator[Path]:
    for dirpath, dirnames, filenames in os.walk(folder, followlinks=True):
        dirnames.sort()
        for name in sorted(filenames):
            yield Path(dirpath) / name


def _has_files(folder: Path) -> bool:
    return next(_files(folder), None) is not None


# --- what an import replaces -------------------------------------------------------------------
def replaced_parts(workspace: Workspace) -> list[Path]:
    """The workspace parts an import replaces as a whole: every npu/debug_N (Build graphs, dumps), the TF
    side (tf/tf_debug, tf/checkpoints, tf/dump) and the comparison results (temp/vector_compare). Keeping
    any of them would mix the old run with the imported one (`vcs` showing an old result as current, `vc`
    and `ni` pairing imported dumps with an old graph)."""
    debug = sorted((p for p in workspace.npu_dir.glob("debug_*") if p.name[len("debug_"):].isdigit()),
                   key=lambda p: int(p.name[len("debug_"):])) if workspace.npu_dir.is_dir() else []
    return [*debug, workspace.tf_debug_dir, workspace.checkpoint_dir, workspace.golden_dir,
            workspace.vector_compare_dir]


def _holds_data(path: Path) -> bool:
    """A file or a link anywhere in `path` (folders holding only empty folders hold nothing)."""
    if path.is_symlink() or (path.exists() and not path.is_dir()):
        return True
    if not path.is_dir():
        return False
    for _dirpath, dirnames, filenames in os.walk(path):
        if filenames or any(os.path.islink(os.path.join(_dirpath, d)) for d in dirnames):
            return True
    return False


# --- writing -----------------------------------------------------------------------------------
class _WriteFailed(Exception):
    """One write of the import failed: the path it would have had in the workspace, and the system's reason."""

    def __init__(self, target: Path, reason: str) -> None:
        super().__init__(f"{target}: {reason}")
        self.target, self.reason = target, reason


class _Transaction:
    """Write every part into a staging folder in the workspace, then move the old parts aside and rename the
    staged ones into place. Any failure undoes what was done: the staged and placed parts (ours) are
    removed, the moved-aside parts go back, the folders made are removed again. The user's data is only
    ever renamed."""

    def __init__(self, plan: _Plan, workspace: Workspace, copy: bool) -> None:
        self.plan, self.workspace, self.copy = plan, workspace, copy
        self.root = workspace.root
        self.stamp = time.strftime("%Y%m%d%H%M%S")
        self.made: list[Path] = []  # folders this import created outside the staging folder, in order
        self.renamed: list[tuple[Path, Path]] = []  # (from, to), in order
        self.placed: list[Path] = []
        self.staging: Path | None = None

    def run(self) -> tuple[list[ImportedPart], list[tuple[Path, Path]]]:
        try:
            self._make_dirs(self.root)
            try:
                self.staging = Path(tempfile.mkdtemp(prefix=f"{STAGING_PREFIX}{self.stamp}_", dir=self.root))
            except OSError as exc:
                raise _WriteFailed(self.root, exc.strerror or str(exc)) from None
            parts = self._stage()
            moved = self._move_old_parts()
            for unit in sorted({self._unit(p.target) for p in parts}):
                staged, final = self.staging / unit, self.root / unit
                self._make_dirs(final.parent)
                self._rename(staged, final)
                self.placed.append(final)
            shutil.rmtree(self.staging)  # what is left: empty folders an import replaced, if any
            return [self._final(p) for p in parts], moved
        except _WriteFailed as exc:
            undo = self._undo()
            raise WorkspaceError(f"infer: cannot write {exc.target}: {exc.reason}; {undo}"
                                 + ("" if not self.copy else ", or import with links (no --copy)")) from None
        except BaseException:
            self._undo()
            raise

    # staging: every write of the import happens here ---------------------------------------------
    def _stage(self) -> list[ImportedPart]:
        assert self.staging is not None
        plan, stage, copy = self.plan, self.staging, self.copy
        parts = []
        if plan.graph is not None:
            target = self._mkdir(stage / self._rel(self.workspace.graph_dir(0))) / f"{plan.graph_name}_Build.json"
            self._place(plan.graph, target)
            parts.append(ImportedPart("Build graph", plan.graph, target, 1, not copy))
        if plan.npu_dumps:
            root = self._mkdir(stage / self._rel(self.workspace.dump_root(0)))
            for dump in plan.npu_dumps:
                self._place(dump, root / dump.name)
                parts.append(ImportedPart("NPU dump", dump, root / dump.name, sum(1 for _ in _files(dump)), not copy))
        if plan.goldens:
            folder = self._mkdir(stage / self._rel(self.workspace.golden_dir))
            for path, name in plan.goldens:
                self._place(path, folder / name)
            assert plan.golden_folder is not None
            parts.append(ImportedPart("golden tensors", plan.golden_folder, folder, len(plan.goldens), not copy))
        for csv_file, result_stamp in plan.results:
            folder = self._mkdir(stage / self._rel(self.workspace.vector_compare_dir / result_stamp))
            # small, and `vc` may write beside it: always a copy
            self._do(lambda: shutil.copyfile(csv_file, folder / csv_file.name), folder / csv_file.name)
            parts.append(ImportedPart("comparison result", csv_file, folder / csv_file.name, 1, False))
        return parts

    def _place(self, source: Path, target: Path) -> None:
        absolute = source.resolve()
        if not self.copy:
            self._do(lambda: os.symlink(absolute, target), target)
        elif absolute.is_dir():
            self._mkdir(target)
            for path in _files(absolute):
                copied = target / path.relative_to(absolute)
                self._mkdir(copied.parent)
                self._do(lambda: shutil.copy2(path, copied), copied)
        else:
            self._do(lambda: shutil.copy2(absolute, target), target)

    def _mkdir(self, folder: Path) -> Path:
        self._do(lambda: folder.mkdir(parents=True, exist_ok=True), folder)
        return folder

    def _do(self, write: Callable[[], object], target: Path) -> None:
        """Run one write; an OSError names the path `target` would have in the workspace (not the source,
        not the staging folder) with the system's reason."""
        try:
            write()
        except OSError as exc:
            raise _WriteFailed(self._final_path(target), exc.strerror or str(exc)) from None

    # moving the old parts aside, placing the new ones ----------------------------------------------
    def _move_old_parts(self) -> list[tuple[Path, Path]]:
        assert self.staging is not None
        moved: list[tuple[Path, Path]] = []
        aside = self.root / f"{ASIDE_PREFIX}{self.stamp}"
        n = 1
        while aside.exists() or aside.is_symlink():
            aside = self.root / f"{ASIDE_PREFIX}{self.stamp}_{n}"
            n += 1
        for part in replaced_parts(self.workspace):
            if not (part.exists() or part.is_symlink()):
                continue
            if _holds_data(part):
                target = aside / self._rel(part)
                self._make_dirs(target.parent)
                self._rename(part, target)
                moved.append((part, target))
            else:  # empty folders only: out of the way into the staging folder, removed with it
                target = self.staging / "replaced_empty" / self._rel(part)
                self._mkdir(target.parent)
                self._rename(part, target)
        return moved

    def _rename(self, source: Path, target: Path) -> None:
        try:
            source.rename(target)
        except OSError as exc:
            raise _WriteFailed(target, f"cannot move {source} there: {exc.strerror or exc}") from None
        self.renamed.append((source, target))

    def _make_dirs(self, folder: Path) -> None:
        missing = []
        for parent in [folder, *folder.parents]:
            if parent.exists() or parent.is_symlink():
                break
            missing.append(parent)
        for parent in reversed(missing):
            self._do(parent.mkdir, parent)
            self.made.append(parent)

    def _undo(self) -> str:
        """Put the workspace back as it was; say so, or what could not be put back."""
        problems = []
        for final in reversed(self.placed):
            self.renamed = [pair for pair in self.renamed if pair[1] != final]
            try:
                shutil.rmtree(final)  # a part this import wrote
            except OSError as exc:
                problems.append(f"remove {final} ({exc.strerror or exc})")
        for source, target in reversed(self.renamed):
            try:
                target.rename(source)
            except OSError as exc:
                problems.append(f"move {target} back to {source} ({exc.strerror or exc})")
        if self.staging is not None:
            shutil.rmtree(self.staging, ignore_errors=True)
            if self.staging.exists():
                problems.append(f"remove {self.staging}")
        for folder in reversed(self.made):
            try:
                folder.rmdir()
            except OSError:
                pass  # not empty: something else is in it now
        if problems:
            return "could not undo everything: " + "; ".join(problems) + "; do that by hand"
        return "the workspace was left as it was; fix that or choose another workspace with --data DIR"

    # paths ------------------------------------------------------------------------------------------
    def _rel(self, path: Path) -> Path:
        return path.relative_to(self.root)

    def _final_path(self, path: Path) -> Path:
        """The path a staged `path` gets in the workspace."""
        if self.staging is not None and path.is_relative_to(self.staging) and path != self.staging:
            return self.root / path.relative_to(self.staging)
        return path

    def _unit(self, staged: Path) -> Path:
        """The folder renamed into place: npu/debug_0, tf/dump or temp/vector_compare."""
        assert self.staging is not None
        return Path(*staged.relative_to(self.staging).parts[:2])

    def _final(self, part: ImportedPart) -> ImportedPart:
        return ImportedPart(part.what, part.source, self._final_path(part.target), part.files, part.linked)
