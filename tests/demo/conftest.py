"""The demo tests use the session's demo workspace (`demo_run`, `demo_workspace` in tests/conftest.py)."""

from __future__ import annotations

from tests.conftest import ROOT, DemoRun, run_demo_cli  # noqa: F401  (the demo tests import these from here)
