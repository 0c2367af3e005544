"""One op or tensor the user names: which graph op a name means (op_lookup.py), which tensor or file a
spelling means (tensor_ref.py, with tensor_files.py finding the files), and what `ni` shows of an op
(op_report.py). Imports graphs/, results/, dumps/, compare/ (golden matching) and formats/; imported by
replay/, report/, render/ and shell/.
"""
