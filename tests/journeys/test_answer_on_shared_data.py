"""The answer first, on every public dataset an importer reads (issue 36, "Done when").

For each dataset of ../shared/data that holds a judge's verdicts, a user's chain through the installed
executable — ``nepotism import`` → ``nepotism metrics`` → ``nepotism report`` — must lead with the
answer: the first lines of ``metrics`` and the Summary of ``report.md`` and ``report.html`` name, for
each judge and condition, every relation with its value, interval and prompts from the strongest rung
of evidence the records hold, and say for every relation without a number why. No Summary line
carries an interval of zero width or a number from fewer prompts than the rule (``--min-prompts``,
default 30).

The strongest rung is checked against the records themselves by the rule docs/answer.md states (a
record is usable when it has a value, an interval of non-zero width and at least the rule's prompts;
rungs in the order vs unrelated judges, vs reference, judge alone), not by asking the ladder again.
``--bootstrap 200``: the number of resamples does not matter to what is checked.
"""

from __future__ import annotations

import html
import json
import re
import subprocess
import sys
from dataclasses import dataclass
from html.parser import HTMLParser
from pathlib import Path

import pytest

from nepotism.analyses.verdicts import summary_rows, verdict_scope
from nepotism.results import Verdict, record_key

NEPOTISM = str(Path(sys.executable).with_name("nepotism"))
DATA = Path(__file__).resolve().parents[2] / ".." / "shared" / "data"
RESAMPLES = "200"


@dataclass(frozen=True)
class Dataset:
    folder: str
    files: str  # a glob under the folder
    imported: tuple[str, ...]  # the import options after the files
    table: str
    references: tuple[str, ...] = ()


DATASETS = {
    "alpaca_eval": Dataset("alpaca_eval", "annotations_compact.csv.gz", ("--format", "alpaca-eval-compact"), "judgments.parquet"),
    "arena_bench_v1": Dataset("arena_bench_v1", "model_judgment/*.jsonl.gz", ("--format", "fastchat-single"), "grades.csv"),
    "routellm": Dataset(
        "routellm", "judgements.jsonl.gz", ("--format", "fastchat-single", "--benchmark", "mt_bench"), "grades.csv"
    ),
    "judgebench-llm-judges": Dataset(
        "judgebench", "*judge_name=arena_hard*", ("--format", "judgebench"), "judgments.csv", ("labels.csv",)
    ),
    "judgebench-reward-models": Dataset(
        "judgebench", "*judge_name=reward_model*", ("--format", "judgebench"), "scores.csv", ("correct.csv",)
    ),
    "mbpp_selfpref-reply": Dataset(
        "mbpp_selfpref",
        "*_eval.jsonl",
        ("--format", "mbpp-selfpref", "--verdicts", "reply"),
        "judgments.csv",
        ("correctness.csv",),
    ),
    "mbpp_selfpref-probabilities": Dataset(
        "mbpp_selfpref",
        "*_eval.jsonl",
        ("--format", "mbpp-selfpref", "--verdicts", "probabilities"),
        "judgments.csv",
        ("correctness.csv",),
    ),
}

#: The rungs in the ladder's order and the metrics each reads (docs/answer.md).
RUNGS = (
    ("matched", ("matched-bias", "paired-win-rate-gap")),
    ("reference", ("equal-opportunity-bias", "hspp-ratio")),
    ("alone", ("self-preference-ratio",)),
)


def nep(*args: str, cwd: Path, expect: int = 0) -> subprocess.CompletedProcess:
    done = subprocess.run([NEPOTISM, *args], cwd=cwd, capture_output=True, text=True, timeout=900)
    assert done.returncode == expect, f"{args} -> {done.returncode}\n{done.stdout[-2000:]}\n{done.stderr[-2000:]}"
    assert "Traceback" not in done.stderr
    return done


# ----------------------------------------------------------------------------------- the rule, on records
def _plain(r: dict) -> bool:
    v = r.get("variant") or {}
    return not ({"slice", "agreement_at_least", "check"} & set(v))


def _candidates(records: list[dict], metric: str, judge: str, condition: str, scope: str, unrelated: list[str]) -> list[dict]:
    """The records of ``metric`` the ladder may read for one verdict, by docs/answer.md: matched-bias on
    all comparisons; a paired win-rate gap on identical texts whose other judge is unrelated to both
    candidates, against an opponent unrelated to the judge; equal-opportunity bias on the verdicts (not the
    probability share), and it and the self-preference ratio against unrelated opponents where such a
    record has a value; the HSPP ratio at the instance level with paper 002's comparison set."""
    rows = [
        r
        for r in records
        if r["metric"] == metric
        and r.get("judge") == judge
        and str(r.get("condition") or "default") == condition
        and verdict_scope(r.get("scope")) == scope
        and _plain(r)
    ]
    v = lambda r: r.get("variant") or {}  # noqa: E731
    if metric == "matched-bias":
        rows = [r for r in rows if v(r).get("subset", "all") == "all"]
    elif metric == "paired-win-rate-gap":
        rows = [
            r
            for r in rows
            if v(r).get("texts") == "identical"
            and v(r).get("other_judge_relation") == "unrelated"
            and v(r).get("other_judge_relation_to_opponent") == "unrelated"
            and str(r["pair"][1]).split("@", 1)[0] in unrelated
        ]
    elif metric == "equal-opportunity-bias":
        rows = [r for r in rows if "preference" not in v(r)]
    elif metric == "hspp-ratio":
        rows = [
            r
            for r in rows
            if v(r).get("level", "instance") == "instance"
            and v(r).get("denominator", "not-family") == "not-family"
            and v(r).get("family_set", "exclude judge") == "exclude judge"
        ]
    if metric in ("equal-opportunity-bias", "self-preference-ratio"):
        against_unrelated = [r for r in rows if v(r).get("opponents") == "unrelated" and r.get("value") is not None]
        rows = against_unrelated or rows
    return rows


