"""Import an msquickcmp / `msit debug compare` output folder into a workspace (`infer DIR`, docs/infer.md).

msquickcmp runs an offline model (.om) on the NPU with dumps on, runs the original ONNX / TF / Caffe model
on the CPU dumping every node, and compares the two with msaccucmp. Its output folder is
`{output}/{YYYYmmddHHMMSS}[/{input shape}]/` holding `dump_data/npu/<time>/<device>/<om model>/<model id>/
<iteration>/` (NPU dumps), `dump_data/{onnx,tf,caffe}/*.npy` (golden tensors), `model/<om model>.json`
(the om as atc JSON) and `result_<time>.csv`. Those become the parts of a precision_data workspace our
commands read: the Build graph and dump of npu/debug_0, the golden tensors of tf/dump and a result folder
of temp/vector_compare. Everything is checked before anything is written, so a bad folder leaves the
workspace as it was; existing parts are refused, or with `force` moved aside (never deleted).
"""

from __future__ import annotations

import csv
import os
import re
import shutil
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

from precision_tool.errors import FormatError, UsageError, WorkspaceError
from precision_tool.formats.golden import TIMESTAMP_DIGITS, parse_golden_name
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
ASIDE_PREFIX = ".before_infer_"
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
    conflicts = _conflicts(plan, workspace)
    if conflicts and not force:
        raise WorkspaceError(f"infer: the workspace {workspace.root} already holds {', '.join(conflicts)}; "
                             "add --force to move them aside (nothing is deleted), or choose another "
                             "workspace with --data DIR")
    Workspace.ensure_dir(workspace.root, "workspace")
    moved = _move_aside(plan, workspace) if conflicts else []
    parts = _write(plan, workspace, copy)
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
        from precision_tool.analysis.results import read_result_csv

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
    from precision_tool.formats.ge_graph import load_graph

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


# --- conflicts ---------------------------------------------------------------------------------
def _targets(plan: _Plan, workspace: Workspace) -> dict[str, Path]:
    """Workspace part name → the folder that part of the import goes to."""
    targets: dict[str, Path] = {}
    if plan.graph is not None:
        targets["Build graphs in"] = workspace.graph_dir(0)
    if plan.npu_dumps:
        targets["NPU dumps in"] = workspace.dump_root(0)
    if plan.goldens:
        targets["golden tensors in"] = workspace.golden_dir
    for _csv, stamp in plan.results:
        targets[f"the result folder {stamp} in"] = workspace.vector_compare_dir / stamp
    return targets


def _occupied(folder: Path) -> bool:
    return folder.is_symlink() or (folder.is_dir() and any(folder.iterdir())) or (
        folder.exists() and not folder.is_dir())


def _conflicts(plan: _Plan, workspace: Workspace) -> list[str]:
    return [f"{what} {folder}" for what, folder in _targets(plan, workspace).items() if _occupied(folder)]


def _move_aside(plan: _Plan, workspace: Workspace) -> list[tuple[Path, Path]]:
    stamp = time.strftime("%Y%m%d%H%M%S")
    moved = []
    for folder in _targets(plan, workspace).values():
        if not _occupied(folder):
            continue
        target = folder.with_name(folder.name + ASIDE_PREFIX + stamp)
        n = 1
        while target.exists() or target.is_symlink():
            target = folder.with_name(f"{folder.name}{ASIDE_PREFIX}{stamp}_{n}")
            n += 1
        try:
            folder.rename(target)
        except OSError as exc:
            raise WorkspaceError(f"infer: cannot move {folder} aside to {target}: {exc.strerror or exc}; "
                                 "move it yourself, or choose another workspace with --data DIR") from None
        moved.append((folder, target))
    return moved


# --- writing -----------------------------------------------------------------------------------
def _write(plan: _Plan, workspace: Workspace, copy: bool) -> list[ImportedPart]:
    parts = []
    try:
        if plan.graph is not None:
            folder = Workspace.ensure_dir(workspace.graph_dir(0), "graph folder")
            target = folder / f"{plan.graph_name}_Build.json"
            _place(plan.graph, target, copy)
            parts.append(ImportedPart("Build graph", plan.graph, target, 1, not copy))
        if plan.npu_dumps:
            root = Workspace.ensure_dir(workspace.dump_root(0), "NPU dump folder")
            for dump in plan.npu_dumps:
                target = root / dump.name
                _place(dump, target, copy)
                parts.append(ImportedPart("NPU dump", dump, target, sum(1 for _ in _files(dump)), not copy))
        if plan.goldens:
            folder = Workspace.ensure_dir(workspace.golden_dir, "golden folder")
            for path, name in plan.goldens:
                _place(path, folder / name, copy)
            assert plan.golden_folder is not None
            parts.append(ImportedPart("golden tensors", plan.golden_folder, folder, len(plan.goldens), not copy))
        for csv_file, stamp in plan.results:
            folder = Workspace.ensure_dir(workspace.vector_compare_dir / stamp, "comparison results folder")
            target = folder / csv_file.name
            shutil.copyfile(csv_file, target)  # small, and `vc` may write beside it: always a copy
            parts.append(ImportedPart("comparison result", csv_file, target, 1, False))
    except OSError as exc:
        raise WorkspaceError(f"infer: cannot write {exc.filename or workspace.root}: {exc.strerror or exc}; "
                             "choose another workspace with --data DIR") from None
    return parts


def _place(source: Path, target: Path, copy: bool) -> None:
    absolute = source.resolve()
    if not copy:
        os.symlink(absolute, target)
    elif absolute.is_dir():
        shutil.copytree(absolute, target, symlinks=False)
    else:
        shutil.copy2(absolute, target)
