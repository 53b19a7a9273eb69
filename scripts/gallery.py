#!/usr/bin/env python3
"""Regenerate the gallery of real audits (docs/gallery/PAGE.md) from public data kept beside the repository.

    .venv/bin/python scripts/gallery.py arena-bench            # rewrite docs/gallery/arena-bench.md
    .venv/bin/python scripts/gallery.py --all                  # every page
    .venv/bin/python scripts/gallery.py arena-bench --check    # exit 1 when the page differs from the data
    .venv/bin/python scripts/gallery.py arena-bench --json     # print the page's verdicts and tables as JSON
    .venv/bin/python scripts/gallery.py --all --data DIR       # the data in DIR instead of ../shared/data

Each page runs the installed ``nepotism`` executable (the one beside this Python) exactly as the
page shows it, in a temporary folder, on the public files it names (``../shared/data`` beside the
repository, not in it; ``--data`` to point elsewhere; a page whose files are absent says where they
come from). A page is its hand-written context about the data (where it comes from, its licence,
who the judges and generators are, how the benchmark pairs answers, its known caveats), its
commands, and everything else generated from the commands' output: "The answer" is the judge
verdicts of ``nepotism metrics --json`` (`nepotism.analyses.verdicts`, worded as `nepotism
metrics` and the report word them), record tables list records unchanged, the cases are
``nepotism explain``'s own text, and "What this data cannot say" lists the verdicts without a
number with their reasons and what data would measure them. Nothing here computes or words a
number by hand. The README's gallery bullets are written from the same verdicts.
``tests/docs/test_gallery.py`` holds every page's verdicts and fails when a committed page differs
from what the data give.
"""

from __future__ import annotations

import argparse
import glob
import json
import subprocess
import sys
import tempfile
import textwrap
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from nepotism.analyses.verdicts import summary_rows
from nepotism.cli._answer import exclusion_lines, names_line
from nepotism.report.full import _md, _md_table, _row
from nepotism.results import Verdict

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_DATA = ROOT / ".." / "shared" / "data"
GALLERY = ROOT / "docs" / "gallery"
README = ROOT / "README.md"
SHOWN_DATA = "../shared/data"  # how a page names the data folder (relative to the repository)
EXE = Path(sys.executable).with_name("nepotism")


class Missing(Exception):
    """A page's data files are not in the data folder."""


# ---------------------------------------------------------------------------------------------
# Running the commands a page shows


@dataclass(frozen=True)
class Data:
    """A file (or a glob) under the data folder."""

    path: str


@dataclass(frozen=True)
class Step:
    """One ``nepotism`` command; ``save`` names the file its standard output is written to (read as JSON
    unless ``text``)."""

    args: tuple[Any, ...]
    save: str | None = None
    text: bool = False

    def shown(self) -> str:
        words = ["nepotism"] + [f"{SHOWN_DATA}/{a.path}" if isinstance(a, Data) else str(a) for a in self.args]
        return " ".join(words) + (f" > {self.save}" if self.save else "")

    def files(self, data: Path) -> list[str]:
        """Every data file the step reads (``Missing`` when a path matches none)."""
        out = []
        for a in self.args:
            if isinstance(a, Data):
                found = sorted(glob.glob(str(data / a.path)))
                if not found:
                    raise Missing(a.path)
                out += found
        return out

    def argv(self, data: Path) -> list[str]:
        out = [str(EXE)]
        for a in self.args:
            out += sorted(glob.glob(str(data / a.path))) if isinstance(a, Data) else [str(a)]
        return out


def run_steps(steps: list[Step], data: Path, work: Path) -> dict[str, Any]:
    """Run each step in ``work``; what each saved output holds (JSON, or text), by file name."""
    outputs: dict[str, Any] = {}
    for step in steps:
        done = subprocess.run(step.argv(data), cwd=work, capture_output=True, text=True)
        if done.returncode != 0:
            raise SystemExit(f"gallery: `{step.shown()}` failed ({done.returncode}):\n{done.stderr}")
        if step.save:
            (work / step.save).write_text(done.stdout)
            outputs[step.save] = done.stdout if step.text else json.loads(done.stdout)
    return outputs


# ---------------------------------------------------------------------------------------------
# What a page holds


@dataclass(frozen=True)
class Table:
    """Records of one saved ``metrics --json`` output shown unchanged (the report's columns), with a
    hand-written caption saying what they are; ``extra`` adds record fields as columns."""

    source: str
    caption: str
    select: Callable[[dict], bool]
    extra: tuple[str, ...] = ()


@dataclass(frozen=True)
class Page:
    name: str
    title: str
    summary: str  # one hand-written sentence: what the data are and what the page looks at
    needs: str  # the data folder the page reads (under --data)
    origin: str  # where those files come from upstream (said when they are absent)
    context: str  # "## The data": hand-written, no number a command prints
    steps: list[Step]
    answers: dict[str, str]  # saved metrics output -> what it is (a heading when there are several)
    caveats: tuple[str, ...]  # hand-written: what the data cannot say, beyond the verdicts
    tables: tuple[Table, ...] = ()
    cases: dict[str, str] = field(default_factory=dict)  # saved explain output -> why this verdict's cases
    notes: str = ""  # hand-written, after the commands: what an option in them does
    # the README bullet: a hand-written lead, then the verdicts it quotes: (output, judge, condition, scope,
    # a few words saying which output when the page has several)
    readme: tuple[str, tuple[tuple[str, str, str, str, str], ...]] = ("", ())


def variant(r: dict, **want: Any) -> bool:
    """Whether a record's variant holds ``want`` (a value of None: the key is absent)."""
    v = r.get("variant") or {}
    return all(v.get(k) == x for k, x in want.items())


