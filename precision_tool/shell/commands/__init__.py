"""One module per family of commands, each exporting COMMANDS (and AC_SECTIONS for `ac`); table.py lists
them. Handlers parse, ask analysis/, return render/'s renderables. compare/ holds vc, vcs, cp and
report; demo/ the demo commands; op_names.py how ni, ls and replay name an op.
"""
