#!/usr/bin/env python3
"""Regenerate the gallery of real audits (docs/gallery/PAGE.md) from the data beside the repository.

    .venv/bin/python scripts/gallery.py arena-bench            # rewrite docs/gallery/arena-bench.md
    .venv/bin/python scripts/gallery.py --all                  # every page
    .venv/bin/python scripts/gallery.py arena-bench --check    # exit 1 when the page differs from the data
    .venv/bin/python scripts/gallery.py arena-bench --json     # print the page's headline figures

Each page runs the installed ``nepotism`` executable (the one beside this Python) exactly as the
page shows it, in a temporary folder, on the files of ``../shared/data`` (``--data`` to point
elsewhere), and fills the page's text with the numbers it printed (``--json`` output). Nothing
here computes a metric: the page only words what the commands returned. ``tests/docs/
test_gallery.py`` runs every page and fails when a committed page or a headline figure moves.
"""

from __future__ import annotations

import argparse
import glob
import json
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_DATA = ROOT / ".." / "shared" / "data"
GALLERY = ROOT / "docs" / "gallery"
SHOWN_DATA = "../shared/data"  # how a page names the data folder (relative to the repository)
EXE = Path(sys.executable).with_name("nepotism")


# ---------------------------------------------------------------------------------------------
# Running the commands a page shows


@dataclass(frozen=True)
class Data:
    """A file (or a glob) under the data folder."""

    path: str


@dataclass(frozen=True)
class Step:
    """One ``nepotism`` command; ``save`` names the file its standard output is written to, ``reads`` a
    JSON file it writes that the page uses."""

    args: tuple[Any, ...]
    save: str | None = None
    reads: str | None = None

    def shown(self) -> str:
        words = ["nepotism"] + [f"{SHOWN_DATA}/{a.path}" if isinstance(a, Data) else str(a) for a in self.args]
        return " ".join(words) + (f" > {self.save}" if self.save else "")

    def argv(self, data: Path) -> list[str]:
        out = [str(EXE)]
        for a in self.args:
            if isinstance(a, Data):
                found = sorted(glob.glob(str(data / a.path)))
                if not found:
                    raise SystemExit(f"gallery: {data / a.path} is absent (see {SHOWN_DATA}/PROVENANCE.md)")
                out += found
            else:
                out.append(str(a))
        return out


def run_steps(steps: list[Step], data: Path, work: Path) -> dict[str, Any]:
    """Run each step in ``work``; the JSON each saved output holds, by file name."""
    outputs: dict[str, Any] = {}
    for step in steps:
        done = subprocess.run(step.argv(data), cwd=work, capture_output=True, text=True)
        if done.returncode != 0:
            raise SystemExit(f"gallery: `{step.shown()}` failed ({done.returncode}):\n{done.stderr}")
        if step.save:
            (work / step.save).write_text(done.stdout)
            outputs[step.save] = json.loads(done.stdout)
        if step.reads:
            outputs[step.reads] = json.loads((work / step.reads).read_text())
    return outputs


# ---------------------------------------------------------------------------------------------
# Wording numbers


def pct(x: float | None) -> str:
    return "—" if x is None else f"{100 * x:.1f}%"


def ci_pct(r: dict) -> str:
    """``67.4% (95% CI 65.5–69.4%)``."""
    return f"{pct(r['value'])} (95% CI {100 * r['ci_low']:.1f}–{pct(r['ci_high'])})"


def names(items) -> str:
    """``a, b and c``."""
    items = list(items)
    return ", ".join(items[:-1]) + f" and {items[-1]}" if len(items) > 1 else "".join(items)


def standing(r: dict) -> str:
    """How a ties-count-half share compares with one half, by its interval."""
    if r["ci_low"] > 0.5:
        return "ahead (the interval is above 50%)"
    if r["ci_high"] < 0.5:
        return "behind (the interval is below 50%)"
    return "even (the interval holds 50%)"


def num(x: float, digits: int = 2) -> str:
    return f"{x:.{digits}f}"


def count(n: int) -> str:
    return f"{n:,}"


def rounded(x: float | None, digits: int = 3) -> float | None:
    return None if x is None else round(float(x), digits)


def estimate(r: dict) -> dict[str, Any]:
    """A record's headline figures, rounded for the regression test."""
    return {"value": rounded(r["value"]), "ci_low": rounded(r["ci_low"]), "ci_high": rounded(r["ci_high"]),
            "n": r["n"], "n_excluded": r["n_excluded"]}


def pick(records: list[dict], metric: str, **match: Any) -> dict:
    """The one record of ``metric`` whose fields (and variant items) equal ``match``."""
    def ok(r: dict) -> bool:
        for key, want in match.items():
            if key == "variant":
                if any((r.get("variant") or {}).get(k) != v for k, v in want.items()):
                    return False
            elif r.get(key) != want:
                return False
        return True

    found = [r for r in records if r["metric"] == metric and ok(r)]
    if len(found) != 1:
        raise SystemExit(f"gallery: expected one {metric} record matching {match}, found {len(found)}")
    return found[0]


def commands_block(steps: list[Step]) -> str:
    return "```bash\n" + "\n".join(s.shown() for s in steps) + "\n```"


# ---------------------------------------------------------------------------------------------
# Pages


@dataclass(frozen=True)
class Page:
    name: str
    title: str
    steps: list[Step]
    render: Callable[[dict[str, Any]], tuple[str, dict[str, Any]]]
    needs: tuple[str, ...] = field(default=())


def header(page: Page, summary: str) -> str:
    return (f"# {page.title}\n\n"
            f"{summary}\n\n"
            f"Regenerate this page (seconds to a minute on 2 cores; it runs the commands below in a temporary "
            f"folder and rewrites the page from their `--json` output):\n\n"
            f"```bash\n.venv/bin/python scripts/gallery.py {page.name}\n```\n")


def bootstrap(clusters: str = "questions") -> str:
    return (f"Intervals: 95% percentile intervals from 1,000 bootstrap resamples of the {clusters} "
            "(clusters, not rows), seed 0 — `nepotism`'s defaults, so the commands give these numbers.")


