"""The whole-network comparison: matching NPU dumps to golden tensors (matching.py, graph_plan.py,
quant_filter.py, op_selection.py), comparing them in this process, a local pool or on Dask (engine/),
statistics dumps (stats_compare.py), one pair of tensors (pair_compare.py), and the runs of a workspace into
result folders (compare_runs.py, workspace_runs.py, named together by network_compare.py). Imports
graphs/, results/, checks/, ranks and formats/; never replay/ or report/. Imported by ops/, replay/,
report/, backends/, render/ and shell/.
"""