def _usable(r: dict, min_prompts: int) -> bool:
    prompts = min(r.get("n_clusters") or 0, r.get("n") or r.get("n_clusters") or 0)
    return (
        r.get("value") is not None
        and r.get("ci_low") is not None
        and r.get("ci_high") is not None
        and r["ci_low"] < r["ci_high"]
        and prompts >= min_prompts
    )


def _strongest(records: list[dict], verdict: Verdict, unrelated: list[str], min_prompts: int) -> str | None:
    for rung, metrics in RUNGS:
        found = [r for m in metrics for r in _candidates(records, m, verdict.judge, verdict.condition, verdict.scope, unrelated)]
        if any(_usable(r, min_prompts) for r in found):
            return rung
    return None


# ----------------------------------------------------------------------------------- reading the outputs
def _metrics_rows(stdout: str, several: bool, count: int) -> list[list[str]]:
    """The verdict table at the top of ``metrics``' output (piped: one line a row, columns two spaces apart)."""
    lines = stdout.splitlines()
    assert "how much each judge favours its relatives" in lines[0], lines[:3]
    header = re.split(r"\s{2,}", lines[1].strip())
    assert header == ["judge"] + (["condition"] if several else []) + [
        "relation",
        "verdict",
        "value",
        "95% CI",
        "prompts",
        "evidence",
    ]
    return [re.split(r"\s{2,}", line.strip()) for line in lines[2 : 2 + count]]


def _markdown_summary(text: str) -> tuple[list[list[str]], str]:
    """The Summary's table rows (cells unescaped) and its whole text, from report.md."""
    headings = re.findall(r"^## .*$", text, flags=re.M)
    assert headings[0] == "## Summary: how much each judge favours its relatives", headings[:2]
    section = text.split(headings[0], 1)[1].split("\n## ", 1)[0]
    rows = []
    for line in section.splitlines():
        if line.startswith("| ") and not line.startswith("| judge |"):
            cells = [c.strip() for c in re.split(r"(?<!\\)\|", line)[1:-1]]
            rows.append([html.unescape(re.sub(r"\\(.)", r"\1", c)) for c in cells])
    return rows, section


class _SummaryTable(HTMLParser):
    """The cells of each ``tr.verdict`` row of the Summary, and the Summary section's text."""

    def __init__(self) -> None:
        super().__init__()
        self.rows: list[list[str]] = []
        self.text: list[str] = []
        self._row = self._cell = None
        self._in_summary = self._done = False

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if tag == "section" and attrs.get("id") == "summary":
            self._in_summary = True
        if not self._in_summary:
            return
        if tag == "tr" and "verdict" in (attrs.get("class") or "").split():
            self._row = []
        elif tag == "td" and self._row is not None:
            self._cell = []

    def handle_endtag(self, tag):
        if not self._in_summary:
            return
        if tag == "td" and self._cell is not None:
            self._row.append(" ".join("".join(self._cell).split()))
            self._cell = None
        elif tag == "tr" and self._row is not None:
            self.rows.append(self._row)
            self._row = None
        elif tag == "section":
            self._in_summary, self._done = False, True

    def handle_data(self, data):
        if self._in_summary:
            self.text.append(data)
            if self._cell is not None:
                self._cell.append(data)


def _no_weak_numbers(text: str, min_prompts: int, where: str) -> None:
    """No interval of zero width, no number said to rest on fewer prompts than the rule."""
    for low, high in re.findall(r"CI (\S+?) to (\S+?)[;)]", text):
        assert low != high, f"{where}: an interval of zero width ({low} to {high})"
    for prompts in re.findall(r"over ([\d,]+) prompts", text):
        assert int(prompts.replace(",", "")) >= min_prompts, f"{where}: a number over {prompts} prompts"


