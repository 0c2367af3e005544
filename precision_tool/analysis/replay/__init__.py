"""One op run again on CPU from its dumped inputs, and the verdict: the plan (replay_plan.py), the
child that runs it (replay.py), what its outputs say (replay_verdict.py) and the fix it writes
(replay_fixes.py). Imports graphs/, results/, dumps/, ops/ and formats/; imported by report/, render/ and
shell/.
"""
