"""The report's "Cases behind the verdicts": the explanations of `nepotism.analyses.cases`, laid out.

`case_sections` turns the explanations (computed by the command from the judgments and passed to
`nepotism.report.full.build_report`: the report renders, it does not audit) into one section per
(judge, relation) — the anchor the Summary's "cases behind it" links to,
``cases-<judge, spaces as _>-<scope>`` — holding each condition's verdict sentence, how the cases
were chosen, and per direction its cases: every judge's verdict on the pair, the reference, and
with texts the prompt and both answers side by side. Every string is data and stays text: the
template autoescapes it, `cases_markdown` escapes it with the report's Markdown escaper. Left out:
finding the cases (`nepotism.analyses.cases`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from nepotism.analyses.cases import Explanation, compared_words, one_line, reading_words, truth_words
from nepotism.analyses.verdicts import RELATION_LABELS, SCOPE_WORDS

__all__ = ["case_anchor", "case_links", "case_sections", "cases_markdown"]

#: Characters of a text shown in the Markdown report (the HTML shows it whole, in a scrolling box).
_MD_CHARS = 300


def case_anchor(judge: str, scope: str) -> str:
    """The id of a (judge, relation)'s cases section, as the Summary's links spell it."""
    return f"cases-{judge.replace(' ', '_')}-{scope}"


def case_links(explanations: Mapping[str, Explanation] | None) -> dict[str, bool]:
    """``judge|condition|scope`` → True for every verdict whose cases the page shows (the Summary links those)."""
    return {key: True for key, e in (explanations or {}).items() if e.cases}


def _case(e: Explanation, case: Any) -> dict[str, Any]:
    judge = e.verdict.judge
    own = next((j for j in case.judges if j["judge"] == judge and j["role"] == "this judge"), None)
    said = reading_words(e.kind, case, own)
    compared = compared_words(e.kind, case)
    truth = truth_words(case)
    parts = [f"{judge}: {said}"]
    if compared:
        parts.append(("the other judge: " if e.metric == "paired-win-rate-gap" else "unrelated judges' mean: ") + compared)
    if truth:
        parts.append(f"the reference: {truth}")
    return {
        "instance_id": case.instance_id,
        "short_id": one_line(case.instance_id),
        "related": case.related,
        "other": case.other,
        "summary": "; ".join(parts),
        "judges": [
            {
                "judge": j["judge"],
                "role": j["role"],
                "reading": reading_words(e.kind, case, j),
                "condition": j.get("condition") if j.get("condition") != e.verdict.condition else None,
                "this": j["role"] == "this judge",
            }
            for j in case.judges
        ],
        "truth": truth,
        "compared": compared,
        "prompt": case.prompt,
        "text_related": case.text_related,
        "text_other": case.text_other,
        "texts": e.texts is not None,
    }


def case_sections(explanations: Mapping[str, Explanation] | None) -> list[dict[str, Any]]:
    """One dict per (judge, relation) with cases: ``id`` (the anchor), ``judge``, ``scope``,
    ``relation`` and ``conditions`` — each a condition's verdict status and sentence, how the cases
    were chosen, its note, the directions (``title``, ``n``, ``cases``) and what the rest are."""
    sections: dict[tuple[str, str], dict[str, Any]] = {}
    for e in (explanations or {}).values():
        if not e.cases:
            continue
        v = e.verdict
        section = sections.setdefault(
            (v.judge, v.scope),
            {
                "id": case_anchor(v.judge, v.scope),
                "judge": v.judge,
                "judge_id": v.judge_id,
                "scope": v.scope,
                "relation": RELATION_LABELS[v.scope],
                "words": SCOPE_WORDS[v.scope],
                "conditions": [],
            },
        )
        section["conditions"].append(
            {
                "condition": v.condition,
                "status": v.status,
                "sentence": v.sentence,
                "how": e.how,
                "note": e.note,
                "rest": e.rest,
                "n": e.n,
                "counted": e.count_words,
                "excluded": e.excluded,
                "metric": e.metric,
                "record": e.record,
                "texts": dict(e.texts) if e.texts is not None else None,
                "groups": [
                    {
                        "title": g.title[0].upper() + g.title[1:],
                        "n": g.n,
                        "counted": e.counted(g.n),
                        "shown": len(g.cases),
                        "cases": [_case(e, c) for c in g.cases],
                    }
                    for g in e.groups
                ],
            }
        )
    for section in sections.values():
        section["conditions"].sort(key=lambda c: c["condition"])
    return [sections[k] for k in sorted(sections)]


def _under(judge: Mapping[str, Any]) -> str:
    return f" under '{judge['condition']}'" if judge.get("condition") else ""


def _cut(text: str | None) -> str:
    if text is None:
        return "(not in the texts)"
    return text if len(text) <= _MD_CHARS else text[:_MD_CHARS] + f"… ({len(text) - _MD_CHARS:,} more characters)"


def cases_markdown(sections: list[dict[str, Any]], md: Callable[[Any], str]) -> list[str]:
    """The cases section as Markdown lines (``md`` escapes a string for a line), texts cut short."""
    if not sections:
        return []
    out = [
        "## Cases behind the verdicts",
        "",
        'The comparisons each verdict rests on, the most telling first (docs/answer.md, "The cases behind a '
        'verdict"); `nepotism explain` prints them for one judge and relation.',
        "",
    ]
    for section in sections:
        for c in section["conditions"]:
            out += [
                f"### {md(section['judge'])}, {md(section['words'])} (condition {md(c['condition'])})",
                "",
                md(c["sentence"]),
                "",
                f"Cases: {md(c['how'])}; {md(c['counted'])}.",
                "",
            ]
            if c["note"]:
                out += [f"Note: {md(c['note'])}", ""]
            for g in c["groups"]:
                out += [f"**{md(g['title'])}**: {md(g['counted'])}" + (f", {g['shown']} shown" if g["shown"] else ""), ""]
                for case in g["cases"]:
                    out.append(
                        f"- {md(case['short_id'])}: {md(case['related'])} against {md(case['other'])} — "
                        f"{md(case['summary'])}; every judge: "
                        + "; ".join(
                            f"{md(j['judge'])}{md(_under(j))} ({md(j['role'])}): {md(j['reading'])}" for j in case["judges"]
                        )
                    )
                    if case["texts"]:
                        if case["prompt"] is not None:
                            out.append(f"  - prompt: {md(_cut(case['prompt']))}")
                        out.append(f"  - answer of {md(case['related'])}: {md(_cut(case['text_related']))}")
                        out.append(f"  - answer of {md(case['other'])}: {md(_cut(case['text_other']))}")
                out.append("")
            if c["rest"]:
                out += [f"Also: {md(c['rest'])}.", ""]
    return out