# ----------------------------------------------------------------------------------- the journey
@pytest.mark.parametrize("name", sorted(DATASETS))
def test_the_summary_leads_with_each_judges_answer(name, tmp_path):
    data = DATASETS[name]
    if not (DATA / data.folder).exists():
        pytest.skip(f"../shared/data/{data.folder} is absent")
    files = sorted(str(p) for p in (DATA / data.folder).glob(data.files))
    assert files, data.files
    outs = ["--out", data.table] + [x for ref in data.references for x in ("--reference-out", ref)]
    nep("import", *files, *data.imported, *outs, cwd=tmp_path)
    refs = [x for ref in data.references for x in ("--reference", ref)]
    shown = nep("metrics", data.table, *refs, "--bootstrap", RESAMPLES, cwd=tmp_path).stdout
    nep("report", data.table, *refs, "--bootstrap", RESAMPLES, "--out", "report", cwd=tmp_path)
    document = json.loads((tmp_path / "report" / "results.json").read_text())
    records, summary = document["results"], document["summary"]
    min_prompts = summary["min_prompts"]
    assert min_prompts == 30
    verdicts = [Verdict.from_dict(v) for v in document["verdicts"]]
    keys = {record_key(r): r for r in records}

    # every judge and condition the tables hold has a verdict for every relation
    census = {(e["judge"], e["condition"]): e for e in summary["relations"]}
    assert census and {(v.judge, v.condition) for v in verdicts} == set(census)
    for judge, condition in census:
        assert sorted(v.scope for v in verdicts if (v.judge, v.condition) == (judge, condition)) == sorted(
            ("self", "family", "student", "family-student")
        )

    for v in verdicts:
        entry = census[(v.judge, v.condition)]
        generators = entry["generators"]
        expected = _strongest(records, v, generators.get("unrelated", []), min_prompts)
        assert v.rung == expected, (v.judge, v.condition, v.scope, v.rung, expected, v.sentence)
        if v.status == "measured":
            record = keys[v.evidence[0]]  # the number is the record's, unchanged
            assert (record["value"], record["ci_low"], record["ci_high"]) == (v.value, v.ci_low, v.ci_high)
            assert v.ci_low < v.ci_high and min(v.n_clusters, v.n or v.n_clusters) >= min_prompts
        else:
            assert v.value is None and v.needs and " — " in v.sentence  # why, and what data would measure it
            if not generators.get(v.scope):  # no such answer among those it judged: never a number
                assert v.status == "not-measurable"

    rows = summary_rows(verdicts)
    several = len({r["condition"] for r in rows}) > 1
    for r in rows:  # what every Summary shows, read off the verdicts
        if r["status"] == "measured":
            assert "—" not in (r["value"], r["ci"], r["prompts"]) and int(r["prompts"].replace(",", "")) >= min_prompts
            low, high = r["ci"].split(" to ")
            assert low != high, r
        else:
            assert r["value"] == r["ci"] == r["prompts"] == "—" and r["evidence"] not in ("", "—")

    # `metrics`: the verdict table is its first lines, then the sentences
    table = _metrics_rows(shown, several, len(rows))
    assert table == [
        [r["judge"]]
        + ([r["condition"]] if several else [])
        + [r["relation"], r["verdict"], r["value"], r["ci"], r["prompts"], r["evidence"]]
        for r in rows
    ]
    said = [v.sentence for v in verdicts if v.status != "not-measurable"]
    head = shown.split("result records", 1)[0]
    for sentence in said:
        assert f"  - {sentence}\n" in head
    _no_weak_numbers(head, min_prompts, "metrics")

    # report.md: the Summary is the first section, the same rows and sentences
    md_rows, md_text = _markdown_summary((tmp_path / "report" / "report.md").read_text(encoding="utf-8"))
    assert md_rows == [
        [r["judge"], r["condition"], r["relation"], r["verdict"], r["value"], r["ci"], r["prompts"], r["evidence"]] for r in rows
    ]
    plain_md = html.unescape(re.sub(r"\\(.)", r"\1", md_text))
    for sentence in said:
        assert f"- {sentence}" in plain_md
    _no_weak_numbers(plain_md, min_prompts, "report.md")

    # report.html: the Summary section comes first, the same rows and sentences
    page = (tmp_path / "report" / "report.html").read_text(encoding="utf-8")
    assert page.index('<section id="summary"') < min(page.index(f'id="{s}"') for s in ("cards", "results"))
    parser = _SummaryTable()
    parser.feed(page)
    assert len(parser.rows) == len(rows)
    for cells, r in zip(parser.rows, rows, strict=True):
        assert cells[0].split(" (")[0] == r["judge"] and cells[1:] == [
            r["condition"],
            r["relation"],
            r["verdict"],
            r["value"],
            r["ci"],
            r["prompts"],
            r["evidence"],
        ]
    text = " ".join("".join(parser.text).split())
    for sentence in said:
        assert " ".join(sentence.split()) in text
    _no_weak_numbers(text, min_prompts, "report.html")


def test_a_dataset_of_references_only_says_so(tmp_path):
    """LLMBar (read by the reward-pairs importer) holds gold labels but no judge's verdicts: `metrics` says
    there is no judgment table, exit 2, nothing written."""
    if not (DATA / "llmbar").exists():
        pytest.skip("../shared/data/llmbar is absent")
    files = sorted(str(p) for p in (DATA / "llmbar").glob("*.json"))
    nep("import", *files, "--format", "reward-pairs", "--out", "pairs.csv", "--reference-out", "labels.csv", cwd=tmp_path)
    done = nep("metrics", "pairs.csv", "--reference", "labels.csv", cwd=tmp_path, expect=2)
    assert "no judgment table" in done.stderr and not done.stdout
