"""The REPL and one-shot CLI. Imports formats/analysis; never imported by them."""
