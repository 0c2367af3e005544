"""One `bisect precision` / `bisect fusion` search: the base round, the ranked candidates, the search's
rounds (each a run of the step judged by `check`), the file that passes. No printing: `on_round` is told
of each round as it ends.

A round whose command fails counts as failing the check when it fails the way the first such round did
(same exit status and last error line: e.g. the training stops on a NaN loss); a different failure ends the
search (`stopped`), and so does a simulated round (`train -d sim`) that fails at all: the rounds so far
are kept and a rerun resumes. In `bisect precision`, a round whose first divergent op is of a type the
replay calls a kernel fault ends the search too (`kernel`): float32 cannot fix a wrong kernel.
"""

from __future__ import annotations

import json
import shutil
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Sequence

from precision_tool.analysis.bisect.check import CheckSettings, Judgement, compare_run, judge
from precision_tool.analysis.bisect.rounds import run_round
from precision_tool.analysis.bisect.search import StopSearch, halving, prefix_then_prune
from precision_tool.analysis.bisect.store import RoundRow, SearchStore, open_search
from precision_tool.atomic import write_text_atomic

PRECISION, FUSION = "precision", "fusion"
UB_GROUP, GRAPH_GROUP = "UBFusion", "GraphFusion"


@dataclass(frozen=True)
class BisectRequest:
    kind: str  # precision | fusion
    command: tuple[str, ...] | None  # None: train -d sim
    check: CheckSettings
    new: bool = False  # never resume
    fresh: bool = False  # precision: the rounds leave fix/ops_info.json's own entries out
    keep_runs: bool = False  # keep each simulated round's npu/debug_N (removed after its check otherwise)
    python: str | None = None


@dataclass
class BisectResult:
    folder: Path
    outcome: str  # found | base_passes | unfixable | kernel | stopped
    message: str
    kept: tuple[str, ...] = ()
    candidates: tuple[str, ...] = ()
    left_out: dict[str, str] = field(default_factory=dict)  # candidate-like things not searched, and why
    effects: dict[str, str] = field(default_factory=dict)  # kept item → what the run does without it
    rounds_run: int = 0
    rounds_reused: int = 0
    rounds_total: int = 0
    linear_rounds: int = 0
    seconds: float = 0.0
    written: Path | None = None
    resumed: bool = False


class _Kernel(Exception):
    def __init__(self, verdict: str) -> None:
        super().__init__(verdict)


