"""Shared fixtures: result records from one simulated study (pairwise + rubric, with references)."""

from __future__ import annotations

import pytest

from nepotism.analyses.suite import SuiteOptions, run_suite
from nepotism.models import load_registry
from nepotism.simulate import SimulationSpec, simulate
from nepotism.metrics import Bootstrap

SPEC = SimulationSpec(
    judges=("judge-a", "judge-b", "judge-c"),
    generators=("judge-a", "judge-a-mini", "judge-b", "judge-c", "student-a", "student-b", "other-1"),
    families={
        "judge-a": "fam-a",
        "judge-a-mini": "fam-a",
        "judge-b": "fam-b",
        "judge-c": "fam-c",
        "other-1": "fam-o1",
        "student-a": "fam-sa",
        "student-b": "fam-sb",
    },
    students={"student-a": "judge-a", "student-b": "judge-b"},
    self_bias=1.0,
    family_bias=0.6,
    student_bias=0.6,
    n_instances=120,
    tie_rate=0.05,
)


def study(tmp_dir, spec=SPEC, seed=0, n_resamples=60):
    sim = simulate(spec, seed=seed)
    path = tmp_dir / "models.toml"
    path.write_text(spec.registry_toml())
    registry = load_registry([path])
    options = SuiteOptions(bootstrap=Bootstrap(n_resamples=n_resamples, seed=0))
    pairwise = run_suite(
        sim.pairwise,
        "pairwise",
        registry,
        options=options,
        references={"preference-ref": sim.preference_ref, "correctness-ref": sim.correctness_ref},
    )
    rubric = run_suite(
        sim.rubric,
        "rubric",
        registry,
        options=options,
        references={"rubric-ref": sim.rubric_ref, "rubric-items": sim.rubric_items},
    )
    return sim, registry, pairwise.records + rubric.records


@pytest.fixture(scope="session")
def simulated(tmp_path_factory):
    """(simulation, registry, records) of `SPEC`."""
    return study(tmp_path_factory.mktemp("registry"))


@pytest.fixture(scope="session")
def records(simulated):
    return simulated[2]
