"""The checks `ac` runs besides the comparison: fusion passes that fired (fusion.py), dangerous casts
and NPU-vs-NPU graph differences (graph_checks.py), overflowing ops (overflow.py), whether both runs
started from the same inputs and weights (same_step.py). Imports graphs/, dumps/ and formats/;
imported by compare/ (the OverFlow column), report/, render/ and shell/.
"""
