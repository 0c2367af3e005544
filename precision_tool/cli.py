"""`python3 precision_tool/cli.py [--data DIR] [COMMAND ARGS]`: run from a checkout without installing."""

import os
import sys

if __package__ in (None, ""):
    # Run as a script: make the checkout importable and stop the package folder from shadowing modules.
    here = os.path.dirname(os.path.abspath(__file__))
    sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != here]
    sys.path.insert(0, os.path.dirname(here))

from precision_tool.shell.main import main  # noqa: E402

if __name__ == "__main__":
    sys.exit(main())
