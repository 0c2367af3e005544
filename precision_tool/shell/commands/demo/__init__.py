"""`demo`: build the demo workspace and run ac on it (demo.py), `demo --fixed` (demo_fixed.py),
`demo --ranks` (demo_ranks.py), and the steps they share (demo_steps.py, also used by the REPL's
first-run hint). Import demo/, analysis/, render/ and shell/commands/compare/.
"""