# ---------------------------------------------------------------------------------------------
# Rendering: every number below comes from a command's output, worded by nepotism's own functions


def verdicts_of(document: dict) -> list[Verdict]:
    return [Verdict.from_dict(v) for v in document["verdicts"]]


def answer_section(document: dict) -> list[str]:
    """The verdict table, the registry names, the sentences, what each judge saw and the judgments left
    out: what `nepotism metrics` prints first, as Markdown."""
    verdicts, summary = verdicts_of(document), document["summary"]
    rows = summary_rows(verdicts)
    several = len({r["condition"] for r in rows}) > 1
    level = int(round(100 * (summary.get("options") or {}).get("confidence", 0.95)))
    header = (
        ["judge"] + (["condition"] if several else []) + ["relation", "verdict", "value", f"{level}% CI", "prompts", "evidence"]
    )
    out = _md_table(
        header,
        [
            [r["judge"]]
            + ([r["condition"]] if several else [])
            + [r["relation"], r["verdict"], r["value"], r["ci"], r["prompts"], r["evidence"]]
            for r in rows
        ],
    )
    line = names_line(summary)
    if line:
        out += ["", _md(line)]
    said = [v.sentence for v in verdicts if v.status != "not-measurable"]
    if said:
        out += ["", "In words:", ""] + [f"- {_md(s)}" for s in said]
    entries = summary.get("relations") or []
    if entries:
        out += ["", "What each judge saw (the generators it judged, by their relation to it):", ""]
        out += _md_table(
            ["judge", "condition", "kind", "prompts", "generators"],
            [
                [
                    e["judge"],
                    e.get("condition", ""),
                    e.get("kind", ""),
                    f"{e.get('prompts', 0):,}",
                    "; ".join(f"{scope}: {names_list(names)}" for scope, names in (e.get("generators") or {}).items()),
                ]
                for e in entries
            ],
        )
    left_out = exclusion_lines(document["results"])
    if left_out:
        out += [""] + (
            [_md(left_out[0])] if len(left_out) == 1 else [_md(left_out[0]), ""] + [f"- {_md(x.strip())}" for x in left_out[1:]]
        )
    return out


def names_list(names: list[str], shown: int = 8) -> str:
    more = len(names) - shown
    return ", ".join(names[:shown]) + (f" and {more} more" if more > 0 else "")


def record_table(document: dict, table: Table) -> list[str]:
    """The selected records in the report's columns (`nepotism.report`): a column no row fills is left
    out, and one that every row shares is said once above the table."""
    records = [r for r in document["results"] if table.select(r)]
    if not records:
        raise SystemExit(f"gallery: no record for the table '{table.caption}' in {table.source}")
    keys = ["metric", "judge", "condition", "scope", "target", "variant", "estimate", "n", "prompts", "excluded"]
    rows = [_row(r) for r in records]
    for name in table.extra:
        for row, r in zip(rows, records, strict=True):
            row[name] = "—" if r.get(name) is None else f"{r[name]:.3f}" if isinstance(r[name], float) else r[name]
    keys = [k for k in keys + list(table.extra) if any(row.get(k) not in (None, "") for row in rows)]
    shared = [
        k
        for k in keys
        if len(rows) > 1 and len({str(row.get(k)) for row in rows}) == 1 and k not in ("estimate", "n", "prompts", "excluded")
    ]
    out = [_md("Every row: " + "; ".join(f"{k} {rows[0][k]}" for k in shared) + "."), ""] if shared else []
    keys = [k for k in keys if k not in shared]
    return out + _md_table(keys, [["" if row.get(k) is None else row[k] for k in keys] for row in rows])


def fenced(text: str) -> list[str]:
    """``text`` in a code block whose fence no run of backticks in it can close."""
    run, fence = 0, 3
    for ch in text:
        run = run + 1 if ch == "`" else 0
        fence = max(fence, run + 1)
    return ["`" * fence + "text", text.rstrip("\n"), "`" * fence]


def cannot_say(documents: dict[str, dict], headings: dict[str, str]) -> list[str]:
    """The verdicts without a number (not measurable, too little data) with why and what data would
    measure them, judges with the same relation, verdict, reason and needs on one row; then what would
    make the measured verdicts stronger, grouped by that need."""
    out: list[str] = []
    stronger: dict[str, list[str]] = {}
    for save, document in documents.items():
        rows = summary_rows(verdicts_of(document))
        several = len({r["condition"] for r in rows}) > 1
        grouped: dict[tuple[str, ...], list[str]] = {}
        for r in rows:
            who = r["judge"] + (f" ({r['condition']})" if several else "")
            if r["status"] != "measured":
                grouped.setdefault((r["relation"], r["verdict"], r["evidence"], "; ".join(r["needs"])), []).append(who)
            for need in r["needs"] if r["status"] == "measured" else ():
                stronger.setdefault(need, []).append(f"{who}, {r['relation']}")
        if grouped:
            if len(documents) > 1:
                out += [f"From {headings[save]}:", ""]
            out += _md_table(
                ["judge", "relation", "verdict", "why", "what would measure it"],
                [[", ".join(judges), *key] for key, judges in grouped.items()],
            ) + [""]
    if stronger:
        out += ["What would make the measured verdicts stronger:", ""]
        out += [
            f"- {_md(need[0].upper() + need[1:])}: {_md('; '.join(dict.fromkeys(who)))}." for need, who in stronger.items()
        ] + [""]
    return out