class _Search:
    def __init__(self, workspace: Any, request: BisectRequest, store: SearchStore,
                 on_round: Callable[[RoundRow, bool], None], kernel_types: frozenset[str]) -> None:
        self.ws, self.request, self.store, self.on_round = workspace, request, store, on_round
        self.kernel_types = kernel_types
        self.ran = self.reused = 0
        self.base_summary: Any = None
        self.base_debug_id: int | None = None
        self.seen_this_time: set[frozenset[str]] = set()

    # --- the round's file --------------------------------------------------------------------------
    def _round_file(self, members: tuple[str, ...], folder: Path) -> tuple[str, Path]:
        from precision_tool.config import FUSION_SWITCH_ENV, MIXLIST_ENV

        settings = self.store.settings
        if self.request.kind == PRECISION:
            data = json.loads(json.dumps(settings.get("base_mixlist") or {}))
            block = data.setdefault("black-list", {})
            adding = block.setdefault("to-add", [])
            adding += [m for m in members if m not in adding]
            if block.get("to-remove"):
                block["to-remove"] = [t for t in block["to-remove"] if t not in adding]
            path = folder / "ops_info.json"
            write_text_atomic(path, json.dumps(data, indent=4) + "\n")
            return MIXLIST_ENV, path
        groups = settings.get("groups") or {}
        switch = {GRAPH_GROUP: {}, UB_GROUP: {}}
        for name in settings.get("candidates") or settings.get("fired") or members:
            switch[groups.get(name, GRAPH_GROUP)][name] = "off" if name in members else "on"
        path = folder / "fusion_switch.cfg"
        write_text_atomic(path, json.dumps({"Switch": switch}, indent=4) + "\n")
        return FUSION_SWITCH_ENV, path

    # --- one round -----------------------------------------------------------------------------------
    def passes(self, members: tuple[str, ...]) -> bool:
        key = frozenset(members)
        row = self.store.known.get(key)
        if row is not None:
            if key not in self.seen_this_time:
                self.seen_this_time.add(key)
                self.reused += 1
                self.on_round(row, True)
            if row.outcome == "kernel":
                raise _Kernel(row.verdict)
            return row.outcome == "pass"
        number = self.store.next_number
        folder = self.store.round_dir(number)
        variable, path = self._round_file(members, folder)
        fusion_result = self.ws.fusion_file.read_bytes() if self.ws.fusion_file.is_file() else None
        try:
            run = run_round(self.ws, self.request.command, {variable: str(path)}, folder / "run.log",
                            self.request.python)
        finally:
            if self.ws.fusion_file.is_file():  # what fired in this round's compile, kept with the round
                shutil.copyfile(self.ws.fusion_file, folder / "fusion_result.json")
            if self.request.command is None and fusion_result is not None:  # the sim rewrites it each round
                write_text_atomic(self.ws.fusion_file, fusion_result.decode("utf-8"))
        self.ran += 1
        self.seen_this_time.add(key)
        verdict: dict[str, Any] = {"round": number, "set": list(members), "file": str(path),
                                   "exit_status": run.exit_status, "seconds": round(run.seconds, 2),
                                   "log": str(run.log)}
        if run.exit_status != 0 and self.request.command is None:  # the simulation itself failed: no verdict
            verdict.update(outcome="stopped", error=run.error_line)
            write_text_atomic(folder / "verdict.json", json.dumps(verdict, indent=2) + "\n")
            raise StopSearch(f"round {number}: the simulated run failed (exit {run.exit_status}): {run.error_line} "
                             f"(see {run.log})")
        if run.exit_status != 0:
            signature = [run.exit_status, run.error_line]
            first_bad = self.store.settings.get("bad_failure")
            if first_bad is None:
                self.store.settings["bad_failure"] = signature
                self.store.save_settings()
            elif first_bad != signature:
                verdict.update(outcome="stopped", error=run.error_line)
                write_text_atomic(folder / "verdict.json", json.dumps(verdict, indent=2) + "\n")
                raise StopSearch(f"round {number} ({_shown(members)}): the command failed another way than the "
                                 f"first failing round (exit {run.exit_status}: {run.error_line}; the first: exit "
                                 f"{first_bad[0]}: {first_bad[1]}); see {run.log}")
            row = RoundRow(number, members, "fail", f"the command failed (exit {run.exit_status}): {run.error_line}",
                           run.seconds, "", run.exit_status)
            self.store.add(row, {**verdict, "outcome": "fail"})
            self.on_round(row, False)
            return False
        if run.dump_dir is None or run.debug_id is None:
            raise StopSearch(f"round {number}: the command succeeded but wrote no new dump folder under "
                             f"{self.ws.npu_dir}/debug_N/dump; does it run the step with tf_config's dump config? "
                             f"(see {run.log})")
        started = time.perf_counter()
        compared = compare_run(self.ws, run.debug_id, run.dump_dir, folder, self.request.check.threshold)
        judgement = judge(self.ws, compared, run.debug_id, self.request.check,
                          self.kernel_types if self.request.kind == PRECISION else frozenset())
        if not members:
            self.base_summary, self.base_debug_id = compared.summary, run.debug_id
        seconds = run.seconds + time.perf_counter() - started
        outcome = "pass" if judgement.passed else ("kernel" if judgement.kernel_fault else "fail")
        shown_run = str(run.dump_dir)
        if self.request.command is None and not self.request.keep_runs and members:
            shutil.rmtree(self.ws.debug_dir(run.debug_id), ignore_errors=True)
            shown_run += " (removed; --keep-runs keeps it)"
        row = RoundRow(number, members, outcome, judgement.verdict, seconds, shown_run, 0)
        self.store.add(row, {**verdict, "outcome": outcome, "verdict": judgement.verdict,
                             "first_divergent": judgement.first_divergent, "csv": judgement.csv_path,
                             "loss": judgement.loss, "details": judgement.details, "run": shown_run})
        self.on_round(row, False)
        if outcome == "kernel":
            raise _Kernel(judgement.verdict)
        return judgement.passed


