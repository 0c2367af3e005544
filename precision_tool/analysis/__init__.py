"""The engines behind the commands: read the workspace through formats/, compute, and return frozen
dataclasses. Never prints, never imports render/, shell/, capture/ or rich (tests/test_layers.py).

graphs/   the GE graphs of a workspace as an op index        (reads formats/)
results/  metrics and the result CSVs they fill              (reads graphs/)
dumps/    NPU dump files: finding, decoding, layouts, stats  (reads graphs/, results/)
checks/   the `ac` checks: fusion, casts, graph diffs, overflow (reads graphs/, dumps/)
ranks.py  the ranks of a multi-device run and their verdict  (reads results/)
compare/  the comparison engine and its runs (`vc`, `cp`)    (reads graphs/, results/, checks/, ranks)
ops/      one op or tensor named by the user (`ni`, `pt`)    (reads graphs/, results/, dumps/, compare/)
replay/   one op run again on CPU and its verdict            (reads graphs/, results/, dumps/, ops/)
report/   ac's answer, ni's results and the HTML report's data (reads everything above)
golden_extract.py (`tf_dump`) and infer_import.py (`infer`) stand beside them.
render/, backends/ and shell/ import these; tests/test_imports.py keeps the arrows one way.
"""
