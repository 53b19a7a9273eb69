"""The analysis sections: mitigation effects, preference leakage, the leakage audit, papers 004 and 002.

Records come from real runs saved under tests/fixtures/report/ (see its README) and from the
simulated study of conftest; nothing here runs a model.
"""

from __future__ import annotations

import base64
import copy
import json
from pathlib import Path

import pytest

from nepotism.report import _format, full, section_plots, sections
from nepotism.report.card import judge_cards
from nepotism.report.full import build_report, write_report
from nepotism.analyses.verdicts import judge_verdicts
from nepotism.errors import InputError
from nepotism.report.inputs import is_results_file, load_results

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "report"


def _png_ok(plot):
    assert base64.b64decode(plot["png"])[:8] == b"\x89PNG\r\n\x1a\n"
    assert plot["alt"] and plot["caption"] and plot["title"]


@pytest.fixture(scope="module")
def mitigation():
    return load_results(FIXTURES / "mitigations.json")


@pytest.fixture(scope="module")
def leakage_run():
    return load_results(FIXTURES / "leakage_run.json")


@pytest.fixture(scope="module")
def leakage_audit():
    return load_results(FIXTURES / "leakage_audit.json")


def test_all_exported():
    for module in (_format, sections, section_plots):
        assert module.__all__
        for name in module.__all__:
            assert hasattr(module, name), (module.__name__, name)


# ------------------------------------------------------------------------------------ inputs
def test_loads_every_command_s_results_document(tmp_path, mitigation, leakage_run, leakage_audit):
    """Every command's output is the one results document; an older shape is refused naming the file
    and the command that writes the document (nothing is guessed)."""
    records, summary, _ = mitigation  # `nepotism mitigate --json`
    assert {r["metric"] for r in records} == {"mitigation-effect"}
    assert summary["perturbations"]["synonyms-model"]["perturbed"] == 0
    records, summary, _ = leakage_run  # `nepotism leakage run`'s results.json: the run's facts in the summary
    assert "preference-leakage-score" in {r["metric"] for r in records} and summary["run_id"]
    records, summary, _ = leakage_audit  # `nepotism leakage audit --json`
    assert {r["metric"] for r in records} == {"leaderboard-leakage-bonus", "leaderboard-rank"}
    assert [a["judge"] for a in summary["audits"]] == ["gpt4_0314", "gpt4_1106_preview"]
    old = {
        "mitigations.jsonl": "\n".join(json.dumps(r) for r in mitigation[0]) + "\n",  # an older `mitigate --out`
        "list.json": json.dumps(mitigation[0]),  # an older `metrics --json`
        "records.json": json.dumps({"summary": {}, "records": mitigation[0]}),
    }  # an older `mitigate --json`
    for name, text in old.items():
        (tmp_path / name).write_text(text)
        with pytest.raises(InputError) as err:
            load_results(tmp_path / name)
        assert err.value.path == str(tmp_path / name) and "nepotism mitigate EXPERIMENT --json" in err.value.message
    assert not is_results_file(tmp_path / "mitigations.jsonl")
    other = tmp_path / "judgments.jsonl"
    other.write_text(json.dumps({"instance_id": "1", "judge": "j"}) + "\n")
    assert not is_results_file(other)  # a judgment table is audited, not read as results


# ------------------------------------------------------------------------------------ mitigations
def test_mitigation_tables_keep_every_record_and_say_why_undefined(mitigation):
    records, summary, _ = mitigation
    tables = sections.mitigation_tables(records, summary)
    assert len(tables["effects"]) == len(records)
    rows = {(e["condition"], e["judge"], e["scope"], e["base_metric"]): e for e in tables["effects"]}
    wordnet = rows[("synonyms-wordnet", "qwen2.5-coder-0.5b-instruct", "self", "self-preference")]
    assert (wordnet["before"], wordnet["after"]) == ("50.0%", "50.0%")
    assert wordnet["change"].startswith("+0.0 pts (95% CI")
    model = rows[("synonyms-model", "all", "self", "self-preference")]  # no pair could be perturbed
    assert not model["defined"] and model["change"].startswith("n/a (") and "0" not in model["change"].split("(")[0]
    assert model["before"] == "n/a" and model["after"] == "n/a"
    conditions = {c["condition"]: c for c in tables["conditions"]}
    assert conditions["synonyms-model"]["perturbed"] == "0 of 12 pairs"
    assert "stop word" in conditions["synonyms-model"]["failed"] and conditions["synonyms-model"]["defined"] == 0
    assert conditions["synonyms-model"]["undefined"]  # the notes of its undefined results, counted
    assert "votes dropped as related: 30" in conditions["exclude-relatives"]["other"]
    assert "comparisons without jury verdict: 9" in conditions["jury-weighted"]["other"]
    assert {e["base_metric"] for e in tables["main"]} == {"self-preference"}


