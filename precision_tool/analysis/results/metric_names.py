"""The names msaccucmp gives its ten metrics (its CSV columns, in order) and its text for one not computed.

Apart from metrics.py, which computes them with numpy: reading and summarising a result CSV (`vcs`, `ac`,
`ni`) needs only the names, and importing numpy costs every such command 50-60 ms of its start.
"""

from __future__ import annotations

METRIC_NAMES: tuple[str, ...] = (
    "CosineSimilarity",
    "MaxAbsoluteError",
    "AccumulatedRelativeError",
    "RelativeEuclideanDistance",
    "KullbackLeiblerDivergence",
    "StandardDeviation",
    "MeanAbsoluteError",
    "RootMeanSquareError",
    "MaxRelativeError",
    "MeanRelativeError",
)
NAN_TEXT = "NaN"
"""What msaccucmp writes for a metric it did not compute."""
