import sys

from precision_tool.shell.main import main

sys.exit(main())
