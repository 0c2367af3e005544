"""The run-config diff: which recorded settings differ between two runs, and why each matters.

Two kinds of comparison (docs/run_config.md):
- same side (`config-diff A B`: golden with golden, NPU with NPU): every recorded setting that differs,
  including one set on one side only;
- golden against NPU (`ac`): only what both sides can have — software versions, seeds, op determinism,
  dropout, loss scale and the environment variables that are not the NPU's own — since the golden run
  has no NPU options, no CANN and no ASCEND_* by nature.
Settings that only say where files go (dump_path, debug_dir, profiling output, DUMP_GRAPH_PATH) are left
out: they differ between any two workspaces and change no number. Files named by options
(modify_mixlist, fusion_switch_file) are compared by content digest, not path.
Pure analysis: returns Difference rows, shows nothing.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from precision_tool.formats.run_config import RunConfig, read_run_config
from precision_tool.workspace import Workspace

# Where-to options: they differ between workspaces and change no number.
LOCATION_OPTIONS = frozenset({"debug_dir", "dump_path", "profiling_options"})
LOCATION_ENV = frozenset({"DUMP_GRAPH_PATH", "PRECISION_DATA", "PRECISION_TOOL_CONFIG", "TF_CPP_MIN_LOG_LEVEL",
                          "TF_CPP_MAX_VLOG_LEVEL", "ASCEND_GLOBAL_LOG_LEVEL", "ASCEND_SLOG_PRINT_TO_STDOUT"})
# The NPU's own variables and software: absent from a golden run by nature.
NPU_ONLY_ENV = ("ASCEND_", "NPU_", "GE_", "HCCL_", "DUMP_GE_GRAPH", "DUMP_GRAPH_LEVEL")
NPU_ONLY_SOFTWARE = frozenset({"cann", "tf_adapter"})
IGNORED_SOFTWARE = frozenset({"precision_tool"})  # the recorder's own version decides no number

WHY_SOFTWARE = {
    "tensorflow": "another TensorFlow has other kernels and graph rewrites",
    "python": "another Python can mean other library builds",
    "numpy": "another numpy can round and sum differently",
    "cann": "another CANN has other NPU kernels and fusion passes",
    "tf_adapter": "another adapter builds another NPU graph",
}
WHY_OPTION = {
    "precision_mode": "decides which ops run in float16 / bfloat16",
    "precision_mode_v2": "decides which ops run in float16 / bfloat16",
    "modify_mixlist": "changes which op types stay in float32",
    "fusion_switch_file": "switches fusion passes on or off (other kernels)",
    "op_debug_level": "debug kernels (levels 1-2) compute differently; level 4 only keeps build files",
    "enable_dump": "a data dump is on in one run only",
    "enable_dump_debug": "overflow detection is on in one run only",
    "dump_mode": "other tensors dumped (input/output/all)",
    "dump_step": "other steps dumped: their tensors are not comparable",
    "op_select_implmode": "high_precision / high_performance kernels",
    "optypelist_for_implmode": "which op types the implmode applies to",
}
WHY_SEED = {
    "seed": "other random initial weights, batches and dropout masks",
    "op_determinism": "non-deterministic kernels may sum in another order",
    "python_hash_seed": "set and dict order in the input pipeline may differ",
}


@dataclass(frozen=True)
class Difference:
    """One setting that differs: its group (software, NPU option, seed...), both values as text, why."""

    group: str
    setting: str
    left: str
    right: str
    why: str


def _shown(value: Any) -> str:
    if value is None:
        return "unknown"
    return str(value)


def _compare_maps(group: str, left: dict[str, Any], right: dict[str, Any], why: dict[str, str], default_why: str,
                  skip: Any = lambda key: False, absent: str = "unset") -> list[Difference]:
    rows = []
    for key in sorted(set(left) | set(right)):
        if skip(key):
            continue
        a, b = left.get(key, absent), right.get(key, absent)
        if a != b:
            rows.append(Difference(group, key, _shown(a), _shown(b), why.get(key, default_why)))
    return rows


def _python_minor(version: Any) -> Any:
    return ".".join(str(version).split(".")[:2]) if version else version


def _dropout_map(record: RunConfig) -> dict[str, Any] | None:
    found = record.section("dropout")
    return None if found is None else {entry["scope"]: entry["rate"] for entry in found}


def diff_records(left: RunConfig, right: RunConfig) -> list[Difference]:
    """The differences that matter between two records (the kind of comparison follows their sides)."""
    same_side = left.side == right.side
    rows: list[Difference] = []

    software_l = dict(left.section("software"))
    software_r = dict(right.section("software"))
    software_l["python"] = _python_minor(software_l.get("python"))
    software_r["python"] = _python_minor(software_r.get("python"))

    def skip_software(key: str) -> bool:
        if key in IGNORED_SOFTWARE or (not same_side and key in NPU_ONLY_SOFTWARE):
            return True
        return software_l.get(key) is None and software_r.get(key) is None

    rows += _compare_maps("software", software_l, software_r, WHY_SOFTWARE, "another library version",
                          skip_software, absent=None)
    if same_side:
        options_l = _options_for_diff(left)
        options_r = _options_for_diff(right)
        rows += _compare_maps("NPU option", options_l, options_r, WHY_OPTION, "an adapter option that may "
                              "change kernels", lambda key: key in LOCATION_OPTIONS)
    seeds_l, seeds_r = left.section("seeds"), right.section("seeds")

    def skip_seed(key: str) -> bool:  # tf_setup sets PYTHONHASHSEED to the seed: a row only when it strays
        follows = all(str(s.get("python_hash_seed")) == str(s.get("seed")) for s in (seeds_l, seeds_r))
        return key not in WHY_SEED or (key == "python_hash_seed" and follows)

    rows += _compare_maps("seed", seeds_l, seeds_r, WHY_SEED, "", skip_seed, absent=None)
    rows += _dropout_rows(_dropout_map(left), _dropout_map(right))
    scale_l, scale_r = left.section("loss_scale"), right.section("loss_scale")
    if scale_l is not None and scale_r is not None:
        rows += _compare_maps("loss scale", scale_l, scale_r, {}, "another loss scale overflows float16 at "
                              "other values")

    def skip_env(name: str) -> bool:  # the tool's own seed variables are compared as seeds above
        return (name in LOCATION_ENV or name.startswith("PRECISION_TOOL_") or name == "PYTHONHASHSEED"
                or (not same_side and name.startswith(NPU_ONLY_ENV)))

    rows += _compare_maps("environment", left.section("env"), right.section("env"), {
        "TF_ENABLE_ONEDNN_OPTS": "oneDNN fuses and reorders CPU kernels",
        "TF_DETERMINISTIC_OPS": "deterministic kernels (or not)"}, "may change which kernels run", skip_env)
    return rows


def _options_for_diff(record: RunConfig) -> dict[str, Any]:
    """NPU options with the files they name replaced by their content digest (paths differ by workspace)."""
    options = dict(record.section("npu_options"))
    for key, digest in record.section("file_digests").items():
        if key in options:
            options[key] = f"{Path(str(options[key])).name} (sha256 {digest})"
    return options


def _dropout_rows(left: dict[str, Any] | None, right: dict[str, Any] | None) -> list[Difference]:
    """Dropout is compared only when both records saw a graph (null means unknown, not none)."""
    if left is None or right is None:
        return []
    return _compare_maps("dropout", left, right, {}, "another dropout rate draws other masks", absent="none")


# --- finding the records of a workspace ------------------------------------------------------------
@dataclass(frozen=True)
class RecordPair:
    """Two records and what each is ("A golden", "B npu/debug_1") for the table's columns."""

    left: RunConfig
    right: RunConfig
    left_name: str
    right_name: str
    differences: tuple[Difference, ...]


