"""`bisect precision` and `bisect fusion`: the smallest set of op types to keep in float32, or of fusion passes
to switch off, with which the captured step passes a check; each round a run of the step, compared with the
golden tensors and kept under temp/bisect/<time>/. May import formats, analysis.results, analysis.compare,
analysis.replay (its verdict files) and the base; never prints.
"""
