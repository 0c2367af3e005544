"""Command modules; `shell/table.py` lists them."""
