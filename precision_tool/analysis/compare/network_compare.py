"""Whole-network comparison: plan (matching.py) → compare every group on all cores → result CSV → summary.

The work is split by concern; this module names the public pieces in one place for the commands:
- compare_engine: streams a plan's rows into a CSV from an executor (compare_executors.py, dask_executor.py)
  whose workers (engine/compare_worker.py) compare the tensors;
- compare_runs: one comparison (RunSpec) run into a result folder, run.json, `--resume`;
- workspace_runs: what `vc` compares in a workspace (graphs, ranks, debug_1);
- pair_compare: two tensors (`cp`);
- backends/cann.py (not re-exported: it is a backend): the same runs through CANN's msaccucmp.
"""

from __future__ import annotations

from precision_tool.analysis.compare.engine.compare_engine import CompareInterrupted, Progress, execute_plan
from precision_tool.analysis.compare.engine.golden_source import npy_source
from precision_tool.analysis.compare.engine.golden_layout import HOST_CANDIDATES
from precision_tool.analysis.compare.compare_runs import (
    PATH_FIELDS,
    RUN_FILE,
    CompareRun,
    RunSpec,
    absolute_spec,
    discard_empty_result_dir,
    has_golden_files,
    interrupted_result_dir,
    plan_run,
    read_run_file,
    run_specs,
)
from precision_tool.analysis.compare.workspace_runs import (
    choose_step,
    common_step,
    compare_workspace,
    graph_specs,
    resume_workspace,
    workspace_specs,
)
from precision_tool.analysis.compare.pair_compare import (
    LoadedTensor, PairReport, compare_pair, load_tensor, to_host_layout,
)

__all__ = [
    "HOST_CANDIDATES", "PATH_FIELDS", "RUN_FILE", "CompareInterrupted", "CompareRun", "LoadedTensor", "PairReport",
    "Progress", "RunSpec", "absolute_spec", "choose_step", "common_step", "compare_pair", "compare_workspace",
    "discard_empty_result_dir", "execute_plan", "graph_specs", "has_golden_files", "interrupted_result_dir",
    "load_tensor", "npy_source", "plan_run", "read_run_file", "resume_workspace",
    "run_specs", "to_host_layout", "workspace_specs",
]