def intervals_line(documents: dict[str, dict]) -> str:
    """How the intervals were made, from the summaries' bootstrap options."""
    said = []
    for document in documents.values():
        o = document["summary"].get("options") or {}
        line = (
            f"Intervals: {int(round(100 * o['confidence']))}% {o['method']} intervals from {o['n_resamples']:,} "
            f"bootstrap resamples of the prompts (clusters, not rows), seed {o['seed']}; a verdict's number "
            f"needs at least {document['summary'].get('min_prompts', 30)} prompts (docs/answer.md)."
        )
        if line not in said:
            said.append(line)
    return " ".join(said)


def commands_block(steps: list[Step]) -> str:
    return "```bash\n" + "\n".join(s.shown() for s in steps) + "\n```"


def import_lines(outputs: dict[str, Any]) -> list[str]:
    """What each ``import --json`` reported: its counts, the tables written and the importer's notes."""
    out = []
    for save, document in outputs.items():
        if not (isinstance(document, dict) and "format" in document and "outputs" in document):
            continue
        counts = ", ".join(f"{k.replace('_', ' ')} {v:,}" for k, v in document["counts"].items())
        wrote = ", ".join(f"`{name}` ({t['kind']}, {t['rows']:,} rows)" for name, t in document["outputs"].items())
        out.append(
            f"- `{save}` (`{document['format']}`, {len(document['sources'])} "
            f"file{'s' if len(document['sources']) != 1 else ''}): {counts}; wrote {wrote}."
            + "".join(f" {_md(n[0].upper() + n[1:]).rstrip('.')}." for n in document.get("notes") or [])
        )
    return out


def render(page: Page, outputs: dict[str, Any]) -> str:
    documents = {save: outputs[save] for save in page.answers}
    several = len(documents) > 1
    text = [
        f"# {page.title}",
        "",
        page.summary,
        "",
        "Regenerate this page (seconds to a minute on 2 cores; it runs the commands below in a temporary folder "
        "and rewrites the page from their output; the data folder is `../shared/data` beside the repository, "
        "`--data DIR` for another):",
        "",
        f"```bash\n.venv/bin/python scripts/gallery.py {page.name}\n```",
        "",
        "## The data",
        "",
        page.context.strip(),
        "",
        "## The commands",
        "",
        commands_block(page.steps),
        "",
    ]
    if page.notes:
        text += [page.notes.strip(), ""]
    imported = import_lines(outputs)
    if imported:
        text += ["What the imports reported:", ""] + imported + [""]
    text += [
        "## The answer",
        "",
        "Generated from the verdicts in `nepotism metrics --json` (docs/answer.md: each judge and relation read "
        "from the strongest evidence the data hold), worded as `nepotism metrics` prints them.",
        "",
    ]
    for save, document in documents.items():
        if several:
            text += [f"### {page.answers[save]}", ""]
        text += answer_section(document) + [""]
    if page.tables:
        text += [
            "## Records",
            "",
            "Records of `nepotism metrics --json` this page shows as they are (the report's "
            "columns; docs/metrics.md defines each metric).",
            "",
        ]
    for table in page.tables:
        text += [f"### {table.caption}", ""] + record_table(outputs[table.source], table) + [""]
    if page.cases:
        text += ["## The cases behind a verdict", ""]
        for save, why in page.cases.items():
            text += [why.strip(), ""] + fenced(outputs[save]) + [""]
    text += ["## What this data cannot say", ""] + cannot_say(documents, page.answers)
    text += (
        ["About the data:", ""]
        + [
            textwrap.fill(
                "* " + " ".join(c.split()), width=100, subsequent_indent="  ", break_long_words=False, break_on_hyphens=False
            )
            for c in page.caveats
        ]
        + [""]
    )
    text += [intervals_line(documents), ""]
    return "\n".join(text)


def readme_bullet(page: Page, outputs: dict[str, Any]) -> str:
    """The page's bullet in the README: its hand-written lead, then the quoted verdicts in the summary's words."""
    lead, quotes = page.readme
    said = []
    for save, judge, condition, scope, which in quotes:
        rows = [
            r
            for r in summary_rows(verdicts_of(outputs[save]))
            if (r["judge"], r["condition"]) == (judge, condition) and r["scope"] in (scope, "any")
        ]
        if len(rows) != 1:
            raise SystemExit(f"gallery: the README quotes {judge} ({condition}, {scope}) of {save}: no such verdict")
        r = rows[0]
        who = (
            f"{judge}"
            + (f" ({condition})" if condition != "default" else "")
            + f", {r['relation']}"
            + (f" ({which})" if which else "")
        )
        if r["status"] == "measured":
            level = int(round(100 * (r["confidence"] or 0.95)))
            said.append(f"{who}: {r['verdict']}, {r['value']} ({level}% CI {r['ci']}; {r['prompts']} prompts; {r['evidence']})")
        else:
            said.append(f"{who}: {r['verdict']} — {r['evidence']}")
    words = f"* [{page.title.split(':')[0]}](docs/gallery/{page.name}.md): {lead} " + "; ".join(said) + "."
    return textwrap.fill(words, width=100, subsequent_indent="  ", break_long_words=False, break_on_hyphens=False)


def figures(page: Page, outputs: dict[str, Any]) -> dict[str, Any]:
    """The page's verdicts and the records of its tables, rounded (what tests/docs/test_gallery.py holds)."""

    def rounded(x: Any) -> Any:
        return round(float(x), 3) if isinstance(x, float) else x

    verdicts = {
        save: {
            f"{v.judge}|{v.condition}|{v.scope}": [
                v.status,
                v.rung,
                v.metric,
                rounded(v.value),
                rounded(v.ci_low),
                rounded(v.ci_high),
                v.n_clusters,
            ]
            for v in verdicts_of(outputs[save])
        }
        for save in page.answers
    }
    fields = (
        "metric",
        "judge",
        "condition",
        "scope",
        "generator",
        "variant",
        "value",
        "ci_low",
        "ci_high",
        "n",
        "n_clusters",
        "n_excluded",
        "excluded",
    )
    tables = [
        {
            "source": table.source,
            "caption": table.caption,
            "records": [{k: rounded(r.get(k)) for k in fields} for r in outputs[table.source]["results"] if table.select(r)],
        }
        for table in page.tables
    ]
    return {"verdicts": verdicts, "tables": tables}