def test_fig15_ratio_table_beside_the_two_changes(tmp_path, mitigation):
    records, summary, _ = mitigation
    base = next(r for r in records if r["variant"]["scope"] == "self-minus-control")
    judge, condition = base["judge"], base["condition"]
    ratio = {
        **base,
        "metric": "self-third-party-change-ratio",
        "value": 4.0,
        "ci_low": 2.0,
        "ci_high": 9.0,
        "variant": {**base["variant"], "scope": "self-over-control"},
    }
    tables = sections.mitigation_tables(records + [ratio], summary)
    assert sections.mitigation_tables(records, summary)["ratios"] == []
    (row,) = tables["ratios"]
    assert (row["condition"], row["judge"]) == (condition, judge) and row["ratio"] == "4 (95% CI 2 to 9)"
    own = next(
        r
        for r in records
        if (r["condition"], r["judge"], r["variant"]["base_metric"]) == (condition, judge, "self-preference")
        and r["variant"]["scope"] == "self"
    )
    assert row["self_change"] == sections.format_value(own) and row["control_change"] != "not measured"
    paths = write_report(records + [ratio], tmp_path)
    assert "### Self-evaluation against third-party change (paper 003 Fig. 15)" in paths["report.md"].read_text()
    assert 'id="mitigation-ratio-table"' in paths["report.html"].read_text()


def test_mitigation_plots_one_panel_per_base_metric_and_the_control(mitigation):
    records, _, _ = mitigation
    plots = section_plots.mitigation_effects(records)
    ids = [p["id"] for p in plots]
    # rubric-agreement has its own base metric: its own small figure, not an empty row in every panel
    assert ids == ["mitigation-effects", "mitigation-effects-1", "mitigation-control"]
    assert "percentage points" in plots[0]["caption"] and "paired" in plots[0]["caption"]
    for p in plots:
        _png_ok(p)
    assert (
        section_plots.mitigation_effects([r for r in records if r["variant"]["scope"] == "self"])[-1]["id"]
        != "mitigation-control"
    )


def test_undefined_is_drawn_as_na_not_as_zero():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = ["defined", "undefined"]
    cells = {
        ("defined", "j"): {"value": 0.1, "ci_low": 0.05, "ci_high": 0.2},
        ("undefined", "j"): {"value": None, "ci_low": None, "ci_high": None, "note": "no comparison"},
    }
    fig, ax = plt.subplots()
    section_plots._forest(ax, rows, ["j"], cells, colours={"j": "#0072B2"}, scale=100, null=0.0)
    points = [(x, y) for bars in ax.containers for x, y in zip(*bars.lines[0].get_data())]
    assert points == [(10.0, 0.0)]  # one dot, on the defined row; nothing on the undefined one...
    assert [t.get_text() for t in ax.texts] == ["n/a"]  # ...which says n/a instead
    plt.close(fig)


def test_undefined_value_reads_na_with_reason_in_every_file(tmp_path, mitigation):
    records, summary, _ = mitigation
    undefined = copy.deepcopy(
        next(
            r
            for r in records
            if r["value"] is None
            and r["condition"] == "synonyms-model"
            and r["judge"] == "all"
            and r["variant"]["base_metric"] == "self-preference"
        )
    )
    defined = copy.deepcopy(next(r for r in records if r["value"] == 0.0 and r["judge"] == "all"))
    paths = write_report([undefined, defined], tmp_path, summary=summary)
    html = paths["report.html"].read_text()
    row = html[html.index("<td>synonyms-model</td>", html.index('id="mitigation-main"')) :]
    row = row[: row.index("</tr>")]
    cells = row.replace("</td>", "").split("<td")[1:]
    before, after, change = (c.split(">", 1)[1] for c in cells[3:6])
    assert (before, after) == ("n/a", "n/a")
    assert cells[5].startswith(' class="num na">') and change.startswith("n/a (no comparison usable in both")
    assert "12 excluded (no mitigated comparison: 12)" in change  # the reason and the count, never a 0 change
    assert _format.format_value(undefined).startswith(f"n/a ({undefined['note']}")
    md = paths["report.md"].read_text()
    md_row = next(
        line for line in md.splitlines() if line.startswith("| synonyms-model | synonym | all | self | self-preference")
    )
    assert "n/a (" in md_row and "+0.0" not in md_row
    assert _format.format_number(None, "self-preference") == "n/a"
    assert _format.format_number(float("nan"), "win-rate") == "n/a"
    assert _format.format_number(0.0, "mitigation-effect") == "+0.0 pts"