def newest_npu_record(workspace: Workspace) -> tuple[int, Path] | None:
    """(N, path) of the newest npu/debug_N holding a record, or None."""
    for debug_id in reversed(workspace.debug_ids()):
        path = workspace.run_config_file(debug_id)
        if path.is_file():
            return debug_id, path
    return None


def golden_against_npu(workspace: Workspace, debug_id: int = 0) -> RecordPair | None:
    """`ac`: the golden record against npu/debug_N's; None when either side has no record (older
    workspaces, or a capture without the hooks). A damaged record raises FormatError."""
    golden, npu = workspace.golden_run_config_file, workspace.run_config_file(debug_id)
    if not golden.is_file() or not npu.is_file():
        return None
    left, right = read_run_config(golden), read_run_config(npu)
    return RecordPair(left, right, "golden", f"npu/debug_{debug_id}", tuple(diff_records(left, right)))


def compare_paths(left: Path, right: Path, left_name: str, right_name: str) -> RecordPair:
    a, b = read_run_config(left), read_run_config(right)
    return RecordPair(a, b, left_name, right_name, tuple(diff_records(a, b)))


# --- what `config-diff` is given: a workspace, a run folder, or a record file -----------------------
@dataclass(frozen=True)
class Target:
    """One argument of config-diff: a record file (`record`), or a workspace's golden and NPU records."""

    given: Path
    record: Path | None = None  # a run_config.json, or a folder holding one (tf/, npu/debug_N/)
    golden: Path | None = None
    npu: Path | None = None
    npu_name: str = "npu"


