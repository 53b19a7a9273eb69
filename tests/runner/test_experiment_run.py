"""`RunSummary`: what a run did, as `nepotism run` prints it and decides its exit status."""

from nepotism.runner.experiment_run import RunSummary
from nepotism.runner.progress import RunStats


def test_a_summarys_phases_are_the_phases_the_run_had_in_order():
    generation = RunStats(phase="generate", total=4, failed=1).as_dict()
    judging = RunStats(phase="judge", total=8).as_dict()
    summary = RunSummary("r", "done", 2, generation, judging, {})
    assert summary.phases() == {"generation": generation, "judging": judging}  # no perplexity step
    summary.perplexity = {**RunStats(phase="perplexity", total=3, failed=2).as_dict(), "scores": {"ok": 1}}
    assert list(summary.phases()) == ["generation", "judging", "perplexity"]
    assert sum(p["failed"] for p in summary.phases().values()) == 3  # what the exit status counts