def test_pooled_and_judgeless_records_make_no_card_or_verdict(mitigation, leakage_run):
    records = mitigation[0] + leakage_run[0]
    cards = judge_cards(records)
    assert "all" not in cards["judges"] and "None" not in cards["judges"]
    assert {"qwen2.5-coder-0.5b-instruct", "smollm2-135m-instruct"} <= set(cards["judges"])
    assert all(v.judge not in ("all", "None") for v in judge_verdicts(records))


# ------------------------------------------------------------------------------------ leakage
def test_leakage_tables_pls_per_group_with_na_for_all_tie_variant(leakage_run):
    tables = sections.leakage_tables(leakage_run[0])
    assert {r["group"] for r in tables["pls"]} == {"icl:gemma-3-270m", "sft:smollm2-135m-instruct"}
    excluded = [r for r in tables["pls"] if r["ties"] == "exclude"]
    assert excluded and all(not r["defined"] and r["estimate"].startswith("n/a (no comparison; n=0") for r in excluded)
    assert all("tie: 48" in r["excluded"] for r in excluded)
    assert all(r["estimate"].endswith(")") and "%" in r["estimate"] for r in tables["pls"] if r["defined"])
    assert len(tables["slices"]) == 8 and all(r["slice"].startswith("question_type = ") for r in tables["slices"])
    who = {r["who"] for r in tables["recognition"]}
    assert "classifier (tfidf-logreg)" in who and "qwen2.5-coder-0.5b-instruct" in who
    assert any(r["chance"] == "50.0% (majority class)" for r in tables["recognition"])


def test_leakage_plots(leakage_run):
    plots = section_plots.leakage_plots(leakage_run[0])
    assert [p["id"] for p in plots] == ["leakage-pls", "leakage-recognition"]
    for p in plots:
        _png_ok(p)
    assert section_plots.leakage_plots([]) == []


def test_leakage_ablation_conditions_keep_their_own_rows(leakage_run, monkeypatch):
    """Paper 000 §5.7: PLS under condition no-<feature> beside the default. The plot keyed its rows by
    group only, so an ablation's PLS silently replaced the default's under the group's label, and the
    tables showed two rows per group that nothing told apart."""
    records = leakage_run[0]
    pls = [r for r in records if r["metric"] == "preference-leakage-score"]
    ablated = [dict(copy.deepcopy(r), condition="no-style", value=-0.5) for r in pls]
    rows_seen = []
    real_forest = section_plots._forest
    monkeypatch.setattr(
        section_plots, "_forest", lambda ax, rows, *a, **k: (rows_seen.append(list(rows)), real_forest(ax, rows, *a, **k))
    )
    section_plots.leakage_plots(records + ablated)
    groups = {str(r["variant"]["group"]) for r in pls if "slice" not in r["variant"]}
    assert all(g in rows_seen[0] and f"{g} · no-style" in rows_seen[0] for g in groups)
    tables = sections.leakage_tables(records + ablated)
    assert {r["condition"] for r in tables["pls"]} == {"default", "no-style"}
    md = full._markdown(build_report(records + ablated, summary=leakage_run[1]))
    table = md.split("## Preference leakage")[1]
    assert "| judges | group | condition | students |" in table and " | no-style | " in table


def test_leakage_audit_section_is_not_the_report_leaderboard(leakage_audit):
    records, summary, findings = leakage_audit
    context = build_report(records, summary=summary, findings=findings)
    bonus = context["leakage"]["bonus"]
    assert len(bonus) == 2 and all(not b["defined"] and b["estimate"].startswith("n/a (no judge unrelated") for b in bonus)
    assert [len(a["entries"]) for a in context["leakage"]["audit_ranks"]] == [12, 12]
    assert context["leaderboard"] == [] and not context["shown"]["leaderboard"] and context["shown"]["leakage-audit"]
    assert [p["id"] for p in context["plots"]["leakage_audit"]] == ["leakage-audit-0", "leakage-audit-1"]
    assert context["plots"]["leaderboard"] == []
    assert [a["measure"] for a in context["leakage"]["audit_ranks"]] == [
        "win rate against text_davinci_003",
        "win rate against gpt4_1106_preview",
    ]
    first = context["leakage"]["audit_ranks"][0]["entries"][0]
    assert first["score"] == "97.7%" and first["adjusted_score"] == "97.7%"
    md = full._markdown(context)
    assert "No per-judge verdict in these results: see the sections below." in md
    assert "| entry | relation | win rate against text_davinci_003 | adjusted |" in md


