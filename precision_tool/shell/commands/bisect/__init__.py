"""`bisect precision` and `bisect fusion` (bisect.py): the automatic search for the op types to keep in
float32 or the fusion passes to switch off. Import analysis/bisect and render/.
"""
