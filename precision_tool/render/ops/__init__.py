"""What `ni` shows of one op: its facts and tensors (node_info.py), what the comparison and the replay
found (node_results.py), and the graphviz picture of its neighbourhood (op_graph.py). Reads analysis/
(graphs/, ops/, report/) and render's dumps, graphs and replay views; imported by render/report/ and shell/.
"""
