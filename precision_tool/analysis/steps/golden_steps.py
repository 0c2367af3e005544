"""`tf_dump --step all`: every tfdbg run (v1) or step (v2) into its own golden folder tf/dump/step_<N>/
(docs/steps.md), so `vc --step all` compares NPU dump iteration N with step N's golden tensors.

Runs are numbered in the order they ran, from `first_step` (0 unless the TensorFlow dump starts later).
"""

from __future__ import annotations

from pathlib import Path
from typing import Callable

from precision_tool.analysis.golden_extract import ExtractSummary, TfDumpLocation, extract_golden
from precision_tool.errors import UsageError, WorkspaceError
from precision_tool.formats.tf import tfdbg_v2
from precision_tool.workspace import GOLDEN_STEP_PREFIX


def step_golden_dir(out_dir: Path, step: int) -> Path:
    """Where step `step`'s golden tensors go: `<out>/step_<N>`."""
    return out_dir / f"{GOLDEN_STEP_PREFIX}{step}"


def extract_steps(location: TfDumpLocation, out_dir: Path, *, first_step: int = 0, force: bool = False,
                  progress: Callable[[int, int, int], None] | None = None,
                  sources_file: Path | None = None) -> list[tuple[int, ExtractSummary]]:
    """Extract each run/step of `location` into `<out>/step_<N>`, N = first_step + its position; stops at
    the first step whose extraction failed (its summary is the last one returned).
    `progress(step, done, total)`."""
    if first_step < 0:
        raise UsageError(f"tf_dump --first-step {first_step}: a step number is 0 or more")
    traces = None
    if location.kind == "v1":
        count = len(location.runs)
        if count == 0:
            raise WorkspaceError(f"{location.root}: no run_* folders to extract step by step")
    else:
        traces = tfdbg_v2.read_traces(location.root)  # once, not once per step
        count = traces.steps
    results: list[tuple[int, ExtractSummary]] = []
    for position in range(count):
        step = first_step + position
        tick = None if progress is None else (lambda done, total, s=step: progress(s, done, total))
        summary = extract_golden(location, step_golden_dir(out_dir, step), run=position, force=force,
                                 progress=tick, sources_file=sources_file if not results else None, traces=traces)
        results.append((step, summary))
        if summary.failed:
            break
    return results
