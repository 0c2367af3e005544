"""The comparison commands: vc and vcs (compare.py), cp (pair.py), report (report.py), the run
summaries they and ac print (result_summaries.py), and ac's same-step section (same_step.py), `replay --all` and ac's precheck section (replay_all.py). Import
analysis/, render/, backends/ and shell/commands/dumps.py; imported by table.py, demo/ and replay.py.
"""