def test_a_pointwise_leakage_audit_shows_its_mean_scores(leakage_audit):
    """A leaderboard of pointwise scores (`leakage audit` on FastChat grades) has no win rate: the
    table shows the mean score under the board's own measure, not a column of n/a."""
    records, summary, findings = leakage_audit
    pointwise = []
    for r in records:
        r = dict(r)
        if r["metric"] == "leaderboard-rank":
            r.pop("win_rate"), r.pop("adjusted_win_rate")
            r["score"], r["adjusted_score"] = 8.125, 8.0
            r["variant"] = {**r["variant"], "baseline": None, "measure": "mean score"}
        pointwise.append(r)
    context = build_report(pointwise, summary=summary, findings=findings)
    assert {a["measure"] for a in context["leakage"]["audit_ranks"]} == {"mean score"}
    assert {(e["score"], e["adjusted_score"]) for a in context["leakage"]["audit_ranks"] for e in a["entries"]} == {("8.12", "8")}
    assert "| entry | relation | mean score | adjusted |" in full._markdown(context)


# ------------------------------------------------------------------------------------ papers 004 / 002
def test_verifiable_table_from_mbpp_metrics_shows_na_with_reason():
    records, _, _ = load_results(FIXTURES / "mbpp_metrics.json")
    table = sections.verifiable_table(records)
    assert [(r["judge"], r["condition"]) for r in table] == [("llama-3.3-70b", "default")]
    cells = table[0]["cells"]
    assert cells["self-preference-ratio"]["defined"]
    for metric in ("legitimate-self-preference-ratio", "harmful-self-preference-propensity", "judge-accuracy"):
        assert not cells[metric]["defined"]
        assert cells[metric]["text"].startswith("n/a (no item in D_diff; n=0; 6 excluded (no verdict: 4")


def _v004(metric, opponents, value, **variant):
    return {
        "metric": metric,
        "judge": "j",
        "condition": "default",
        "scope": "self",
        "value": value,
        "ci_low": value,
        "ci_high": value,
        "n": 10,
        "n_clusters": 10,
        "n_excluded": 0,
        "excluded": {},
        "variant": {"opponents": opponents, **variant},
    }


def test_the_004_panel_counts_every_other_model_as_the_paper_does():
    """Paper 004's Eq. 2-5 count every other model (relatives included): the panel shows the
    opponents=any records and says so; before, it showed the unrelated-only ones."""
    records = [_v004("self-preference-ratio", "unrelated", 0.9), _v004("self-preference-ratio", "any", 0.6)]
    for metric in sections.VERIFIABLE[1:]:
        records += [
            _v004(metric, "unrelated", 0.9, averaging="per-evaluatee"),
            _v004(metric, "any", 0.6, averaging="per-evaluatee"),
            _v004(metric, "unrelated", 0.8, averaging="one evaluatee", evaluatee="u"),
            _v004(metric, "any", 0.5, averaging="one evaluatee", evaluatee="fam"),
        ]
    (row,) = sections.verifiable_table(records)
    assert {m: cell["text"].split(" ")[0] for m, cell in row["cells"].items()} == dict.fromkeys(sections.VERIFIABLE, "60.0%")
    assert [r["evaluatee"] for r in sections.evaluatee_table(records)] == ["fam"]
    md = full._markdown(build_report(records))
    assert sections.VERIFIABLE_NOTE in md and sections.EVALUATEE_NOTE in md and "paper 004's definition" in md


def test_verifiable_conditions_side_by_side(records):
    keep = set(sections.VERIFIABLE)
    verdict = [dict(r, condition="verdict only") for r in copy.deepcopy(records) if r["metric"] in keep]
    cot = [dict(r, condition="reasoning first") for r in copy.deepcopy(records) if r["metric"] in keep]
    table = sections.verifiable_table(verdict + cot)
    assert len(table) == 2 * len({r["judge"] for r in verdict})
    assert {r["condition"] for r in table} == {"verdict only", "reasoning first"}
    assert all(cell["defined"] for row in table for cell in row["cells"].values())
    (plot,) = section_plots.verifiable_metrics(verdict + cot)
    _png_ok(plot)
    assert "side by side" in plot["caption"]