def open_target(given: Path, run: int | None = None) -> Target:
    """Resolve an argument; a missing path or a workspace without any record is one WorkspaceError line."""
    from precision_tool.errors import WorkspaceError
    from precision_tool.formats.run_config import HOW_TO_RECORD
    from precision_tool.workspace import RUN_CONFIG

    given = Path(given)
    if given.is_file():
        return Target(given, record=given)
    if not given.is_dir():
        raise WorkspaceError(f"config-diff: {given} does not exist; give a workspace (precision_data), an "
                             f"npu/debug_N folder or a {RUN_CONFIG} file")
    if (given / RUN_CONFIG).is_file() and not (given / "tf").is_dir():
        return Target(given, record=given / RUN_CONFIG)
    workspace = Workspace(given)
    golden = workspace.golden_run_config_file if workspace.golden_run_config_file.is_file() else None
    if run is not None:
        npu = workspace.run_config_file(run) if workspace.run_config_file(run).is_file() else None
        name = f"npu/debug_{run}"
    else:
        newest = newest_npu_record(workspace)
        npu, name = (newest[1], f"npu/debug_{newest[0]}") if newest else (None, "npu")
    if golden is None and npu is None:
        where = f"npu/debug_{run}/{RUN_CONFIG}" if run is not None else f"tf/{RUN_CONFIG} or npu/debug_N/{RUN_CONFIG}"
        raise WorkspaceError(f"config-diff: {given} holds no run-config record ({where}); {HOW_TO_RECORD}")
    return Target(given, golden=golden, npu=npu, npu_name=name)


def side_of(path: Path) -> str:
    return read_run_config(path).side


def pairs_to_compare(first: Target, second: Target, side: str) -> tuple[list[tuple[Path, Path, str, str]], list[str]]:
    """(left path, right path, left name, right name) per side to compare, and a note per side that one
    of them lacks. `side`: golden, npu or both (ignored for a record given as a file)."""
    from precision_tool.errors import WorkspaceError

    if first.record is not None or second.record is not None:
        fixed, other = (first, second) if first.record is not None else (second, first)
        wanted = side_of(fixed.record)  # type: ignore[arg-type]
        if other.record is not None:
            pick = other.record
        else:
            pick = other.golden if wanted == "golden" else other.npu
            if pick is None:
                raise WorkspaceError(f"config-diff: {other.given} has no {wanted} record to compare with "
                                     f"{fixed.record}")
        left, right = (fixed.record, pick) if fixed is first else (pick, fixed.record)
        return [(left, right, f"A {side_of(left)}", f"B {side_of(right)}")], []  # type: ignore[arg-type]
    pairs, notes = [], []
    for name in (("golden", "npu") if side == "both" else (side,)):
        a = first.golden if name == "golden" else first.npu
        b = second.golden if name == "golden" else second.npu
        a_name = "golden" if name == "golden" else first.npu_name
        b_name = "golden" if name == "golden" else second.npu_name
        if a is None or b is None:
            lacking = [str(t.given) for t, p in ((first, a), (second, b)) if p is None]
            notes.append(f"{name}: not compared, no record in {' and '.join(lacking)}")
            continue
        pairs.append((a, b, f"A {a_name}", f"B {b_name}"))  # the sources line under the table names A and B
    if not pairs:
        raise WorkspaceError("config-diff: nothing to compare; " + "; ".join(notes))
    return pairs, notes
