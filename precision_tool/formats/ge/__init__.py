"""GE graphs in one direction: ge_model.py (the model, imports no reader) at the bottom, the readers on
it (ge_text.py with ge_text_fast.py, ge_text_scalar.py, ge_text_write.py; ge_json.py; ge_tree.py; ge_onnx.py),
ge_graph.py the loader on top (the API of docs/architecture.md); ge_proto.py, ge_synthetic.py, and
fusion_result.py (GE's fusion result JSON). Imports only errors and atomic.
"""
