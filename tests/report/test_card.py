"""Thresholds (short and full form, experiment files) and the per-judge cards they produce."""

from __future__ import annotations

import pytest

from nepotism.errors import InputError
from nepotism.report import card
from nepotism.report.card import judge_cards, load_thresholds, parse_thresholds


def rec(metric, value, *, judge="j", scope="self", low=None, high=None, **extra):
    return {
        "metric": metric,
        "judge": judge,
        "condition": "c",
        "scope": scope,
        "variant": extra.pop("variant", {}),
        "value": value,
        "ci_low": low,
        "ci_high": high,
        "n": 10,
        "n_clusters": 5,
        **extra,
    }


def test_all_exported():
    for name in card.__all__:
        assert hasattr(card, name)


def test_short_form_per_scope_and_for_every_scope():
    t = parse_thresholds({"max_self_preference_ratio": {"self": 0.6, "family": 0.55}, "min_judge_accuracy": 0.7})
    assert len(t.rules) == 3
    records = [rec("self-preference-ratio", 0.7), rec("self-preference-ratio", 0.5, scope="family"), rec("judge-accuracy", 0.9)]
    cards = judge_cards(records, t)
    statuses = [(c["metric"], c["scope"], c["status"]) for c in cards["judges"]["j"]["checks"]]
    assert statuses == [
        ("self-preference-ratio", "self", "fail"),
        ("self-preference-ratio", "family", "pass"),
        ("judge-accuracy", "self", "pass"),
    ]
    assert cards["status"] == "fail" and cards["judges"]["j"]["status"] == "fail"


def test_full_form_variant_subset_and_statistic():
    t = parse_thresholds(
        {
            "card": {
                "rule": [
                    {
                        "metric": "paired-win-rate-gap",
                        "scope": "self",
                        "max": 0.05,
                        "statistic": "ci_low",
                        "variant": {"texts": "identical"},
                    }
                ]
            }
        }
    )
    inside = rec("paired-win-rate-gap", 0.08, low=0.01, high=0.15, variant={"texts": "identical", "ties": "half"})
    above = rec("paired-win-rate-gap", 0.2, low=0.1, high=0.3, variant={"texts": "identical"}, judge="k")
    other = rec("paired-win-rate-gap", 0.9, low=0.8, high=1.0, variant={"texts": "same models, other samples"}, judge="k")
    cards = judge_cards([inside, above, other], t)
    assert cards["judges"]["j"]["status"] == "pass"  # the interval reaches below 0.05
    assert [c["status"] for c in cards["judges"]["k"]["checks"]] == ["fail"]  # `other` does not match the variant


def test_undefined_is_not_measured_and_an_unmatched_rule_fails_unless_ignored():
    t = parse_thresholds({"max_matched_bias": 0.05})
    cards = judge_cards([rec("matched-bias", None), rec("self-preference-ratio", 0.9)], t)
    assert [c["status"] for c in cards["judges"]["j"]["checks"]] == ["not measured"]
    assert cards["unmatched_rules"] and cards["status"] == "fail"
    t = parse_thresholds({"max_matched_bias": 0.05, "on_missing": "ignore"})
    assert judge_cards([rec("self-preference-ratio", 0.9)], t)["status"] == "pass"


def test_no_thresholds():
    cards = judge_cards([rec("self-preference-ratio", 0.9)])
    assert cards["status"] == "no thresholds" and cards["judges"]["j"]["measured"][0]["metric"] == "self-preference-ratio"


def test_leakage_record_belongs_to_both_judges():
    t = parse_thresholds({"max_preference_leakage_score": 0.1})
    cards = judge_cards([rec("preference-leakage-score", 0.3, judge="a & b", scope="student")], t)
    assert set(cards["judges"]) == {"a", "b"} and all(c["status"] == "fail" for c in cards["judges"].values())


@pytest.mark.parametrize(
    "table",
    [
        {"max_self_preference_rato": 0.5},  # typo in a metric id
        {"maximum_self_preference_ratio": 0.5},  # not max_/min_
        {"max_self_preference_ratio": "high"},  # not a number
        {"statistic": "median"},
        {"on_missing": "maybe"},
        {"rule": [{"metric": "matched-bias"}]},  # no bound
        {"rule": [{"max": 1}]},  # no metric
        {"rule": [{"metric": "matched-bias", "max": 1, "colour": "red"}]},
    ],
)
def test_bad_thresholds_are_input_errors(table):
    with pytest.raises(InputError):
        parse_thresholds(table)


def test_experiment_file_card_table(tmp_path):
    path = tmp_path / "experiment.toml"
    path.write_text(
        '[experiment]\nname = "x"\n\n[card]\nmax_matched_bias = 0.05\n\n[[card.rule]]\n'
        'metric = "self-preference-ratio"\nscope = "self"\nmax = 0.6\n'
    )
    t = load_thresholds(path)
    assert [r.source for r in t.rules] == ["max_matched_bias", "rule[0]"] and t.path == str(path)
    bad = tmp_path / "bad.toml"
    bad.write_text("max_matched_bias = = 1\n")
    with pytest.raises(InputError, match="not valid TOML"):
        load_thresholds(bad)


@pytest.mark.parametrize(
    "table, field",
    [
        ({"max_self_preference_ratio": 60}, "max_self_preference_ratio"),  # a percentage given for a fraction
        ({"rule": [{"metric": "demographic-parity-bias", "max": -2}]}, "rule[0].max"),
        ({"max_win_rate": float("nan")}, "max_win_rate"),
        ({"rule": [{"metric": "judge-accuracy", "min": 70}]}, "rule[0].min"),
    ],
)
def test_a_threshold_outside_what_the_metric_can_be_is_refused(table, field):
    from nepotism.errors import InputError

    with pytest.raises(InputError) as err:
        parse_thresholds(table, path="t.toml")
    assert err.value.field == field and err.value.path == "t.toml"
    assert "fractions" in str(err.value) or "finite" in str(err.value)
    # unbounded metrics take any finite number; the matched bias of 1–10 scores reaches ±18
    assert parse_thresholds({"max_ranking_difference": 5}).rules[0].max == 5
    assert parse_thresholds({"max_matched_bias": {"self": 2}}).rules[0].max == 2
