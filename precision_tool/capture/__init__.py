"""The capture side: what training scripts and `train` set on the NPU adapter and TensorFlow to dump,
check overflow, switch fusion passes, profile, and replay one step (docs/capture.md). tf_setup.py is the
TensorFlow set-up tf_config re-exports. Imports the package root and formats/ only (never tf_config,
analysis/ or the shell); imported by tf_config.py, tf_session.py, demo/ and the shell's train and capture
commands (their TensorFlow-free parts).
"""
