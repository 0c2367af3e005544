"""What an NPU run leaves: dump files (npu_dump.py reads, npu_dump_write.py writes; dump_proto.py,
nano_dump.py), their data types (dump_types.py, hifloat8.py) and device layouts (layouts.py), statistics
CSVs (stats_dump.py), Opdebug overflow records (opdebug.py) and mixed-precision lists (mixlist.py).
Imports only errors and atomic.
"""