def _shown(members: Sequence[str]) -> str:
    return ", ".join(members) if members else "nothing changed"


def _base_mixlist(workspace: Any, fresh: bool) -> dict:
    """fix/ops_info.json's own content (every round keeps it), or {} with --fresh or without the file."""
    from precision_tool.formats.npu.mixlist import read_mixlist

    path = workspace.ops_info_file
    if fresh or not path.is_file():
        return {}
    read_mixlist(path)  # FormatError naming the file when it is not a list
    return json.loads(path.read_text(encoding="utf-8"))


def _groups(fusion_file: Path) -> dict[str, str]:
    from precision_tool.formats.ge.fusion_result import parse_fusion_result

    groups: dict[str, str] = {}
    if fusion_file.is_file():
        for graph in parse_fusion_result(fusion_file):
            groups.update({p.name: UB_GROUP for p in graph.ub_fusion})
            groups.update({p.name: GRAPH_GROUP for p in graph.graph_fusion})
    return groups


def run_bisect(workspace: Any, request: BisectRequest,
               on_round: Callable[[RoundRow, bool], None] = lambda row, reused: None,
               on_note: Callable[[str], None] = lambda text: None) -> BisectResult:
    """The search (module docstring); resumes the newest unfinished one with the same settings."""
    from precision_tool.analysis.bisect.candidates import (fired_passes, float16_types, fusion_candidates,
                                                           kernel_types, precision_candidates, replay_verdicts)

    started = time.perf_counter()
    settings: dict[str, Any] = {"kind": request.kind,
                                "command": list(request.command) if request.command else "train -d sim",
                                "check": request.check.as_dict()}
    verdicts, replay_csv, ranked_csv = replay_verdicts(workspace)
    kernels = kernel_types(verdicts)
    if request.kind == PRECISION:
        base = _base_mixlist(workspace, request.fresh)
        settings["base"] = "fresh" if request.fresh else base
        settings["base_mixlist"] = base
    else:
        settings["base"] = "all passes on"
        settings["groups"] = _groups(workspace.fusion_file)
        settings["fired"] = fired_passes(workspace.fusion_file)
    settings["verdicts_from"] = [str(p) for p in (replay_csv, ranked_csv) if p]
    store = open_search(workspace.temp_dir / "bisect", settings, new=request.new)
    if store.resumed:
        on_note(f"resuming the search in {store.folder} ({len(store.rows)} round(s) already run)")
    else:
        on_note(f"rounds kept in {store.folder}")
    search = _Search(workspace, request, store, on_round, kernels)
    result = BisectResult(store.folder, "stopped", "", resumed=store.resumed)
    left_out: dict[str, str] = {}
    if request.kind == PRECISION:
        left_out = {t: "a kernel verdict: float32 cannot fix a wrong kernel" for t in sorted(kernels)}
        left_out.update({t: "already kept in float32 by fix/ops_info.json" for t in
                         sorted(_kept(store.settings.get("base_mixlist") or {}))})
    result.left_out = left_out

    def finish(outcome: str, message: str) -> BisectResult:
        result.outcome, result.message = outcome, message
        result.rounds_run, result.rounds_reused = search.ran, search.reused
        result.rounds_total = len(store.rows)
        result.linear_rounds = len(result.candidates) + 1
        result.seconds = time.perf_counter() - started
        store.finish({"outcome": outcome, "message": message, "kept": list(result.kept),
                      "candidates": list(result.candidates), "effects": result.effects,
                      "rounds": result.rounds_total, "linear_rounds": result.linear_rounds,
                      "written": str(result.written) if result.written else None}) if outcome != "stopped" else None
        return result

    try:
        if search.passes(()):
            return finish("base_passes", "the run passes the check as it is (round 0 changed nothing): nothing to "
                                         "search" + ("" if request.kind == FUSION or request.fresh or not store.settings.get("base_mixlist") else
                                                     "; --fresh searches without fix/ops_info.json's own entries"))
        candidates = store.settings.get("candidates")
        if candidates is None:
            if request.kind == PRECISION:
                first = search.base_summary.first_divergent_op if search.base_summary is not None else None
                nearby = float16_types(workspace, search.base_debug_id, first.npu_op if first else None)
                candidates = precision_candidates(verdicts, search.base_summary, _kept(settings["base_mixlist"]),
                                                  kernels, nearby)
            else:  # what the base round's compile (every pass on) fused: its fusion_result.json and Build graph
                base_result = store.folder / "round_000" / "fusion_result.json"
                store.settings["groups"].update(_groups(base_result))
                fired = fired_passes(base_result) or list(store.settings["fired"])
                candidates = fusion_candidates(fired, workspace, search.base_debug_id, search.base_summary)
            store.settings["candidates"] = candidates
            store.save_settings()
        result.candidates = tuple(candidates)
        if not candidates:
            return finish("unfixable", "no candidate to search: " + (
                "no op type with a precision verdict or an abnormal op in the base round" if request.kind == PRECISION
                else "no fusion pass fired (fusion/fusion_result.json)"))
        algorithm = prefix_then_prune if request.kind == PRECISION else halving
        kept = algorithm(candidates, search.passes)
        if kept is not None:
            kept = _measure_each(kept, search.passes)
    except StopSearch as stop:
        return finish("stopped", f"{stop}; the rounds so far are kept: run the same bisect again to resume")
    except _Kernel as kernel:
        return finish("kernel", f"{kernel}; this is outside bisect precision's reach: fix the kernel (the "
                                "replay's reproducer in fix/), or try `bisect fusion` if a fused op computes it")
    if kept is None:
        what = "keeping every candidate in float32" if request.kind == PRECISION else "switching every fired pass off"
        return finish("unfixable", f"even {what} does not pass the check: the problem is elsewhere")
    result.kept = kept
    for item in kept:
        without = search.store.known.get(frozenset(kept) - {item})
        if without is not None:
            result.effects[item] = f"without it: {without.verdict}"
    result.written = _write_result(workspace, request, store, kept)
    return finish("found", f"{len(kept)} of {len(candidates)} candidate(s) needed")