# ---------------------------------------------------------------------------------------------
# Pages (hand-written: context about the data, the commands, the caveats of the data; nothing that
# states a number a command prints)


ARENA = Page(
    name="arena-bench",
    title="arena-bench v1: a GPT-4 judge grading its family and its students",
    summary="A GPT-4 judge grading chatbots on a 1–10 scale against GPT-4's own reference answers: whether it "
    "scores its own family and the models trained on GPT outputs higher, and what these judgments cannot "
    "tell apart.",
    needs="arena_bench_v1",
    origin="lmarena/arena-hard-auto at commit 4a705dd6963f777aba2ae79259e3013934e6e012 (claude-2 files at "
    "ac377138acd4c4502c4be565acef07248815a70a, gpt-4_single at 9a01b42f09c226d8ccee257938ccd6288a89f82b), "
    "folder data/arena-bench-v1/ (removed in later commits)",
    context=f"""
`{SHOWN_DATA}/arena_bench_v1/`: the early "arena-bench" stage of lmarena/arena-hard-auto (Apache-2.0;
the answers are also subject to their providers' terms). Hard user questions; each model's answer
was graded once by a GPT-4 judge (configuration `judge_model: gpt-4`, `reference: True`,
`ref_model: gpt-4`) in FastChat's single-grading format: the judge sees the question, **GPT-4's own
reference answer** and the model's answer, and writes a rating `[[1]]`…`[[10]]`. The records do not
name the judge; the importer takes FastChat's default `gpt-4` and says so (in autumn 2023 the name
`gpt-4` meant the snapshot gpt-4-0613). One file (`gpt-4_single.jsonl.gz`) repeats the GPT-3.5-Turbo
judgments of another exactly; the importer keeps them once and counts them. Replies without a single
rating and failed calls stay rows without a score, left out of every number and counted.

The generators' relations to the judge are the model registry's (`nepotism models`): GPT-4-0314,
GPT-4-Turbo and the GPT-3.5-Turbo snapshots are its family; OpenChat-3.5 and Starling-LM-7B-alpha
were trained on GPT outputs (its students); Vicuna-33B learned from ChatGPT conversations (a
student of its family).
""",
    steps=[
        Step(
            (
                "import",
                Data("arena_bench_v1/model_judgment/*.jsonl.gz"),
                "--format",
                "fastchat-single",
                "--out",
                "grades.csv",
                "--json",
            ),
            save="import.json",
        ),
        Step(("metrics", "grades.csv", "--json"), save="metrics.json"),
        Step(
            ("explain", "grades.csv", "--judge", "gpt-4", "--scope", "family", "--limit", "3"),
            save="explain-family.txt",
            text=True,
        ),
    ],
    answers={"metrics.json": "`nepotism metrics grades.csv`"},
    tables=(
        Table(
            "metrics.json",
            "The leaderboard under this judge (ranks with intervals; `score` is the mean score over the questions with a score)",
            lambda r: r["metric"] == "leaderboard-rank" and variant(r, judges="all"),
            extra=("score", "score_ci_low", "score_ci_high"),
        ),
    ),
    cases={
        "explain-family.txt": "The comparisons behind the family verdict (`nepotism explain grades.csv --judge "
        "gpt-4 --scope family --limit 3`), as the command prints them. The records hold no "
        "answer texts (FastChat's single-grading files keep only the rating); the answers "
        "are in `arena_bench_v1/model_answer/`."
    },
    caveats=(
        """**The reference-answer confound.** The judge grades each answer *against GPT-4's own reference
        answer*. An answer that says what GPT-4 says earns agreement credit, whoever wrote it. GPT-4's
        snapshots and the models trained on GPT outputs write answers closest to that reference, so a
        family or student effect here mixes answer quality, the judge's self-preference and closeness to
        the reference the judge was told to trust.""",
        """**One judge.** Only GPT-4 graded these answers, so no comparison with a judge unrelated to both
        candidates is possible; `nepotism run` with a Claude or Llama judge on
        `arena_bench_v1/model_answer/` would give one.""",
        """One grade per answer and one judge prompt: no replicates, no position effect (single grading
        has no order), no per-category breakdown (the records carry no category).""",
    ),
    readme=(
        "a GPT-4 judge grading chatbots against GPT-4's own reference answers —",
        (
            ("metrics.json", "gpt-4", "default", "family", ""),
            ("metrics.json", "gpt-4", "default", "student", ""),
            ("metrics.json", "gpt-4", "default", "self", ""),
        ),
    ),
)

