"""Tests of nepotism.grading.jury: majority votes, ties, unparsed verdicts, family exclusion."""

from __future__ import annotations

import pandas as pd

import nepotism.grading.jury as jury
from nepotism.grading.jury import pairwise_jury, rubric_jury

FAMILY = {"gpt-4o": "openai", "gpt-4o-mini": "openai", "claude-3": "anthropic", "llama-3": "meta", "qwen": "alibaba"}


def _same_family(judge, model):
    """A test predicate: the judge and the model share a family in FAMILY (tags ignored)."""
    return FAMILY.get(judge.split("@")[0]) is not None and FAMILY.get(judge.split("@")[0]) == FAMILY.get(model.split("@")[0])


def _pairwise(rows):
    return pd.DataFrame(rows, columns=["instance_id", "judge", "model_a", "model_b", "verdict"])


def _rubric(rows):
    return pd.DataFrame(rows, columns=["instance_id", "judge", "model", "rubric_id", "met"])


def test_all_is_exported():
    assert set(jury.__all__) == {"JuryResult", "pairwise_jury", "registry_related", "rubric_jury"}


def test_pairwise_majority_merges_orders_and_counts():
    frame = _pairwise(
        [
            ("q1", "claude-3", "gpt-4o", "llama-3", "A"),
            ("q1", "claude-3", "llama-3", "gpt-4o", "B"),  # same pair swapped: same judge, same choice
            ("q1", "qwen", "gpt-4o", "llama-3", "A"),
            ("q1", "gpt-4o", "gpt-4o", "llama-3", "B"),
            ("q2", "claude-3", "gpt-4o", "llama-3", "A"),
            ("q2", "qwen", "gpt-4o", "llama-3", "B"),  # 1-1: vote tie
            ("q3", "claude-3", "gpt-4o", "llama-3", "tie"),
            ("q3", "qwen", "gpt-4o", "llama-3", "tie"),
            ("q3", "gpt-4o", "gpt-4o", "llama-3", "A"),  # tie wins the majority
            ("q4", "claude-3", "gpt-4o", "llama-3", None),  # unparsed only: no vote
        ]
    )
    result = pairwise_jury(frame)
    rows = result.frame.set_index("instance_id")
    assert rows.loc["q1", "winner"] == "gpt-4o" and rows.loc["q1", "votes"] == 3
    assert (rows.loc["q2", "winner"], rows.loc["q2", "decision"]) == ("tie", "vote-tie")
    assert (rows.loc["q3", "winner"], rows.loc["q3", "decision"]) == ("tie", "majority-tie")
    assert "q4" not in rows.index
    assert result.counts == {"majority": 1, "vote-tie": 1, "majority-tie": 1, "no_votes": 1, "unparsed_verdicts": 1}


def test_judge_split_across_orders_votes_tie():
    frame = _pairwise(
        [
            ("q1", "claude-3", "gpt-4o", "llama-3", "A"),
            ("q1", "claude-3", "llama-3", "gpt-4o", "A"),  # position bias: prefers whichever is first
        ]
    )
    assert pairwise_jury(frame).frame.loc[0, "winner"] == "tie"


def test_family_exclusion_changes_the_verdict():
    frame = _pairwise(
        [
            ("q1", "gpt-4o", "gpt-4o@s1", "llama-3", "A"),
            ("q1", "gpt-4o-mini", "gpt-4o@s1", "llama-3", "A"),
            ("q1", "claude-3", "gpt-4o@s1", "llama-3", "B"),
        ]
    )
    assert pairwise_jury(frame).frame.loc[0, "winner"] == "gpt-4o@s1"
    result = pairwise_jury(frame, exclude_related=True, related=_same_family)
    assert result.frame.loc[0, "winner"] == "llama-3"
    assert result.counts["excluded_verdicts"] == 2


def test_rubric_majority_and_tie_is_none():
    frame = _rubric(
        [
            ("q1", "claude-3", "gpt-4o", "r1", True),
            ("q1", "qwen", "gpt-4o", "r1", True),
            ("q1", "llama-3", "gpt-4o", "r1", False),
            ("q1", "claude-3", "gpt-4o", "r2", True),
            ("q1", "qwen", "gpt-4o", "r2", False),
            ("q1", "qwen", "gpt-4o", "r3", None),
        ]
    )
    result = rubric_jury(frame)
    met = result.frame.set_index("rubric_id")["met"]
    assert met["r1"] is True or met["r1"] == True  # noqa: E712 - object column
    assert met["r2"] is None
    assert "r3" not in met.index
    assert list(result.decided["rubric_id"]) == ["r1"]
    assert result.counts == {"majority": 1, "vote-tie": 1, "no_votes": 1, "unparsed_verdicts": 1}
    excluded = rubric_jury(frame, exclude_related=True, related=lambda j, m: {j, m} == {"gpt-4o", "claude-3"})
    assert excluded.frame.set_index("rubric_id").loc["r1", "votes"] == 2


def test_by_default_related_judges_are_told_by_the_registry_scope_rule(tmp_path):
    """The default exclusion is `Registry.scope`: a juror does not vote on itself, its family or its
    students (a real registry file, not a family table)."""
    from nepotism.models import load_registry

    (tmp_path / "r.toml").write_text(
        '[models.judge-a]\nfamily = "A"\n[models.kin-a]\nfamily = "A"\n'
        '[models.pupil]\nfamily = "P"\nteachers = ["judge-a"]\n'
        '[models.other]\nfamily = "O"\n[models.judge-b]\nfamily = "B"\n'
    )
    registry = load_registry([tmp_path / "r.toml"], include_default=False)
    frame = _pairwise(
        [
            ("q1", "judge-a", "judge-a@s1", "other", "A"),
            ("q2", "judge-a", "kin-a", "other", "A"),
            ("q3", "judge-a", "pupil", "other", "A"),
            ("q4", "judge-a", "other", "judge-b", "A"),
            ("q4", "judge-b", "other", "judge-b", "B"),
        ]
    )
    result = pairwise_jury(frame, exclude_related=True, related=jury.registry_related(registry))
    assert result.counts["excluded_verdicts"] == 4  # itself, its family, its student; judge-b on itself
    assert result.frame.set_index("instance_id")["winner"].to_dict() == {"q4": "other"}
