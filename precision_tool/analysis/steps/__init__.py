"""Several training steps compared step by step (docs/steps.md): golden tensors per step (tf_dump --step all),
one comparison run per NPU dump iteration (vc --step all), and which step diverges first.

May import analysis.results, analysis.compare and analysis.golden_extract; read by analysis.report and the
shell's compare commands."""