ROUTELLM = Page(
    name="routellm",
    title="RouteLLM MT-Bench: a GPT-4 judge grading GPT-4-Turbo against Mixtral",
    summary="RouteLLM's MT-Bench grades: a GPT-4 judge scoring GPT-4-Turbo and Mixtral-8x7B on the MT-Bench "
    "questions, both turns — the judge's family against one unrelated model, overall and per judge prompt.",
    needs="routellm",
    origin="lm-sys/RouteLLM at commit 0b64fdafe049e596a3f5657c219329f24af24198, file "
    "routellm/evals/mt_bench/judgements.jsonl (gzip it as routellm/judgements.jsonl.gz)",
    context=f"""
`{SHOWN_DATA}/routellm/judgements.jsonl.gz` (lm-sys/RouteLLM, Apache-2.0): FastChat single grades
(1–10) by `gpt-4` (FastChat's judge name in 2024; the exact snapshot is not recorded) of the answers
of gpt-4-1106-preview (GPT-4-Turbo, of the judge's family) and Mixtral-8x7B-Instruct (unrelated) to
the MT-Bench questions, first and second turn (MT-Bench's second turn is a prompt of its own here).
FastChat grades math, reasoning and coding questions with a prompt that includes GPT-4's reference
answer (`single-math-v1`), the others without (`single-v1`).
""",
    steps=[
        Step(
            (
                "import",
                Data("routellm/judgements.jsonl.gz"),
                "--format",
                "fastchat-single",
                "--benchmark",
                "mt_bench",
                "--out",
                "grades.csv",
                "--json",
            ),
            save="import.json",
        ),
        Step(("metrics", "grades.csv", "--slice", "judge_prompt", "--json"), save="metrics.json"),
        Step(
            ("explain", "grades.csv", "--judge", "gpt-4", "--scope", "family", "--limit", "3"),
            save="explain-family.txt",
            text=True,
        ),
    ],
    notes="`--slice judge_prompt` repeats every metric per judge prompt (the importer keeps FastChat's prompt "
    "name in the column `judge_prompt`); the verdicts read the whole table, the slices are in the table below.",
    answers={"metrics.json": "`nepotism metrics grades.csv --slice judge_prompt`"},
    tables=(
        Table(
            "metrics.json",
            "The family's self-preference ratio per judge prompt (records of `--slice judge_prompt`)",
            lambda r: (
                r["metric"] == "self-preference-ratio" and r.get("scope") == "family" and "slice" in (r.get("variant") or {})
            ),
        ),
        Table(
            "metrics.json",
            "The leaderboard under this judge (`score`: the mean score over the question-turns)",
            lambda r: r["metric"] == "leaderboard-rank" and variant(r, judges="all"),
            extra=("score", "score_ci_low", "score_ci_high"),
        ),
    ),
    cases={
        "explain-family.txt": "The comparisons behind the family verdict (`nepotism explain grades.csv --judge "
        "gpt-4 --scope family --limit 3`), as the command prints them."
    },
    caveats=(
        """**Family favouritism or a better model?** GPT-4-Turbo is widely held to be the stronger model,
        and one judge with two generators cannot tell a deserved gap from a favoured one: there is no
        unrelated judge and no human label here.""",
        """**The reference-answer confound, and a category confound.** On the reference prompts the judge
        is told to compare each answer with GPT-4's own answer, which a GPT-4 model is likelier to match;
        but those prompts are also exactly the math, reasoning and coding questions, where Mixtral is
        known to be weaker. A difference between the prompts fits either reading.""",
        """Two generators only, one grade per answer: the family ratio compares one related model with one
        unrelated model; it is not a property of the judge alone.""",
    ),
    readme=(
        "the same kind of judge scoring GPT-4-Turbo against Mixtral —",
        (("metrics.json", "gpt-4", "default", "family", ""),),
    ),
)

JUDGEBENCH = Page(
    name="judgebench",
    title="JudgeBench: judge accuracy on objectively labelled pairs",
    summary="JudgeBench: LLM judges and reward models choosing the objectively correct one of two responses on "
    "hard knowledge, reasoning, math and coding questions — accuracy, position effects, and why these files "
    "cannot show self-preference.",
    needs="judgebench",
    origin="ScalerLab/JudgeBench at commit e2c52c284e735e139b3daa61c206ee208f36c461, files data/*.jsonl and "
    "outputs/*.jsonl (each gzipped, the name kept)",
    context=f"""
`{SHOWN_DATA}/judgebench/` (ScalerLab/JudgeBench; the repository has no licence file): pairs of
responses to one question, **both written by the same model** (GPT-4o for some pairs,
Claude-3.5-Sonnet for the others), with an objective label saying which response is correct. The
judge outputs stored here: o1-mini on the GPT-4o pairs and Claude-3-Haiku on the Claude pairs (the
Arena-Hard judge prompt, each pair judged twice with the responses swapped), and five reward models
scoring the GPT-4o pairs. The importer names the two responses `MODEL@A` and `MODEL@B` and writes
the label as a preference reference (LLM judges) or as a correctness reference (reward models).
JudgeBench's own accuracy (its `utils/metrics.py`) counts a pair whose two games disagree or tie as
not correct, as MIPA does; where a game's reply holds conflicting verdicts, JudgeBench reads the
pair from its other game, while nepotism leaves such a pair out and counts it
(`tests/docs/test_gallery.py` recomputes JudgeBench's figure from the files).
""",
    steps=[
        Step(
            (
                "import",
                Data("judgebench/*judge_name=arena_hard*"),
                "--format",
                "judgebench",
                "--out",
                "llm-judges.csv",
                "--reference-out",
                "labels.csv",
                "--json",
            ),
            save="import-llm.json",
        ),
        Step(
            (
                "import",
                Data("judgebench/*judge_name=reward_model*"),
                "--format",
                "judgebench",
                "--out",
                "reward-models.csv",
                "--reference-out",
                "correct.csv",
                "--json",
            ),
            save="import-rm.json",
        ),
        Step(("metrics", "llm-judges.csv", "--reference", "labels.csv", "--json"), save="metrics-llm.json"),
        Step(("metrics", "reward-models.csv", "--reference", "correct.csv", "--json"), save="metrics-rm.json"),
    ],
    answers={
        "metrics-llm.json": "the LLM judges (`nepotism metrics llm-judges.csv --reference labels.csv`)",
        "metrics-rm.json": "the reward models (`nepotism metrics reward-models.csv --reference correct.csv`)",
    },
    tables=(
        Table(
            "metrics-llm.json",
            "LLM judges: accuracy (MIPA, paper 002 Eq. 5, both orders combined; a tie counts "
            "as wrong) and position consistency (the two orders agree; the response shown first chosen)",
            lambda r: (
                (r["metric"] == "mipa" and variant(r, paradigm="PWC"))
                or (r["metric"] == "position-consistency" and "slice" not in (r.get("variant") or {}))
            ),
        ),
        Table(
            "metrics-rm.json",
            "Reward models: accuracy (MIPA for direct assessment: the correct response scored "
            "higher; equal scores count as wrong)",
            lambda r: r["metric"] == "mipa" and variant(r, paradigm="DA"),
        ),
    ),
    caveats=(
        """**No self-preference, by design.** Both responses of a pair come from one model, so a judge
        cannot favour one of them for its authorship: these files measure accuracy and position effects,
        not nepotism. Each LLM judge here is of the response model's family by the registry
        (`nepotism models relation o1-mini-2024-09-12 gpt-4o-2024-05-13`: same_family; Claude-3-Haiku and
        Claude-3.5-Sonnet likewise); the files that would contrast that with an unrelated judge on the
        same pairs (GPT-4o on Claude pairs and the reverse) are 4 MiB or more upstream and were not
        copied.""",
        """**Judges on different pairs are not comparable**: o1-mini and Claude-3-Haiku saw different
        questions answered by different models.""",
        """The label is objective (the response whose final answer is correct), not a human preference.""",
    ),
    readme=(
        "objectively labelled pairs whose two responses come from one model —",
        (
            ("metrics-llm.json", "o1-mini-2024-09-12", "arena_hard", "family", ""),
            ("metrics-rm.json", "Skywork/Skywork-Reward-Gemma-2-27B", "reward_model", "self", ""),
        ),
    ),
)

