import sys

try:  # Ctrl-C while Python is still importing ends quietly
    from precision_tool.shell.main import run
except KeyboardInterrupt:
    sys.exit(130)

run()
