"""PrecisionTool: find the operator that makes a network lose accuracy on an Ascend NPU."""

__version__ = "0.1.0"
