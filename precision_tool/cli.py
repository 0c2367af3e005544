"""`python3 precision_tool/cli.py [--data DIR] [COMMAND ARGS]`: run from a checkout without installing."""

import os
import sys

if __package__ in (None, ""):
    # Run as a script: make the checkout importable and stop the package folder from shadowing modules.
    here = os.path.dirname(os.path.abspath(__file__))

    def _shadows(entry: str) -> bool:
        try:
            return os.path.abspath(entry or ".") == here
        except OSError:  # relative to a current folder that was deleted: useless, drop it (main() says why)
            return True

    sys.path[:] = [p for p in sys.path if not _shadows(p)]
    sys.path.insert(0, os.path.dirname(here))

try:  # Ctrl-C while Python is still importing ends quietly, as it does once the shell is up
    from precision_tool.shell.main import run  # noqa: E402
except KeyboardInterrupt:
    sys.exit(130)

if __name__ == "__main__":
    run()
