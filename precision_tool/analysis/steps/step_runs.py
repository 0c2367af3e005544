"""What `vc --step all` compares: every NPU dump iteration N that has golden tensors tf/dump/step_<N>/
(docs/steps.md), each as `vc --step N` compares one, all into one result folder
(result_<time>_step<N>.csv, one per Build graph as plain vc writes them)."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

from precision_tool.analysis.compare.compare_runs import RunSpec, has_golden_files
from precision_tool.analysis.compare.matching import dump_iterations
from precision_tool.analysis.compare.workspace_runs import graph_specs
from precision_tool.errors import WorkspaceError
from precision_tool.workspace import GOLDEN_STEP_PREFIX, golden_dir_for_step, rank_dirs, step_golden_folders


def step_label(step: int, label: str) -> str:
    """A step's run label: `step N: <label>` (vcs, ac and the report find a run's step by it and its spec)."""
    return f"step {step}: {label}"


def step_specs(workspace: Any, npu_dir: Path, golden_root: Path, stamp: str, notes: list[str],
               graph_path: str | None = None, second_run: Path | None = None) -> list[RunSpec] | None:
    """One NPU-vs-golden run per dump iteration of `npu_dir` that has a `golden_root/step_<N>/` folder, and
    with `second_run` (debug_1's dump, as plain vc compares it) one NPU-vs-NPU run per iteration both hold;
    None when the dump holds a single iteration (then `vc --step all` is plain `vc`). Iterations without
    golden tensors, and golden steps the dump lacks, are named in `notes`."""
    iterations = sorted(dump_iterations(npu_dir))
    if len(iterations) <= 1:
        return None
    if rank_dirs(npu_dir):
        raise WorkspaceError(f"vc --step all: {npu_dir} holds one folder per device; comparing ranks step by step "
                             "is not supported yet: compare one step of every rank with `vc --step N`")
    listed = ", ".join(map(str, iterations))
    goldens = dict(step_golden_folders(golden_root))
    if not goldens:
        flat = " (its flat .npy files are one step: `vc --step N` compares them with iteration N)" \
            if has_golden_files(golden_root) else ""
        raise WorkspaceError(f"vc --step all: nothing to compare step by step: the dump {npu_dir} holds iterations "
                             f"{listed} and {golden_root} has no {GOLDEN_STEP_PREFIX}<N>/ folders{flat}; "
                             "`tf_dump --step all` writes one per step (docs/steps.md)")
    debug_id = workspace.run_of(npu_dir) if graph_path is None else None
    specs: list[RunSpec] = []
    for step in iterations:
        golden = golden_dir_for_step(golden_root, step)
        if golden == golden_root or not has_golden_files(golden):
            notes.append(f"step {step}: no golden tensors ({golden_root / f'{GOLDEN_STEP_PREFIX}{step}'} is "
                         f"{'empty' if golden != golden_root else 'missing'}): skipped")
            continue
        specs.extend(_one_step(workspace, debug_id, npu_dir, golden, stamp, step, notes, graph_path))
    if specs and second_run is not None:
        specs.extend(_npu_pairs(npu_dir, second_run, iterations, stamp, notes))
    unpaired = sorted(set(goldens) - set(iterations))
    if unpaired:
        notes.append(f"golden step(s) {', '.join(map(str, unpaired))} have no NPU dump iteration in {npu_dir} "
                     f"(it holds {listed}): not compared")
    if not specs:
        raise WorkspaceError(f"vc --step all: nothing to compare: none of the dump's iterations ({listed}) has "
                             f"a golden folder in {golden_root} (it holds "
                             f"{', '.join(p.name for p in goldens.values())}); the folder step_<N> is "
                             "compared with iteration N (docs/steps.md)")
    return specs


def _one_step(workspace: Any, debug_id: int | None, npu_dir: Path, golden: Path, stamp: str, step: int,
              notes: list[str], graph_path: str | None) -> list[RunSpec]:
    found: list[RunSpec] = []
    if debug_id is not None:
        found = graph_specs(workspace, debug_id, npu_dir, golden, f"{stamp}_step{step}", notes, step)
    if not found:
        label = "NPU vs golden" if graph_path else "NPU vs golden (by name)"
        found = [RunSpec(label, str(npu_dir), f"result_{stamp}_step{step}.csv", golden_dir=str(golden),
                         graph_path=graph_path, step=step)]
    return [dataclasses.replace(s, label=step_label(step, s.label)) for s in found]


def _npu_pairs(npu_dir: Path, second_run: Path, iterations: list[int], stamp: str, notes: list[str]) -> list[RunSpec]:
    """debug_0 vs debug_1 at every iteration both runs hold (result_<stamp>_step<N>_npu_vs_npu.csv)."""
    theirs = set(dump_iterations(second_run))
    both = [step for step in iterations if step in theirs]
    if not both:
        notes.append(f"the second NPU run {second_run} holds none of iterations {', '.join(map(str, iterations))}: "
                     "debug_0 vs debug_1 not compared")
    return [RunSpec(step_label(step, "debug_0 vs debug_1"), str(npu_dir), f"result_{stamp}_step{step}_npu_vs_npu.csv",
                    right_dir=str(second_run), step=step) for step in both]