def test_rubric_table_hspp_mipa_mra_per_judge(records):
    table = sections.rubric_table(records)
    assert {r["judge"] for r in table} == {"judge-a", "judge-b", "judge-c"}
    assert list(table[0]["cells"]) == [
        "hspp-ratio self instance",
        "hspp-ratio self rubric",
        "hspp-ratio family instance",
        "hspp-ratio family rubric",
        "hspp-ratio self instance PWC",
        "hspp-ratio family instance PWC",
        "mipa SR",
        "mipa PWC",
        "mra",
    ]
    assert all(row["cells"]["mra"]["defined"] for row in table)
    assert [p["id"] for p in section_plots.rubric_metrics(records)] == ["rubric-hspp", "rubric-agreement"]
    assert sections.rubric_table([r for r in records if r["metric"] == "win-rate"]) == []


def test_rubric_setups_show_side_by_side_not_one_picked(records):
    keep = set(sections.RUBRIC)
    single = [dict(r, variant={**r["variant"], "setup": "single-rubric"}) for r in copy.deepcopy(records) if r["metric"] in keep]
    every = [dict(r, variant={**r["variant"], "setup": "all-rubrics"}) for r in copy.deepcopy(records) if r["metric"] in keep]
    context = full.build_report(single + every)
    conditions = {row["condition"] for row in context["rubric"]}
    assert {c.split(" · ")[-1] for c in conditions} == {"single-rubric", "all-rubrics"}
    assert len(context["rubric"]) == 2 * len({r["judge"] for r in single})


def _small(mitigation, records):
    """Two mitigation conditions and the paper 004 / 002 records: every new section, quickly drawn."""
    keep = set(sections.VERIFIABLE) | set(sections.RUBRIC)
    return [r for r in mitigation[0] if r["condition"] in ("synonyms-wordnet", "cot")] + [
        r for r in records if r["metric"] in keep
    ]


def test_coverage_names_metrics_without_a_section(records, mitigation):
    generic = sections.coverage(records, full._DRAWN)
    assert "overestimation-rate" in generic and "ranking-difference" in generic and "win-rate" not in generic
    assert sections.coverage(mitigation[0], full._DRAWN) == []
    context = build_report(_small(mitigation, records), summary=mitigation[1])
    missing = [s for s, *_ in context["missing"]]
    assert {"heatmaps", "pls", "leakage-audit", "leaderboard"} <= set(missing) and "mitigations" not in missing
    assert context["shown"]["mitigations"] and context["shown"]["verifiable"] and context["shown"]["rubric"]
    assert context["generic_only"] == []


def test_markdown_has_the_new_sections(tmp_path, mitigation, leakage_run, leakage_audit, records):
    everything = _small(mitigation, records) + leakage_run[0] + leakage_audit[0]
    paths = write_report(everything, tmp_path, summary=mitigation[1])
    md = paths["report.md"].read_text()
    for heading in (
        "## Verifiable tasks (paper 004)",
        "## Rubric metrics (paper 002)",
        "## Mitigation effects",
        "## Preference leakage",
        "## Leaderboard leakage audit",
    ):
        assert heading in md
    html = paths["report.html"].read_text()
    for section in ("verifiable", "rubric", "pls", "leakage-audit", "mitigations"):
        assert f'id="{section}"' in html and f'href="#{section}"' in html


# ------------------------------------------------------------------------------------ human labels
def test_annotate_agreement_becomes_records_and_a_section():
    records, summary, _ = load_results(FIXTURES / "agreement.json")
    assert {r["metric"] for r in records} == set(sections.HUMANS)
    assert {r["judge"] for r in records if r["metric"].startswith("judge-")} == {"judge-j", "judge-k"}
    tables = sections.human_tables(records, summary)
    whos = [r["who"] for r in tables["rows"]]
    assert whos[:3] == ["all annotators"] * 3 and "ann1 vs ann2" in whos and "judge judge-j" in whos
    judge_j = next(r for r in tables["rows"] if r["who"] == "judge judge-j" and r["statistic"].startswith("agreement"))
    assert judge_j["estimate"].startswith("85.7% (95% CI") and judge_j["excluded"] == "1 (no human majority: 1)"
    assert [a["annotator"] for a in tables["annotators"]] == ["ann1", "ann2", "ann3"]
    (plot,) = section_plots.human_agreement(records)
    _png_ok(plot)
    assert set(judge_cards(records)["judges"]) == {"judge-j", "judge-k"}
    assert judge_verdicts(records) == []