MBPP_FILE = "mbpp_selfpref/llama-3.3-70b_gpt-4o_eval.jsonl"
_PAPER_004 = ("self-preference-ratio", "judge-accuracy", "legitimate-self-preference-ratio", "harmful-self-preference-propensity")


def _paper_004(r: dict) -> bool:
    """Paper 004's four metrics for the judge's own answers against the unrelated model, per evaluatee (SPR pooled:
    with one evaluatee its per-evaluatee record is the same number; judge accuracy on all of D_diff, not on the
    harmful cases only)."""
    return (
        r["metric"] in _PAPER_004
        and r.get("scope") == "self"
        and variant(r, opponents="unrelated", examples=None)
        and variant(r, averaging=None if r["metric"] == "self-preference-ratio" else "per-evaluatee")
    )


MBPP = Page(
    name="mbpp",
    title="MBPP: Llama-3.3-70B judging its own code against GPT-4o's (paper 004's data)",
    summary="Paper 004's recorded MBPP data: Llama-3.3-70B judging its own code against GPT-4o's, with the recorded "
    "test results as ground truth — how often it prefers its own code, and whether it does so when its own "
    "code fails and GPT-4o's passes.",
    needs="mbpp_selfpref",
    origin="Taslim-M/mitigating_self_preference at commit 12a285f730097db14d89692fed7d2a541a5bb6c2, file "
    "task_mbpp/data/llama-3.3-70b_gpt-4o_eval.jsonl",
    context=f"""
`{SHOWN_DATA}/{MBPP_FILE}` (Taslim-M/mitigating_self_preference; the repository has no licence
file, so the file is read from beside the repository and not bundled): MBPP problems with the code
of Llama-3.3-70B (the judge) and of GPT-4o, whether each passed its tests, and the judge's verdict
on each pair in both presentation orders, with its probabilities for "first", "tie" and "second".
The judge's reply is often not one of A / T / B (mostly a bare code fence); `--verdicts reply`
leaves such a game unparsed, `--verdicts probabilities` reads the most probable label instead, as
paper 004 does, so the page audits both readings. The ground truth is the recorded test result,
from stronger (MBPP+ style) tests than the three `assert` lines in the prompt. The same audit with
our own sandboxed re-execution of the code is
[`examples/mbpp_audit/`](../../examples/mbpp_audit/README.md) (`bash examples/mbpp_audit/audit.sh`,
a few minutes; this page leaves the sandbox out).
""",
    steps=[
        step
        for source in ("reply", "probabilities")
        for step in (
            Step(
                (
                    "import",
                    Data(MBPP_FILE),
                    "--format",
                    "mbpp-selfpref",
                    "--canonical",
                    "--verdicts",
                    source,
                    "--out",
                    f"judgments-{source}.csv",
                    "--reference-out",
                    "recorded-correctness.csv",
                    "--texts-out",
                    "texts.jsonl",
                    "--json",
                ),
                save=f"import-{source}.json",
            ),
            Step(
                ("metrics", f"judgments-{source}.csv", "--reference", "recorded-correctness.csv", "--json"),
                save=f"results-{source}.json",
            ),
        )
    ]
    + [
        Step(
            (
                "explain",
                "judgments-probabilities.csv",
                "--reference",
                "recorded-correctness.csv",
                "--judge",
                "llama-3.3-70b-instruct",
                "--scope",
                "self",
                "--texts",
                "texts.jsonl",
                "--limit",
                "1",
            ),
            save="explain-self.txt",
            text=True,
        )
    ],
    answers={
        "results-reply.json": "verdicts from the judge's reply (`--verdicts reply`)",
        "results-probabilities.json": "verdicts from the label probabilities (`--verdicts probabilities`)",
    },
    tables=(
        Table(
            "results-reply.json",
            "Paper 004's metrics, verdicts from the reply (SPR Eq. 2; on D_diff, the "
            "problems where exactly one program passes: judge accuracy Eq. 3, LSPR Eq. 4, HSPP Eq. 5; "
            "`preference=probability`: the P(own) share instead of the verdict)",
            _paper_004,
        ),
        Table(
            "results-probabilities.json",
            "Paper 004's metrics, verdicts from the label probabilities",
            lambda r: _paper_004(r) and "preference" not in (r.get("variant") or {}),
        ),
    ),
    cases={
        "explain-self.txt": "The comparisons behind the verdict from the label probabilities, with both programs "
        "(`nepotism explain judgments-probabilities.csv --reference recorded-correctness.csv "
        "--judge llama-3.3-70b-instruct --scope self --texts texts.jsonl --limit 1`), as the "
        "command prints them."
    },
    caveats=(
        """**One judge, one opponent**: Llama-3.3-70B against GPT-4o only. Without a second judge on the
        same pairs nothing separates self-preference from the judge's taste in code.""",
        """**The ground truth is the recorded test result.** Re-running the visible tests in our sandbox
        does not always agree with it (`examples/mbpp_audit/README.md` says how often).""",
    ),
    readme=(
        "Llama-3.3-70B judging its own code against GPT-4o's, with the recorded test results —",
        (
            ("results-reply.json", "llama-3.3-70b-instruct", "default", "self", "verdicts from the reply"),
            ("results-probabilities.json", "llama-3.3-70b-instruct", "default", "self", "verdicts from the label probabilities"),
        ),
    ),
)

