"""The REPL and the one-shot CLI: one command table (table.py → commands/) used by the REPL, the CLI,
help and completion. May import everything below it (analysis/, render/, capture/, demo/, backends/);
nothing imports it but cli.py and __main__.py.
"""
