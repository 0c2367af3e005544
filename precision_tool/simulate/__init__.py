"""The simulated NPU run: derive the graph Ascend's compiler would build from a TF GraphDef (fusion,
mixed precision, layouts, inserted Cast/TransData), compute it in the NPU's dtypes, and write what an
Ascend run leaves behind (GE Build graph, dumps, overflow records, fusion_result.json). Imports the
package root, formats/ and capture/ (tf_setup, the captured step); imported by demo/ and by `train -d sim`.
"""
