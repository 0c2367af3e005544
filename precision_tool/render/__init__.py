"""Everything that draws: rich renderables, graphviz pictures and the HTML report. Reads analysis/ and
formats/ results, never the shell; only render/ and shell/ print.

console.py, messages.py, progress.py  consoles, one-line errors and warnings, progress
compare/   vc/vcs tables, statistics, cp, the ranks
ops/       what ni shows of an op, its results and its picture
report/    the HTML report (the page's JSON and rows, jinja2, its assets)
answer.py, dumps.py, graphs.py, replay.py, tf.py, infer.py  one area each
"""
