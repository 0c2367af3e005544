"""Drawing comparison results: vc/vcs tables and run lines (compare.py), statistics results (stats.py),
one pair of tensors (pair.py), the rank table and verdicts (ranks.py), the
same-step check's verdict and table (same_step.py). Reads analysis/ (compare/,
results/, ranks); imported by render/answer.py and shell/.
"""
