"""The fusion switch files an NPU run is pointed at (`fusion_switch_file`), written into the workspace.

Why in the workspace: bisecting fusion passes means editing the switch file between runs; a file inside
the installed package is shared by every project, lost on reinstall and often read-only. Format
(TFA docs session_config/accuracy_comparison.md; GE fusion_config_parser.cc): JSON
`{"Switch": {"GraphFusion": {PASS: "on"|"off", "ALL": ...}, "UBFusion": {...}}}`; a single pass beats
"ALL". fusion_result.json says which group a pass belongs to (its `graph_fusion` / `ub_fusion`
sections); on the Build graph an op names its passes in `pass_name` (graph) and `pass_name_ub` (UB).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from precision_tool.atomic import write_text_atomic
from precision_tool.formats.ge.fusion_result import parse_fusion_result
from precision_tool.workspace import Workspace

GROUPS = ("GraphFusion", "UBFusion")


@dataclass(frozen=True)
class SwitchTemplate:
    """The passes a run used, by group, and where they were read from (for the caller's message)."""

    graph_fusion: tuple[str, ...]
    ub_fusion: tuple[str, ...]
    read_from: tuple[Path, ...]

    @property
    def empty(self) -> bool:
        return not (self.graph_fusion or self.ub_fusion)


def write_fusion_off(workspace: Workspace) -> Path:
    """fusion/fusion_off.cfg: every graph and UB fusion pass off. Always rewritten (it is never edited)."""
    path = workspace.fusion_off_file
    Workspace.ensure_dir(path.parent, "fusion folder")
    switch = {"Switch": {group: {"ALL": "off"} for group in GROUPS}}
    write_text_atomic(path, json.dumps(switch, indent=4) + "\n")
    return path


def write_fusion_switch(workspace: Workspace) -> Path:
    """fusion/fusion_switch.cfg: every pass the run used, each "on", for the user to switch off one at a
    time. An existing file is the user's and is kept as it is, except the empty template written before
    any pass was known (nothing in it to keep), which is written again. With no pass known the groups are
    empty (see `fusion_switch_template` to tell the user so)."""
    path = workspace.fusion_switch_file
    if path.exists() and not _is_empty_template(path):
        return path
    Workspace.ensure_dir(path.parent, "fusion folder")
    template = fusion_switch_template(workspace)
    switch = {"Switch": {"GraphFusion": {name: "on" for name in template.graph_fusion},
                         "UBFusion": {name: "on" for name in template.ub_fusion}}}
    write_text_atomic(path, json.dumps(switch, indent=4) + "\n")
    return path


def _is_empty_template(path: Path) -> bool:
    try:
        return json.loads(path.read_text(encoding="utf-8")) == {"Switch": {group: {} for group in GROUPS}}
    except (OSError, ValueError):
        return False  # the user's file, whatever it holds: never overwritten


def fusion_switch_template(workspace: Workspace) -> SwitchTemplate:
    """The passes in the workspace's fusion_result.json and on the Build graph's ops, by group, sorted.
    A damaged fusion_result.json or graph is an error naming the file (never read as "no pass")."""
    graph_passes: set[str] = set()
    ub_passes: set[str] = set()
    read: list[Path] = []
    if workspace.fusion_file.is_file():
        for graph in parse_fusion_result(workspace.fusion_file):
            graph_passes.update(p.name for p in graph.graph_fusion)
            ub_passes.update(p.name for p in graph.ub_fusion)
        read.append(workspace.fusion_file)
    for path in workspace.build_graph_files(0):
        graph_found, ub_found = _graph_passes(path)
        graph_passes |= graph_found
        ub_passes |= ub_found
        read.append(path)
    return SwitchTemplate(tuple(sorted(graph_passes)), tuple(sorted(ub_passes)), tuple(read))


def _names(value: object) -> set[str]:
    if isinstance(value, bytes):
        value = value.decode("utf-8", "replace")
    if isinstance(value, str):
        return {value} if value else set()
    if isinstance(value, list):
        return set().union(*(_names(item) for item in value)) if value else set()
    return set()


def _graph_passes(path: Path) -> tuple[set[str], set[str]]:
    from precision_tool.formats.ge.ge_graph import load_graph  # the graph readers are heavy; only when needed

    model = load_graph(path, light=True)  # FormatError naming the file when damaged
    graph_passes: set[str] = set()
    ub_passes: set[str] = set()
    for _, op in model.iter_ops():
        graph_passes |= _names(op.attrs.get("pass_name"))
        ub_passes |= _names(op.attrs.get("pass_name_ub"))
    return graph_passes, ub_passes


def fusion_switch_note(path: Path) -> str:
    """One line for the caller to show after write_fusion_switch: what the file lists and what to do."""
    try:
        switch = json.loads(path.read_text(encoding="utf-8"))["Switch"]
        counts = [len(switch.get(group) or {}) for group in GROUPS]
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return f"{path} is not a JSON switch file any more; fix it, or delete it to get a fresh template"
    if not any(counts):
        return (f"{path}: no fusion pass is known yet (no fusion/fusion_result.json, no pass on a Build graph), so "
                f"both groups are empty; run once with action 'dump' (its fusion result and Build graph name the "
                f"passes), and the next fusion_switch run fills this file in")
    return (f"{path}: {counts[0]} graph and {counts[1]} UB fusion passes, each \"on\"; set one to \"off\" per run "
            f"to find the pass that costs accuracy (your edits are kept)")


@dataclass(frozen=True)
class FusionSwitch:
    """A read switch file: each group's passes by value ("on"/"off") and its "ALL" value, as GE applies it
    (fusion_config_parser.cc: a pass named in its group beats the group's "ALL")."""

    path: Path
    passes: dict[str, dict[str, str]]  # group → {pass: "on"|"off"}
    all_value: dict[str, str]  # group → "on"|"off" (absent: on)

    def enabled(self, pass_name: str, group: str) -> bool:
        value = self.passes.get(group, {}).get(pass_name) or self.all_value.get(group, "on")
        return value != "off"

    @property
    def switched_off(self) -> tuple[str, ...]:
        return tuple(sorted(name for group in self.passes.values() for name, value in group.items()
                            if value == "off"))


def read_fusion_switch(path: Path) -> FusionSwitch:
    """The switch file parsed and checked; FormatError naming the file and what is wrong."""
    from precision_tool.errors import FormatError

    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise FormatError(path, f"cannot be read ({exc.strerror or exc})") from None
    except ValueError as exc:
        raise FormatError(path, f"is not JSON ({exc}); a fusion switch file is "
                                '{"Switch": {"GraphFusion": {PASS: "on"|"off"}, "UBFusion": {...}}}') from None
    switch = data.get("Switch") if isinstance(data, dict) else None
    if not isinstance(switch, dict):
        raise FormatError(path, 'has no "Switch" object; write {"Switch": {"GraphFusion": {PASS: "off"}}}')
    passes: dict[str, dict[str, str]] = {}
    all_value: dict[str, str] = {}
    for group, entries in switch.items():
        if group not in GROUPS or not isinstance(entries, dict):
            raise FormatError(path, f'"Switch" holds {group!r}; only {" and ".join(GROUPS)} objects are known')
        for name, value in entries.items():
            if value not in ("on", "off"):
                raise FormatError(path, f'{group}.{name} is {value!r}; each pass is "on" or "off"')
            if name == "ALL":
                all_value[group] = value
            else:
                passes.setdefault(group, {})[name] = value
    return FusionSwitch(path, passes, all_value)
