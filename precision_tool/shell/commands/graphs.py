"""Commands of this area arrive with their issue; see shell/table.py."""

COMMANDS: list = []