ALPACA = Page(
    name="alpaca-eval",
    title="AlpacaEval: GPT-4-Turbo, GPT-4 and Claude 2 judging against a baseline",
    summary="AlpacaEval's recorded judgments: GPT-4-Turbo, GPT-4 and Claude 2 judging up to 60 chatbots against a "
    "baseline answer — how often a judge prefers its own answers, and what a single-baseline design cannot "
    "show.",
    needs="alpaca_eval",
    origin="tatsu-lab/alpaca_eval at commit cd543a149df89434d8a54582c0151c0b945c3d20; annotations_compact.csv.gz "
    "is DERIVED (one row per judged pair from its results/*/*/annotations.json files, texts dropped: "
    "annotator_config, annotator, instruction_id, dataset, generator_1, generator_2, preference, "
    "len_output_1/2, results_dir)",
    context=f"""
`{SHOWN_DATA}/alpaca_eval/annotations_compact.csv.gz` (tatsu-lab/alpaca_eval; the AlpacaEval set is
CC BY-NC 4.0, the outputs are subject to their providers' terms; a **derived** file: one row per
judged pair, the texts dropped; annotation files of 4 MiB and more were not copied, so some
configurations are partial). AlpacaEval compares every generator's answer to each of its 805
instructions with one **baseline** answer and records which of the two the judge preferred. It
randomises, pair by pair, which answer the judge sees first and stores the preference relative to
`output_1` (the baseline) after undoing the shuffle; the order actually shown is not in the file.
The importer writes the baseline as `model_a`, which is therefore *not* the answer shown first, and
every pair is judged once.

Each annotator configuration is a condition of its judge: `weighted_alpaca_eval_gpt4_turbo`
(AlpacaEval 2.0's default), `alpaca_eval_gpt4_turbo_fn` (function calling) and
`alpaca_eval_cot_gpt4_turbo_fn` (chain of thought) are GPT-4-Turbo (gpt4_1106_preview) against its
own answers as the baseline; `alpaca_eval_gpt4` (AlpacaEval 1.0's default) is GPT-4-0314 and
`alpaca_eval_gpt4_0613` GPT-4-0613, both against text-davinci-003; `bedrock_claude` (community) is
Claude 2 against text-davinci-003.
""",
    steps=[
        Step(
            (
                "import",
                Data("alpaca_eval/annotations_compact.csv.gz"),
                "--format",
                "alpaca-eval-compact",
                "--out",
                "judgments.parquet",
                "--json",
            ),
            save="import.json",
        ),
        Step(("metrics", "judgments.parquet", "--json"), save="metrics.json"),
        Step(
            (
                "explain",
                "judgments.parquet",
                "--judge",
                "gpt4_1106_preview",
                "--condition",
                "weighted_alpaca_eval_gpt4_turbo",
                "--scope",
                "self",
                "--limit",
                "3",
            ),
            save="explain-self.txt",
            text=True,
        ),
    ],
    answers={"metrics.json": "`nepotism metrics judgments.parquet`"},
    tables=(
        Table(
            "metrics.json",
            "Two judges on the same pairs (paired win-rate gaps; `other_judge_relation` says "
            "whether the other judge is unrelated to the candidates, which the verdicts require)",
            lambda r: r["metric"] == "paired-win-rate-gap",
            extra=("win_rate_this_judge", "win_rate_other_judge"),
        ),
    ),
    cases={
        "explain-self.txt": "The comparisons behind AlpacaEval 2.0's default judge's verdict on its own answers "
        "(`nepotism explain judgments.parquet --judge gpt4_1106_preview --condition "
        "weighted_alpaca_eval_gpt4_turbo --scope self --limit 3`), as the command prints "
        "them; the compact file holds no texts."
    },
    caveats=(
        """**Position effects**: the order shown to the judge is not recorded and each pair is judged once,
        so no position correction (paper 004 Eq. 1) is possible; AlpacaEval's randomisation makes the
        position effect noise rather than bias toward the baseline, but it stays in every number.""",
        """**A judge that is its own baseline** (AlpacaEval 2.0): every comparison of GPT-4-Turbo pits its
        own answer against another model's, so its family and students meet only its own answers, and
        answer quality and favouritism cannot be told apart without another judge on the same pairs.""",
        """**Partial configurations**: 165 annotation files of 4 MiB and more (mostly
        `weighted_alpaca_eval_gpt4_turbo`) were not copied
        (`alpaca_eval/annotation_files_index.json`), so that leaderboard is incomplete here.""",
        """Length-controlled win rates (AlpacaEval 2.0's headline) are not computed; the texts are not in
        this file (AlpacaEval's `annotations.json` with `--format alpaca-eval` keeps them).""",
    ),
    readme=(
        "AlpacaEval's judges against a baseline answer —",
        (
            ("metrics.json", "gpt4_1106_preview", "weighted_alpaca_eval_gpt4_turbo", "self", ""),
            ("metrics.json", "claude-2", "bedrock_claude", "self", ""),
            ("metrics.json", "gpt4_0314", "alpaca_eval_gpt4", "family", ""),
        ),
    ),
)

