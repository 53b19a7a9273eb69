"""Shared fixtures: the report tests' simulated study (`tests.report.conftest.study`), for the
leaderboard records that `nepotism.analyses.derived` computes."""

from __future__ import annotations

import pytest

from tests.report.conftest import study


@pytest.fixture(scope="session")
def simulated(tmp_path_factory):
    """(simulation, registry, records) of the report tests' `SPEC`."""
    return study(tmp_path_factory.mktemp("registry"))
