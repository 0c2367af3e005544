"""Builds the demo workspace: a real TF network and its golden step (a training script using tf_config),
a simulated NPU run with a planted fault. Imports capture/, tf_config, formats/ and the package root;
imported by the shell's demo commands.
"""
