"""What a comparison measures and writes: metrics.py (+ metrics_sweeps.py, the exact and fast sweeps),
the result CSVs (results.py, result_columns.py, result_folders.py), statistics results and the one way a
result is counted (counts.py). Imports graphs/ (op labels) and formats/; imported by dumps/, compare/,
ranks, replay/, report/ and render/ — never by formats/.
"""
