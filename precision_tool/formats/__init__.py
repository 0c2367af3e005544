"""Bytes → typed objects and back, one module per external format. Knows nothing of the workspace,
never prints, imports only errors, atomic and shapes of the package root.

ge/   GE graphs: text, JSON, ONNX-style dumps and the model they share; fusion results
npu/  what the NPU run leaves: dumps and their data types and layouts, statistics CSVs, Opdebug
      overflow records, mixed-precision lists
tf/   TensorFlow's files: tfdbg dumps (v1, v2), their protos, golden tensor names
small_files.py  a file's start, and all of it when small, in the fewest system calls (npu/ and tf/ read so)
The three import nothing of each other; analysis/, capture/, demo/, render/ and shell/ import them.
"""