def _measure_each(kept: tuple[str, ...], passes: Callable[[tuple[str, ...]], bool]) -> tuple[str, ...]:
    """Every kept item's effect measured: a round without it (most are known from the search already). One
    the run passes without after all (the searches assume more fixes never break a run; a real one may
    not oblige) is dropped, and the rest measured again."""
    changed = True
    while changed:
        changed = False
        for item in kept:
            without = tuple(c for c in kept if c != item)
            if without and passes(without):
                kept, changed = without, True
                break
    return kept


def _kept(mixlist: dict) -> set[str]:
    block = mixlist.get("black-list") or {}
    return set(block.get("to-add") or []) - set(block.get("to-remove") or [])


def _write_result(workspace: Any, request: BisectRequest, store: SearchStore, kept: tuple[str, ...]) -> Path:
    """fix/ops_info.json with the kept types added (the user's entries all kept), or the workspace's
    fusion/fusion_switch.cfg with the kept passes "off" (other entries of an existing file kept)."""
    if request.kind == PRECISION:
        from precision_tool.analysis.replay.replay_fixes import write_ops_info

        return write_ops_info(workspace, kept)
    from precision_tool.workspace import Workspace

    path = workspace.fusion_switch_file
    switch: dict = {GRAPH_GROUP: {}, UB_GROUP: {}}
    if path.is_file():  # (the command checked it before the first round: a switch file)
        loaded = json.loads(path.read_text(encoding="utf-8"))["Switch"]
        switch.update({g: dict(v) for g, v in loaded.items()})
    groups = store.settings.get("groups") or {}
    for name in store.settings.get("candidates") or []:
        switch.setdefault(groups.get(name, GRAPH_GROUP), {})
        switch[groups.get(name, GRAPH_GROUP)][name] = "off" if name in kept else \
            switch[groups.get(name, GRAPH_GROUP)].get(name, "on")
    Workspace.ensure_dir(path.parent, "fusion folder")
    text = json.dumps({"Switch": switch}, indent=4) + "\n"
    write_text_atomic(path, text)
    write_text_atomic(store.folder / "passing_fusion_switch.cfg", text)
    return path
