"""What a comparison measures and writes: metrics.py (+ metrics_sweeps.py, the exact and fast sweeps;
metrics_batch.py, many small pairs at once; metric_names.py, the names without numpy), the result CSVs
(result_writer.py writes them, results.py reads and summarises them, result_columns.py, result_folders.py),
statistics results and the one way a result is counted (counts.py). Imports graphs/ (op labels) and
formats/; imported by dumps/, compare/, ranks, replay/, report/ and render/ — never by formats/.
"""
