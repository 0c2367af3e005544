"""The comparison engine: streams a plan's rows into a result CSV (compare_engine.py) from an executor
(compare_executors.py: this process or a local pool; dask_executor.py: a Dask cluster) whose workers
(compare_worker.py) read and compare the tensors, each NPU tensor put in its golden's layout first
(golden_layout.py). Imports compare/matching.py's plan types, results/ and formats/; never the runs
(compare_runs.py), replay/ or report/.
"""
