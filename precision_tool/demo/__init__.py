"""Builds the demo workspace: a real TF network, a simulated NPU run with a planted fault."""
