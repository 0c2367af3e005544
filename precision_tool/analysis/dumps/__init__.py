"""NPU dump files in a workspace: finding them (dump_files.py), decoding them to .npy (decode.py), the
layout a tensor is shown in (origin_layout.py), tensor statistics (tensor_stats.py), the free-memory check
before a big tensor is held (tensor_memory.py). Imports graphs/,
results/ (memory and sweeps) and formats/; imported by checks/, ops/, replay/, report/, render/, shell/.
"""
