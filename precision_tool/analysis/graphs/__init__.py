"""The workspace's GE graphs as a cached index of ops (`ls`, `ni`, completion): graph_summary.py one
file summarized and its JSON cache, graph_index.py the index over every file, op_labels.py the label
of an op in a result. Imports formats/ only; imported by the rest of analysis/, render/ and shell/.
"""