ARENA_STEPS = [
    Step(("import", Data("arena_bench_v1/model_judgment/*.jsonl.gz"), "--format", "fastchat-single",
          "--out", "grades.csv", "--json"), save="import.json"),
    Step(("metrics", "grades.csv", "--json"), save="metrics.json"),
    Step(("leakage", "audit", "grades.csv", "--json"), save="audit.json"),
    Step(("report", "grades.csv", "--out", "report"), reads="report/results.json"),
]


def render_arena(out: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    imported, records, audit = out["import.json"], out["metrics.json"], out["audit.json"][0]
    adjusted = {r["generator"]: r for r in out["report/results.json"]["results"]
                if r["metric"] == "leaderboard-rank" and (r.get("variant") or {}).get("judges") == "unrelated"}
    flagged = [g for g, r in adjusted.items() if r.get("lineage_only")]
    re_estimated = [g for g, r in adjusted.items() if r["value"] is not None]
    counts = imported["counts"]
    rows = next(iter(imported["outputs"].values()))["rows"]
    judge = audit["judge"]
    spr = {s: pick(records, "self-preference-ratio", judge=judge, scope=s, variant={"ties": "not preferred"})
           for s in ("self", "family", "student")}
    half = {s: pick(records, "self-preference-ratio", judge=judge, scope=s, variant={"ties": "half"})
            for s in ("family", "student")}
    excluded = pick(records, "excluded-verdicts", judge=judge)
    board = audit["leaderboard"]
    bonus = audit["bonus"]
    by_relation: dict[str, list[dict]] = {}
    for e in board:
        by_relation.setdefault(e["relation"], []).append(e)
    unrelated = by_relation.get("unrelated", [])
    best_unrelated = max(unrelated, key=lambda e: e["score"])
    gpt4 = [e for e in board if e["relation"] in ("same_series", "self")]
    gpt35 = by_relation.get("same_family", [])
    students = by_relation.get("student", [])

    def overlapping(e: dict) -> list[str]:
        """Unrelated entries whose rank interval overlaps ``e``'s."""
        return [u["entry"] for u in unrelated
                if u["rank_ci_low"] <= e["rank_ci_high"] and e["rank_ci_low"] <= u["rank_ci_high"]]

    gpt35_peers = list(dict.fromkeys(n for e in gpt35 for n in overlapping(e)))
    above = [u["entry"] for u in unrelated if u["score_ci_low"] > max(e["score_ci_high"] for e in students)]
    below = [u["entry"] for u in unrelated if u["score_ci_high"] < min(e["score_ci_low"] for e in students)]
    clear = min(e["score_ci_low"] for e in gpt4) > best_unrelated["score_ci_high"]

    def entry(e: dict) -> str:
        return f"{e['entry']} {num(e['score'])} [{num(e['score_ci_low'])}, {num(e['score_ci_high'])}]"

    table = ["| rank (95% CI) | entry | relation to the judge | mean score [95% CI] | graded | no score | "
             "without related judges |", "|---|---|---|---|---|---|---|"]
    for e in board:
        relation = e["relation"].replace("_", " ") if e["related"] else "unrelated"
        a = adjusted[e["entry"]]
        without = "lineage only" if a.get("lineage_only") else num(a["score"])
        table.append(f"| {e['rank']:g} ({e['rank_ci_low']:g}–{e['rank_ci_high']:g}) | {e['entry']} | {relation} | "
                     f"{num(e['score'])} [{num(e['score_ci_low'])}, {num(e['score_ci_high'])}] | {e['n']} | "
                     f"{e['n_excluded']} | {without} |")
    family, student = spr["family"], spr["student"]
    text = f"""{header(PAGES["arena-bench"], "A GPT-4 judge grading 16 chatbots on a 1–10 scale against GPT-4's own "
    "reference answers: how much higher it scores its own family and the models trained on GPT outputs, and what "
    "these judgments cannot tell apart.")}
## The data

`{SHOWN_DATA}/arena_bench_v1/` (see `{SHOWN_DATA}/PROVENANCE.md`): the early "arena-bench" stage of
lmarena/arena-hard-auto (Apache-2.0; the answers are also subject to their providers' terms). 300
hard user questions; each of 16 models' answers was graded once by a GPT-4 judge (configuration
`judge_model: gpt-4`, `reference: True`, `ref_model: gpt-4`) in FastChat's single-grading format:
the judge sees the question, **GPT-4's own reference answer** and the model's answer, and writes a
rating `[[1]]`…`[[10]]`. The records do not name the judge; the importer takes FastChat's default
`{judge}` and says so (in autumn 2023 the name `gpt-4` meant the snapshot gpt-4-0613).

## The commands

{commands_block(ARENA_STEPS)}

Without `--json` the same commands print a table and plain-word lines. The import read
{count(counts["judgments"])} judgments from 17 files and wrote {count(rows)} rows: one file
(`gpt-4_single.jsonl.gz`) repeats the {count(counts["repeats_dropped"])} GPT-3.5-Turbo judgments of
another exactly and is kept once. {counts["unparsed"]} replies hold no single rating and 1 call failed
(`$ERROR$`): they stay rows without a score (unparsed, failed) and are left out of every number
below, counted ({excluded["n_excluded"]} of {count(excluded["n"])}, {pct(excluded["value"])}).

## Findings

Relatives by the model registry (`nepotism models`): the judge's **family** is GPT-4-0314,
GPT-4-Turbo (gpt-4-1106-preview) and both GPT-3.5-Turbo snapshots; its **students** (trained on GPT
outputs, the registry's lineage) are OpenChat-3.5 and Starling-LM-7B-alpha; Vicuna-33B learned from
ChatGPT conversations (a *family student*, left out of both comparison sets). {len(unrelated)}
generators are unrelated.

* **Family: the judge scores an OpenAI answer above an unrelated model's answer to the same
  question in {ci_pct(family)} of the comparisons** (self-preference ratio for direct assessment:
  share of (family answer, unrelated answer, question) triples where the family answer gets the
  higher score; equal scores count as not preferred; n = {count(family["n"])} triples over
  {family["n_clusters"]} questions, {family["n_excluded"]} left out because one of the two has no
  score). Counting equal scores as half a preference (variant `ties=half`, where 50% means no
  preference): {ci_pct(half["family"])}.
* **Most of the effect comes from GPT-4's own series.** GPT-4-Turbo and GPT-4-0314 get mean scores of
  {" and ".join(num(e["score"]) for e in gpt4)} (ranks 1 and 2, intervals
  {" and ".join(f"[{num(e['score_ci_low'])}, {num(e['score_ci_high'])}]" for e in gpt4)}),
  {"with intervals clear of" if clear else "against"} the best unrelated model's
  ({entry(best_unrelated)}). The two GPT-3.5-Turbo snapshots ({", ".join(entry(e) for e in gpt35)})
  are not told apart from the unrelated {names(gpt35_peers)}: their rank intervals overlap.
* **Students: {ci_pct(student)}**, ties as half {ci_pct(half["student"])} (n = {count(student["n"])}
  triples). OpenChat-3.5 and Starling-7B,
  both trained on GPT outputs, score in the middle ({", ".join(entry(e) for e in students)}):
  below {names(above)}, above {names(below)} (intervals apart). Against this mix of
  unrelated models they come out {standing(half["student"])}; which unrelated models a student meets
  decides such a ratio, so on its own it says little about leakage.
* **Self: not measurable** — {spr["self"]["note"].removeprefix("not measurable: ")}: the judge is
  `{judge}` (gpt-4-0613 when arena-bench ran) and the generators are other snapshots;
  `nepotism metrics` says so on a line of its own.

The leaderboard under this judge (`nepotism leakage audit`; ranks with 95% bootstrap intervals;
mean score over the questions with a score). The last column is the relatedness-adjusted
leaderboard of `nepotism report` (its `results.json`): each generator's score re-estimated from the
judges unrelated to it. With one judge there is nothing to re-estimate the {len(flagged)} relatives
from, so they are flagged from the registry's lineage alone ("lineage only"); the
{len(re_estimated)} unrelated generators keep the judge's score.

{chr(10).join(table)}

## What these judgments cannot say

* **Favouritism or better answers?** Only one judge graded these answers. An OpenAI answer that is
  simply better also wins these comparisons, so the ratios above measure "the judge scores its
  relatives higher", not "higher than they deserve". The leaderboard leakage audit needs a judge
  unrelated to GPT-4 grading the same answers to estimate a bonus; there is none, so it reports
  *{bonus["note"].split(":")[0]}* and flags the {bonus["n_related"]} related entries from the
  registry's lineage alone. Human labels or a second, unrelated judge (e.g. `nepotism run` with a
  Claude or Llama judge on `{SHOWN_DATA}/arena_bench_v1/model_answer/`) would settle it.
* **The reference-answer confound.** The judge grades each answer *against GPT-4's own reference
  answer*. An answer that says what GPT-4 says earns agreement credit, whoever wrote it. GPT-4's
  snapshots and the models trained on GPT outputs write answers closest to that reference, so the
  family and student effects above mix three things these data cannot separate: answer quality,
  self-preference of the judge, and closeness to the reference the judge was told to trust.
* **Self-preference proper** (the judge's own snapshot among the generators) is absent.
* 300 questions, one grade per answer, one prompt: no replicates, no position effect (single
  grading has no order), no per-category breakdown (the records carry no category).

{bootstrap()}
"""
    figures = {
        "rows": rows, "unparsed": counts["unparsed"], "failed": counts["failed"],
        "repeats_dropped": counts["repeats_dropped"], "judge": judge,
        "self": {"value": spr["self"]["value"], "note": spr["self"]["note"]},
        "family": estimate(family), "student": estimate(student),
        "family_ties_half": estimate(half["family"]), "student_ties_half": estimate(half["student"]),
        "leaderboard": [[e["entry"], e["relation"], rounded(e["score"])] for e in board],
        "bonus": bonus["value"], "n_related": bonus["n_related"], "lineage_only": sorted(flagged),
    }
    return text, figures


ROUTELLM_STEPS = [
    Step(("import", Data("routellm/judgements.jsonl.gz"), "--format", "fastchat-single", "--benchmark", "mt_bench",
          "--out", "grades.csv", "--json"), save="import.json"),
    Step(("metrics", "grades.csv", "--slice", "judge_prompt", "--json"), save="metrics.json"),
    Step(("leakage", "audit", "grades.csv", "--judge", "gpt-4", "--json"), save="audit.json"),
]

#: FastChat's judge prompts (fastchat/llm_judge/data/judge_prompts.jsonl): the math ones hold GPT-4's
#: reference answer (MT-Bench's math, reasoning and coding questions), the others do not.
PROMPTS = (("single-v1", "general, turn 1", False), ("single-v1-multi-turn", "general, turn 2", False),
           ("single-math-v1", "with GPT-4's reference answer, turn 1", True),
           ("single-math-v1-multi-turn", "with GPT-4's reference answer, turn 2", True))


def render_routellm(out: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    imported, records, audit = out["import.json"], out["metrics.json"], out["audit.json"][0]
    judge = audit["judge"]
    rows = next(iter(imported["outputs"].values()))["rows"]
    strict = pick(records, "self-preference-ratio", judge=judge, scope="family",
                  variant={"ties": "not preferred", "slice": None})
    half = pick(records, "self-preference-ratio", judge=judge, scope="family", variant={"ties": "half", "slice": None})
    own = pick(records, "self-preference-ratio", judge=judge, scope="self", variant={"slice": None, "averaging": None})
    sliced = {name: {t: pick(records, "self-preference-ratio", judge=judge, scope="family",
                             variant={"ties": t, "slice": {"judge_prompt": name}}) for t in ("not preferred", "half")}
              for name, _, _ in PROMPTS}
    board = {e["entry"]: e for e in audit["leaderboard"]}
    turbo, mixtral = board["gpt-4-1106-preview"], board["mistralai/Mixtral-8x7B-Instruct-v0.1"]
    higher = 1 - 2 * half["value"] + strict["value"]  # P(other higher) = 1 - P(fam) - P(tie)
    table = ["| judge prompt | questions | GPT-4-Turbo higher | ties as half |", "|---|---|---|---|"]
    for name, what, _ in PROMPTS:
        r = sliced[name]
        table.append(f"| `{name}` ({what}) | {r['half']['n_clusters']} | {ci_pct(r['not preferred'])} | "
                     f"{ci_pct(r['half'])} |")
    with_ref = [sliced[n]["half"] for n, _, ref in PROMPTS if ref]
    without = [sliced[n]["half"] for n, _, ref in PROMPTS if not ref]
    apart = min(r["ci_low"] for r in with_ref) > max(r["ci_high"] for r in without)
    text = f"""{header(PAGES["routellm"], "RouteLLM's MT-Bench grades: a GPT-4 judge scoring GPT-4-Turbo and "
    "Mixtral-8x7B on the 80 MT-Bench questions, both turns — the judge's family against one unrelated model, and "
    "how much of the gap sits on the questions graded against GPT-4's reference answers.")}
## The data

`{SHOWN_DATA}/routellm/judgements.jsonl.gz` (lm-sys/RouteLLM, Apache-2.0; see
`{SHOWN_DATA}/PROVENANCE.md`): FastChat single grades (1–10) by `gpt-4` (FastChat's judge name in
2024; the exact snapshot is not recorded) of the answers of gpt-4-1106-preview (GPT-4-Turbo) and
Mixtral-8x7B-Instruct to the 80 MT-Bench questions, first and second turn: {count(rows)} grades.
FastChat grades math, reasoning and coding questions with a prompt that includes GPT-4's reference
answer (`single-math-v1`), the others without (`single-v1`).

## The commands

{commands_block(ROUTELLM_STEPS)}

`--slice judge_prompt` repeats every metric per judge prompt (the importer keeps FastChat's prompt
name in the column `judge_prompt`). Every grade parsed ({imported["counts"].get("unparsed", 0)}
unparsed, {imported["counts"].get("failed", 0)} failed).

## Findings

* **GPT-4-Turbo is scored higher than Mixtral on {ci_pct(strict)} of the {strict["n"]} question-turns,
  equal on {pct(2 * (half["value"] - strict["value"]))} and lower on {pct(higher)}**; counting ties as
  half a preference, {ci_pct(half)} (50% = no preference). Mean scores:
  GPT-4-Turbo {num(turbo["score"])} [{num(turbo["score_ci_low"])}, {num(turbo["score_ci_high"])}],
  Mixtral {num(mixtral["score"])} [{num(mixtral["score_ci_low"])}, {num(mixtral["score_ci_high"])}]
  (`nepotism leakage audit`). The tie and lower shares are the difference of the two ratios, without
  intervals of their own.
* **The gap is larger on the questions graded against GPT-4's reference answer**
  ({"the intervals are apart" if apart else "the intervals overlap: suggestive, not established"}):

{chr(10).join(table)}

* **Self: not measurable** — {own["note"].removeprefix("not measurable: ")}.

## What these judgments cannot say

* **Family favouritism or a better model?** GPT-4-Turbo is widely held to be the stronger model,
  and one judge with two generators cannot tell a deserved gap from a favoured one: there is no
  unrelated judge ({audit["bonus"]["note"].split(":")[0]}) and no human label here.
* **The reference-answer confound, and a category confound.** On the reference prompts the judge
  is told to compare each answer with GPT-4's own answer, which a GPT-4 model is likelier to match;
  but those prompts are also exactly the math, reasoning and coding questions, where Mixtral is
  known to be weaker. The larger gap there fits either reading.
* Two generators only, one grade per answer: the family ratio compares one related model with one
  unrelated model; it is not a property of the judge alone.

{bootstrap("question-turns (MT-Bench's second turn is an instance of its own)")}
"""
    figures = {"rows": rows, "family": estimate(strict), "family_ties_half": estimate(half),
               "slices": {n: estimate(sliced[n]["half"]) for n, _, _ in PROMPTS},
               "mean_scores": [rounded(turbo["score"]), rounded(mixtral["score"])],
               "self": {"value": own["value"], "note": own["note"]}}
    return text, figures


JUDGEBENCH_STEPS = [
    Step(("import", Data("judgebench/*judge_name=arena_hard*"), "--format", "judgebench", "--out", "llm-judges.csv",
          "--reference-out", "labels.csv", "--json"), save="import-llm.json"),
    Step(("import", Data("judgebench/*judge_name=reward_model*"), "--format", "judgebench", "--out",
          "reward-models.csv", "--reference-out", "correct.csv", "--json"), save="import-rm.json"),
    Step(("metrics", "llm-judges.csv", "--reference", "labels.csv", "--json"), save="metrics-llm.json"),
    Step(("metrics", "reward-models.csv", "--reference", "correct.csv", "--json"), save="metrics-rm.json"),
]

#: LLM judge -> the model whose two responses it compared (JudgeBench pairs come from one model).
JUDGEBENCH_PAIRS = {"o1-mini-2024-09-12": "GPT-4o", "claude-3-haiku-20240307": "Claude-3.5-Sonnet"}


def render_judgebench(out: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    llm, rm = out["metrics-llm.json"], out["metrics-rm.json"]
    rows = []
    figures: dict[str, Any] = {"llm": {}, "reward_models": {}}
    for judge, pairs in JUDGEBENCH_PAIRS.items():
        acc = pick(llm, "mipa", judge=judge, variant={"paradigm": "PWC"})
        agree = pick(llm, "position-consistency", judge=judge, variant={"share": "two orders agree"})
        first = pick(llm, "position-consistency", judge=judge, variant={"share": "first slot chosen"})
        ties = first["excluded"].get("tie", 0)
        games = first["n"] + first["n_excluded"]
        rows.append(f"| {judge} | {pairs} | {ci_pct(acc)} | {acc['n']} ({acc['n_excluded']} left out) | "
                    f"{ci_pct(agree)} | {ci_pct(first)} | {ties} of {games} ({pct(ties / games)}) |")
        figures["llm"][judge] = {"accuracy": estimate(acc), "orders_agree": estimate(agree),
                                 "first_slot": estimate(first), "tie_games": ties}
    haiku = figures["llm"]["claude-3-haiku-20240307"]["accuracy"]
    rm_rows = []
    scored = sorted((r for r in rm if r["metric"] == "mipa" and r["variant"].get("paradigm") == "DA"),
                    key=lambda r: -r["value"])
    for r in scored:
        rm_rows.append(f"| {r['judge']} | {ci_pct(r)} | {r['n']} |")
        figures["reward_models"][r["judge"]] = estimate(r)
    best, worst = scored[0], scored[-1]
    haiku_first = pick(llm, "position-consistency", judge="claude-3-haiku-20240307",
                       variant={"share": "first slot chosen"})
    o1_acc = pick(llm, "mipa", judge="o1-mini-2024-09-12", variant={"paradigm": "PWC"})
    together = scored + [o1_acc]
    overlap = all(a["ci_low"] <= b["ci_high"] and b["ci_low"] <= a["ci_high"] for a in together for b in together)
    o1 = figures["llm"]["o1-mini-2024-09-12"]["accuracy"]
    text = f"""{header(PAGES["judgebench"], "JudgeBench: how often LLM judges and reward models pick the objectively "
    "correct one of two responses on hard knowledge, reasoning, math and coding questions — accuracy, position "
    "effects, and why these files cannot show self-preference.")}
## The data

`{SHOWN_DATA}/judgebench/` (ScalerLab/JudgeBench; the repository has no licence file, see
`{SHOWN_DATA}/PROVENANCE.md`): pairs of responses to one question, **both written by the same
model** (GPT-4o for 350 pairs, Claude-3.5-Sonnet for 270), with an objective label saying which
response is correct. The judge outputs stored here: o1-mini on the GPT-4o pairs and Claude-3-Haiku
on the Claude pairs (the Arena-Hard judge prompt, each pair judged twice with the responses swapped),
and five reward models scoring the GPT-4o pairs. The importer names the two responses
`MODEL@A` and `MODEL@B` and writes the label as a preference reference (LLM judges) or as a
correctness reference (reward models).

## The commands

{commands_block(JUDGEBENCH_STEPS)}

## Findings

LLM judges (accuracy: MIPA, paper 002 Eq. 5 — the share of pairs whose verdict, both orders
combined as in paper 004 Eq. 1, names the correct response; a tie counts as wrong. Orders agree:
share of pairs whose two games give the same verdict. First slot: share of decided games won by
the response shown first, 50% = no position effect):

| judge | pairs from | accuracy | pairs | orders agree | first slot chosen | tie games |
|---|---|---|---|---|---|---|
{chr(10).join(rows)}

* **o1-mini picks the correct GPT-4o response in {ci_pct({**o1})} of {o1["n"]} pairs**; this is
  JudgeBench's own accuracy (its `utils/metrics.py` gives the same {pct(o1["value"])}: both count a
  pair whose two games disagree, or tie, as not correct).
* **Claude-3-Haiku is right on {ci_pct({**haiku})} of the Claude pairs**, below the 50% a coin
  would reach: it declares a tie in {pct(haiku_first["excluded"]["tie"] / (haiku_first["n"] + haiku_first["n_excluded"]))}
  of its games and gives {pct(haiku_first["value"])} of the others to the response shown first. {haiku["n_excluded"]} pairs
  have a game whose reply holds conflicting verdicts (unparsed, reason `conflicting`) and are left
  out and counted; JudgeBench reads such a pair from its other game and keeps it in the
  denominator, which gives 87 of 270 (32.2%) — the same finding.

Reward models on the 350 GPT-4o pairs (accuracy: MIPA for direct assessment — the share of pairs
where the model scores the correct response higher; equal scores count as wrong):

| reward model | accuracy | pairs |
|---|---|---|
{chr(10).join(rm_rows)}

All five reward models sit between {pct(worst["value"])} and {pct(best["value"])};
{"their intervals overlap each other and o1-mini's: on these pairs none is shown better than another"
 if overlap else "some intervals are apart (see the table)"}.

## What these judgments cannot say

* **No self-preference, by design.** Both responses of a pair come from one model, so a judge
  cannot favour one of them for its authorship: these files measure accuracy and position effects,
  not nepotism. Each LLM judge here is of the response model's family by the registry
  (`nepotism models relation o1-mini-2024-09-12 gpt-4o-2024-05-13`: same_family; Claude-3-Haiku
  and Claude-3.5-Sonnet likewise); the files that would contrast that with an unrelated
  judge on the same pairs (GPT-4o on Claude pairs and the reverse) are 4 MiB or more upstream and
  were not copied.
* **Judges on different pairs are not comparable**: o1-mini and Claude-3-Haiku saw different
  questions answered by different models.
* The label is objective (the response whose final answer is correct), not a human preference.

{bootstrap("pairs")}
"""
    return text, figures


MBPP_FILE = "mbpp_selfpref/llama-3.3-70b_gpt-4o_eval.jsonl"
MBPP_STEPS = [
    step
    for source in ("reply", "probabilities")
    for step in (
        Step(("import", Data(MBPP_FILE), "--format", "mbpp-selfpref", "--canonical", "--verdicts", source,
              "--out", f"judgments-{source}.csv", "--reference-out", "recorded-correctness.csv", "--json"),
             save=f"import-{source}.json"),
        Step(("metrics", f"judgments-{source}.csv", "--reference", "recorded-correctness.csv", "--json"),
             save=f"results-{source}.json"),
    )
]

_MBPP_METRICS = (("self-preference-ratio", "SPR"), ("judge-accuracy", "judge accuracy (D_diff)"),
                 ("legitimate-self-preference-ratio", "LSPR"), ("harmful-self-preference-propensity", "HSPP"))


def render_mbpp(out: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    judge = "llama-3.3-70b-instruct"
    readings = {}
    for source in ("reply", "probabilities"):
        records = out[f"results-{source}.json"]
        found = {"SPR": pick(records, "self-preference-ratio", judge=judge, scope="self",
                             variant={"opponents": "unrelated", "averaging": None})}
        for metric, label in _MBPP_METRICS[1:]:
            found[label] = pick(records, metric, judge=judge, scope="self",
                                variant={"opponents": "unrelated", "averaging": "per-evaluatee", "preference": None,
                                         "examples": None})
        readings[source] = found
    share = {label: pick(out["results-reply.json"], metric, judge=judge, scope="self",
                         variant={"opponents": "unrelated", "averaging": "per-evaluatee", "preference": "probability",
                                  "examples": None})
             for metric, label in _MBPP_METRICS[1:]}
    counts = out["import-reply.json"]["counts"]

    def cell(r: dict) -> str:
        return f"{num(r['value'], 3)} ({num(r['ci_low'], 3)}–{num(r['ci_high'], 3)}), n={r['n']}"

    table = ["| verdicts from | SPR | judge accuracy (D_diff) | LSPR | HSPP |", "|---|---|---|---|---|"]
    for source, what in (("reply", "the judge's reply"), ("probabilities", "label probabilities (most probable)")):
        r = readings[source]
        table.append(f"| {what} | " + " | ".join(cell(r[label]) for _, label in _MBPP_METRICS) + " |")
    table.append("| label probabilities (P(own) share, `preference=probability`) | — | "
                 + " | ".join(cell(share[label]) for _, label in _MBPP_METRICS[1:]) + " |")
    reply, probs = readings["reply"], readings["probabilities"]
    text = f"""{header(PAGES["mbpp"], "Paper 004's recorded MBPP data: Llama-3.3-70B judging its own code against "
    "GPT-4o's, with the recorded test results as ground truth — how often it prefers its own code, and how often "
    "it does so when its own code fails and GPT-4o's passes.")}
## The data

`{SHOWN_DATA}/{MBPP_FILE}` (Taslim-M/mitigating_self_preference; the repository has no licence
file, so the file is read from beside the repository and not bundled): {counts["problems"]} MBPP
problems with the code of Llama-3.3-70B (the judge) and of GPT-4o, whether each passed its tests,
and the judge's verdict on each pair in both presentation orders, with its probabilities for
"first", "tie" and "second". The same audit with our own sandboxed re-execution of the code is
[`examples/mbpp_audit/`](../../examples/mbpp_audit/README.md) (`bash examples/mbpp_audit/audit.sh`,
about 4.5 minutes; this page leaves the sandbox out).

## The commands

{commands_block(MBPP_STEPS)}

## Findings

Paper 004's metrics (SPR Eq. 2: share of problems whose verdict, both orders combined by Eq. 1, is
the judge's own code; on D_diff, the problems where exactly one of the two programs passes: judge
accuracy Eq. 3, LSPR Eq. 4 = P(own correct | own preferred), HSPP Eq. 5 = P(own preferred | GPT-4o
correct)); value (95% CI), n problems:

{chr(10).join(table)}

* **Reading the reply loses many problems**: {counts["unparsed"]} of {counts["judgments"]} replies are not
  one of A / T / B (mostly a bare code fence), so {reply["SPR"]["n_excluded"]} of
  {counts["problems"]} problems have an unreadable order and are left out, counted. Where a reply
  parses and scores were recorded it equals the most probable label every time (the importer counts
  `reply_disagrees`: {counts["reply_disagrees"]}), so the probability reading is the same verdict on
  {probs["SPR"]["n"]} problems.
* **Overall self-preference is low**: the judge picks its own code on {ci_pct(reply["SPR"])} of
  the problems (reply) or {ci_pct(probs["SPR"])} (probabilities); a tie counts as not own.
* **When its own code fails and GPT-4o's passes, it still prefers its own** in {ci_pct(reply["HSPP"])}
  (reply, n = {reply["HSPP"]["n"]}) to {ci_pct(probs["HSPP"])} (probabilities, n = {probs["HSPP"]["n"]})
  of those problems; read as a probability share with the position effect averaged out, it gives its
  failing code {ci_pct(share["HSPP"])} of the probability against GPT-4o's passing code (n = {share["HSPP"]["n"]}).

## What these judgments cannot say

* **Small D_diff**: only {share["judge accuracy (D_diff)"]["n"]} problems have exactly one passing
  program ({probs["judge accuracy (D_diff)"]["n"]} of them with recorded probabilities,
  {reply["judge accuracy (D_diff)"]["n"]} with a readable reply), so LSPR and HSPP intervals are wide;
  the LSPR from the reply rests on {reply["LSPR"]["n"]} problems.
* **One judge, one opponent**: Llama-3.3-70B against GPT-4o only. A low SPR could be a judge that
  prefers the stronger model's code or one that ties a lot; without a second judge on the same pairs
  nothing separates self-preference from the judge's taste in code.
* **The ground truth is the recorded test result**, stronger (MBPP+ style) tests than the three
  `assert` lines in the prompt; re-running the visible tests in our sandbox agreed with it on 84%
  of responses when the example last ran (its README; not recomputed by this page).

{bootstrap("problems")}
"""
    figures = {"counts": {k: counts[k] for k in ("problems", "judgments", "unparsed", "reply_disagrees")},
               **{f"{source}_{label.split()[0].lower()}": estimate(readings[source][label])
                  for source in readings for _, label in _MBPP_METRICS},
               **{f"share_{label.split()[0].lower()}": estimate(share[label]) for _, label in _MBPP_METRICS[1:]}}
    return text, figures


ALPACA_STEPS = [
    Step(("import", Data("alpaca_eval/annotations_compact.csv.gz"), "--format", "alpaca-eval-compact",
          "--out", "judgments.parquet", "--json"), save="import.json"),
    Step(("metrics", "judgments.parquet", "--json"), save="metrics.json"),
    Step(("leakage", "audit", "judgments.parquet", "--json"), save="audit.json"),
]

#: AlpacaEval annotator configs: (judge, config, baseline, what it is), in the order the page lists them.
ALPACA_CONFIGS = (
    ("gpt4_1106_preview", "weighted_alpaca_eval_gpt4_turbo", "gpt4_1106_preview", "AlpacaEval 2.0's default"),
    ("gpt4_1106_preview", "alpaca_eval_gpt4_turbo_fn", "gpt4_1106_preview", "GPT-4-Turbo, function calling"),
    ("gpt4_1106_preview", "alpaca_eval_cot_gpt4_turbo_fn", "gpt4_1106_preview", "GPT-4-Turbo, chain of thought"),
    ("gpt4_0314", "alpaca_eval_gpt4", "text_davinci_003", "AlpacaEval 1.0's default"),
    ("gpt4_0613", "alpaca_eval_gpt4_0613", "text_davinci_003", "GPT-4-0613"),
    ("claude-2", "bedrock_claude", "text_davinci_003", "Claude 2 on AWS Bedrock (community)"),
)


def render_alpaca(out: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    imported, records, audits = out["import.json"], out["metrics.json"], out["audit.json"]
    counts = imported["counts"]
    rows = next(iter(imported["outputs"].values()))["rows"]
    configs = ["| judge | annotator config | baseline (every comparison) | judged pairs | no verdict |",
               "|---|---|---|---|---|"]
    for judge, config, baseline, what in ALPACA_CONFIGS:
        ex = pick(records, "excluded-verdicts", judge=judge, condition=config)
        configs.append(f"| {judge} | `{config}` ({what}) | {baseline} | {count(ex['n'])} | {ex['n_excluded']} |")

    def spr(judge: str, config: str, scope: str) -> dict:
        return pick(records, "self-preference-ratio", judge=judge, condition=config, scope=scope,
                    variant={"opponents": "unrelated", "averaging": None})

    turbo = {config: spr(judge, config, "self") for judge, config, _, _ in ALPACA_CONFIGS[:3]}
    weighted = turbo["weighted_alpaca_eval_gpt4_turbo"]
    family = spr("gpt4_0314", "alpaca_eval_gpt4", "family")
    claude = spr("claude-2", "bedrock_claude", "self")
    same_texts = pick(records, "paired-win-rate-gap", judge="gpt4_1106_preview",
                      condition="weighted_alpaca_eval_gpt4_turbo")
    claude_gap = pick(records, "paired-win-rate-gap", judge="claude-2", condition="bedrock_claude")
    flagged = {a["judge"]: (a["bonus"]["n_related"], a["bonus"]["n_entries"], a["baseline"]) for a in audits}

    def points(r: dict) -> str:
        return f"{100 * r['value']:+.1f} points (95% CI {100 * r['ci_low']:+.1f} to {100 * r['ci_high']:+.1f})"

    text = f"""{header(PAGES["alpaca-eval"], "AlpacaEval's recorded judgments: GPT-4-Turbo, GPT-4 and Claude 2 judging "
    "up to 60 chatbots against a baseline answer — how often a judge prefers its own answers, whether it does so "
    "more than another judge on the same pair, and what a single-baseline leaderboard cannot show.")}
## The data

`{SHOWN_DATA}/alpaca_eval/annotations_compact.csv.gz` (tatsu-lab/alpaca_eval; the AlpacaEval
set is CC BY-NC 4.0, the outputs are subject to their providers' terms; a **derived** file, see
`{SHOWN_DATA}/PROVENANCE.md`: one row per judged pair, the texts dropped; annotation files of 4 MiB
and more were not copied, so some configurations are partial). AlpacaEval compares every
generator's answer to each of 805 instructions with one **baseline** answer and records which of
the two the judge preferred. It randomises, pair by pair, which answer the judge sees first and
stores the preference relative to `output_1` (the baseline) after undoing the shuffle; the order
actually shown is not in the file. The importer writes the baseline as `model_a`, which is
therefore *not* the answer shown first, and every pair is judged once.

| | |
|---|---|
| rows read | {count(counts["rows_read"])} |
| exact repeats dropped (the same annotations in several result folders) | {count(counts["duplicates_dropped"])} |
| judged pairs written | {count(rows)} |
| no preference recorded (unparsed, left out and counted) | {counts["unparsed"]} |

{chr(10).join(configs)}

## The commands

{commands_block(ALPACA_STEPS)}

## Findings

* **AlpacaEval 2.0's judge grades everyone against its own answers.** The judge (gpt-4-1106-preview)
  and the baseline are the same model, so every comparison pits the judge's own answer against
  another model's. It prefers its own answer over an unrelated model's in {ci_pct(weighted)} of
  {count(weighted["n"])} comparisons (`weighted_alpaca_eval_gpt4_turbo`; with function calling
  {ci_pct(turbo["alpaca_eval_gpt4_turbo_fn"])}, with chain of thought
  {ci_pct(turbo["alpaca_eval_cot_gpt4_turbo_fn"])}). That is mostly the strength of GPT-4-Turbo's
  answers; the next finding is the comparison that can separate the two.
* **On identical texts, no extra self-preference is visible.** One pair — GPT-4-Turbo's answers
  against text-davinci-003's, the very same texts — was judged by both GPT-4-Turbo and GPT-4-0314.
  GPT-4-Turbo prefers its own answers in {pct(same_texts["win_rate_this_judge"])} of the
  instructions, GPT-4-0314 in {pct(same_texts["win_rate_other_judge"])}: a gap of
  {points(same_texts)} (ties half, n = {count(same_texts["n"])} judgments over
  {same_texts["n_clusters"]} instructions). Both are close to 100%, so a ceiling leaves little room
  for a difference to show; and GPT-4-0314 is of the judge's own series, not unrelated.
* **Claude 2 is harder on its own answers than GPT-4 is.** Claude 2 judging its own answers
  against text-davinci-003's prefers them in {pct(claude_gap["win_rate_this_judge"])} of the
  instructions (ties half; {ci_pct(claude)} with ties as not preferred); GPT-4-0314 prefers Claude 2's
  answers to the same baseline in {pct(claude_gap["win_rate_other_judge"])} — a gap of
  {points(claude_gap)}. The two judges saw different samples of Claude 2 (`bedrock_claude` and
  `claude-2` are separate runs), so part of this can be the samples, not the judge.
* **AlpacaEval 1.0's judge and its family**: under GPT-4-0314 the only family answers that meet an
  unrelated model's are the baseline's ({names(family["generators"])}; every other entry meets only
  the baseline), and it prefers them in only {ci_pct(family)} of {count(family["n"])} comparisons —
  an old, weak model; no family favour large enough to lift it.
* **The leaderboards, flagged** (`nepotism leakage audit`): under GPT-4-0314 (baseline
  {flagged["gpt4_0314"][2]}) {flagged["gpt4_0314"][0]} of {flagged["gpt4_0314"][1]} entries are related to the
  judge by the registry (itself, its series, its family, and models trained on GPT outputs); under
  GPT-4-Turbo (baseline {flagged["gpt4_1106_preview"][2]}) {flagged["gpt4_1106_preview"][0]} of
  {flagged["gpt4_1106_preview"][1]}. No unrelated judge judged the same entries against the same
  baseline, so the audit cannot estimate their bonus and flags them from lineage alone.

## What these judgments cannot say

* **Position effects**: the order shown to the judge is not recorded and each pair is judged once,
  so no position correction (paper 004 Eq. 1) is possible; AlpacaEval's randomisation makes the
  position effect noise rather than bias toward the baseline, but it stays in every number.
* **Quality versus favouritism** for a judge whose own answer is the baseline: only the identical-text
  pair above compares two judges on the same answers, and it sits at the ceiling.
* **Partial configurations**: 165 annotation files of 4 MiB and more (mostly
  `weighted_alpaca_eval_gpt4_turbo`) were not copied (`{SHOWN_DATA}/alpaca_eval/annotation_files_index.json`),
  so that leaderboard is incomplete here.
* Length-controlled win rates (AlpacaEval 2.0's headline) are not computed; the texts are not in
  this file (AlpacaEval's `annotations.json` with `--format alpaca-eval` keeps them).

{bootstrap("instructions")}
"""
    figures = {
        "counts": {k: counts[k] for k in ("rows_read", "duplicates_dropped", "unparsed")}, "rows": rows,
        "turbo_self": {c: estimate(r) for c, r in turbo.items()}, "gpt4_0314_family": estimate(family),
        "claude_self": estimate(claude),
        "identical_texts_gap": {**estimate(same_texts), "this": rounded(same_texts["win_rate_this_judge"]),
                                "other": rounded(same_texts["win_rate_other_judge"])},
        "claude_gap": {**estimate(claude_gap), "this": rounded(claude_gap["win_rate_this_judge"]),
                       "other": rounded(claude_gap["win_rate_other_judge"])},
        "flagged": {j: [v[0], v[1]] for j, v in flagged.items()},
    }
    return text, figures


PAGES: dict[str, Page] = {
    "arena-bench": Page("arena-bench", "arena-bench v1: a GPT-4 judge grading its family and its students",
                        ARENA_STEPS, render_arena, ("arena_bench_v1",)),
    "routellm": Page("routellm", "RouteLLM MT-Bench: a GPT-4 judge grading GPT-4-Turbo against Mixtral",
                     ROUTELLM_STEPS, render_routellm, ("routellm",)),
    "judgebench": Page("judgebench", "JudgeBench: judge accuracy on objectively labelled pairs",
                       JUDGEBENCH_STEPS, render_judgebench, ("judgebench",)),
    "alpaca-eval": Page("alpaca-eval", "AlpacaEval: GPT-4-Turbo, GPT-4 and Claude 2 judging against a baseline",
                        ALPACA_STEPS, render_alpaca, ("alpaca_eval",)),
    "mbpp": Page("mbpp", "MBPP: Llama-3.3-70B judging its own code against GPT-4o's (paper 004's data)",
                 MBPP_STEPS, render_mbpp, ("mbpp_selfpref",)),
}


# ---------------------------------------------------------------------------------------------


def build(name: str, data: Path) -> tuple[str, dict[str, Any]]:
    page = PAGES[name]
    with tempfile.TemporaryDirectory(prefix=f"gallery-{name}-") as work:
        outputs = run_steps(page.steps, data.resolve(), Path(work))
    return page.render(outputs)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("pages", nargs="*", metavar="PAGE", help=f"one of {', '.join(PAGES)}")
    parser.add_argument("--all", action="store_true", help="every page")
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA, help="the shared data folder")
    parser.add_argument("--out", type=Path, default=GALLERY, help="folder of the pages (default docs/gallery)")
    parser.add_argument("--check", action="store_true", help="write nothing; exit 1 when a page differs")
    parser.add_argument("--json", action="store_true", help="print the headline figures of each page as JSON")
    args = parser.parse_args(argv)
    names = list(PAGES) if args.all else args.pages
    if not names:
        parser.error("name a PAGE or --all")
    for name in names:
        if name not in PAGES:
            parser.error(f"unknown page {name!r}: pages are {', '.join(PAGES)}")
    if not EXE.exists():
        parser.error(f"the nepotism executable is not installed beside {sys.executable}")
    status, figures = 0, {}
    for name in names:
        text, figures[name] = build(name, args.data)
        target = args.out / f"{name}.md"
        if args.check:
            if not target.exists() or target.read_text(encoding="utf-8") != text:
                print(f"{target} differs from what the data gives now: run scripts/gallery.py {name}", file=sys.stderr)
                status = 1
        else:
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(text, encoding="utf-8")
            if not args.json:
                print(f"wrote {target}")
    if args.json:
        print(json.dumps(figures, indent=2, sort_keys=True))
    return status


if __name__ == "__main__":
    sys.exit(main())