PAGES: dict[str, Page] = {p.name: p for p in (ARENA, ROUTELLM, JUDGEBENCH, ALPACA, MBPP)}


# ---------------------------------------------------------------------------------------------


def absent(page: Page, data: Path) -> str | None:
    """Why the page cannot run on ``data`` (a file it reads is absent: where it comes from), or None."""
    for step in page.steps:
        try:
            step.files(data)
        except Missing as missing:
            return (
                f"gallery: page {page.name} reads {missing} under the data folder, and {data.resolve()} has no "
                f"such file.\nThe gallery's data are public files kept beside the repository (../shared/data), "
                f"not in it. These come from {page.origin}.\nPut them under DIR/{page.needs}/ and run: "
                f"scripts/gallery.py {page.name} --data DIR\n"
            )
    return None


def build(name: str, data: Path) -> tuple[str, str, dict[str, Any]]:
    """The page's text, its README bullet and its figures."""
    page = PAGES[name]
    with tempfile.TemporaryDirectory(prefix=f"gallery-{name}-") as work:
        outputs = run_steps(page.steps, data.resolve(), Path(work))
    return render(page, outputs), readme_bullet(page, outputs), figures(page, outputs)


_BULLETS_START = "<!-- gallery bullets: written by scripts/gallery.py from each page's verdicts -->"
_BULLETS_END = "<!-- end of gallery bullets -->"


def with_bullet(readme: str, name: str, bullet: str) -> str:
    """The README with page ``name``'s bullet (in the marked block) replaced by ``bullet``, or appended."""
    head, start, rest = readme.partition(_BULLETS_START)
    block, end, tail = rest.partition(_BULLETS_END)
    if not start or not end:
        raise SystemExit(f"gallery: the README has no block between {_BULLETS_START} and {_BULLETS_END}")
    bullets: list[list[str]] = []
    for line in block.strip("\n").splitlines():
        if line.startswith("* ["):
            bullets.append([line])
        elif bullets:
            bullets[-1].append(line)
    marker = f"(docs/gallery/{name}.md)"
    kept = ["\n".join(b) if marker not in b[0] else bullet for b in bullets]
    if not any(marker in b[0] for b in bullets):
        kept.append(bullet)
    return head + start + "\n" + "\n".join(kept) + "\n" + end + tail


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("pages", nargs="*", metavar="PAGE", help=f"one of {', '.join(PAGES)}")
    parser.add_argument("--all", action="store_true", help="every page")
    parser.add_argument(
        "--data",
        type=Path,
        default=DEFAULT_DATA,
        help="the folder of the public data files (default ../shared/data beside the repository)",
    )
    parser.add_argument("--out", type=Path, default=GALLERY, help="folder of the pages (default docs/gallery)")
    parser.add_argument("--readme", type=Path, default=README, help="the README whose gallery bullets to write")
    parser.add_argument("--check", action="store_true", help="write nothing; exit 1 when a page or bullet differs")
    parser.add_argument("--json", action="store_true", help="print each page's verdicts and tables as JSON")
    args = parser.parse_args(argv)
    names = list(PAGES) if args.all else args.pages
    if not names:
        parser.error("name a PAGE or --all")
    for name in names:
        if name not in PAGES:
            parser.error(f"unknown page {name!r}: pages are {', '.join(PAGES)}")
    if not EXE.exists():
        parser.error(f"the nepotism executable is not installed beside {sys.executable}")
    for name in names:
        why = absent(PAGES[name], args.data)
        if why:
            parser.exit(2, why)  # before any command runs: nothing written
    status, shown = 0, {}
    readme = args.readme.read_text(encoding="utf-8")
    for name in names:
        text, bullet, shown[name] = build(name, args.data)
        target = args.out / f"{name}.md"
        updated = with_bullet(readme, name, bullet)
        if args.check:
            if not target.exists() or target.read_text(encoding="utf-8") != text:
                print(f"{target} differs from what the data gives now: run scripts/gallery.py {name}", file=sys.stderr)
                status = 1
            if updated != readme:
                print(
                    f"{args.readme}: the gallery bullet of {name} differs from the page's verdicts: run "
                    f"scripts/gallery.py {name}",
                    file=sys.stderr,
                )
                status = 1
        else:
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(text, encoding="utf-8")
            readme = updated
            if not args.json:
                print(f"wrote {target}")
    if not args.check and readme != args.readme.read_text(encoding="utf-8"):
        args.readme.write_text(readme, encoding="utf-8")
        if not args.json:
            print(f"wrote the gallery bullets of {args.readme}")
    if args.json:
        print(json.dumps(shown, indent=2, sort_keys=True))
    return status


if __name__ == "__main__":
    sys.exit(main())
