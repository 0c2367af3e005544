"""One msquickcmp output folder per test run (building it runs `vc` once), and one workspace imported from
it by `infer` (links), shared by the tests that only read."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import run_cli
from tests.analysis.infer_import import msquickcmp_output


@pytest.fixture(scope="session")
def msquickcmp_out(pb2, tmp_path_factory) -> msquickcmp_output.MsQuickCmpOutput:  # type: ignore[no-untyped-def]
    return msquickcmp_output.build(pb2, tmp_path_factory.mktemp("msquickcmp"), run_cli)


@pytest.fixture(scope="session")
def imported(msquickcmp_out, tmp_path_factory) -> Path:  # type: ignore[no-untyped-def]
    """A workspace made by `infer <msquickcmp -o folder>` (the default: links)."""
    data = tmp_path_factory.mktemp("imported") / "precision_data"
    result = run_cli("infer", str(msquickcmp_out.output), data=data)
    assert result.status == 0, result.out + result.err
    return data
