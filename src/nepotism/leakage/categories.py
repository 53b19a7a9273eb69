"""PLS by question type and by judgment dimension, labelled by a categoriser model (paper 000 §5.6).

Question types: a categoriser model sorts each evaluation instruction into one of
`QUESTION_TYPES` (the ``categorise`` protocol, target = the instruction). Judgment dimensions:
the categoriser sorts each pairwise judgment's written rationale (needs judges that write one:
``reasoning = "cot"`` in text mode) into one of `DIMENSIONS` (target = the rationale). The paper
lets one rationale touch several dimensions; the categorise protocol gives one label per call,
the rationale's main dimension. PLS is then recomputed on the comparisons of each label
(`category_records`); a label with too few comparisons gets an undefined estimate with its note,
not a number. An unreadable label leaves its item out, counted under ``unlabelled``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from nepotism.judging import plan_categorise
from nepotism.leakage.lineage import Student
from nepotism.metrics import Bootstrap
from nepotism.leakage.scores import comparisons_frame, pls_records
from nepotism.records import Instance, Judgment, Response

__all__ = ["DIMENSIONS", "QUESTION_TYPES", "category_records", "labels_from", "plan_dimensions",
           "plan_question_types"]

#: PLS tie rules per slice: paper 000's (ties = loss) and ½, which the report's verdict-vs-probability
#: plot compares (the probability score is a soft outcome, ½-ties by construction).
_SLICE_TIES = ("loss", "half")

QUESTION_TYPES: tuple[tuple[str, str], ...] = (
    ("programming", "writing, explaining or fixing code; software and computing"),
    ("mathematics", "calculations, proofs, probability and statistics"),
    ("science", "natural science, engineering, medicine and technology facts"),
    ("business", "money, companies, markets, law and work"),
    ("writing", "composing, editing, summarising or translating text; creative writing"),
    ("daily-life", "everyday advice, relationships, health habits, travel, food, hobbies"),
    ("other", "anything that fits none of the above"),
)

DIMENSIONS: tuple[tuple[str, str], ...] = (
    ("factuality", "whether the facts and data stated are correct"),
    ("helpfulness", "whether the answer addresses what the user asked for"),
    ("coherence", "whether the answer is logically consistent from start to end"),
    ("richness", "depth, detail, context and examples"),
    ("creativity", "originality of ideas or solutions"),
    ("responsibility", "safety, feasibility and care about consequences"),
    ("completeness", "whether important parts of the question are left out"),
    ("clarity", "how easy the answer is to read and follow"),
    ("other", "any other aspect"),
)


def plan_question_types(instances: Sequence[Instance], categoriser: str, *,
                        options: Mapping[str, Any] | None = None) -> list[Any]:
    """One categorise task per instruction for ``categoriser``."""
    opts = {"categories": QUESTION_TYPES, **dict(options or {})}
    return plan_categorise(instances, [categoriser], options=opts)


def plan_dimensions(instances: Sequence[Instance], judgments: Sequence[Judgment], categoriser: str, *,
                    options: Mapping[str, Any] | None = None) -> list[Any]:
    """One categorise task per parsed pairwise judgment that has written text (its rationale).

    The rationale goes in as a response whose generator name is the judgment id, so labels map
    back to judgments (`labels_from`)."""
    by_instance: dict[str, list[Response]] = {}
    for j in judgments:
        if j.protocol == "pairwise" and j.status == "parsed" and (j.raw_output or "").strip():
            by_instance.setdefault(j.instance_id, []).append(Response(j.instance_id, j.id, j.raw_output or ""))
    if not by_instance:
        return []
    opts = {"categories": DIMENSIONS, **dict(options or {})}
    wanted = [i for i in instances if i.id in by_instance]
    return plan_categorise(wanted, [categoriser], responses_by_instance=by_instance, options=opts)


def labels_from(judgments: Sequence[Judgment], *, target: str) -> tuple[dict[str, str], int]:
    """{instance id (target "instance") or judgment id (target "response"): label} and the number
    of items without a readable label."""
    labels: dict[str, str] = {}
    unreadable = 0
    for j in judgments:
        if j.protocol != "categorise":
            continue
        key = j.instance_id if target == "instance" else (j.candidates[0] if j.candidates else None)
        if key is None:
            continue
        if j.status == "parsed" and j.verdict:
            labels[key] = j.verdict
        else:
            unreadable += 1
    return labels, unreadable


def category_records(pairwise: Sequence[Judgment], students: Sequence[Student], judge_of: Mapping[str, str],
                     registry: Any, *, question_types: Mapping[str, str] | None = None,
                     dimensions: Mapping[str, str] | None = None,
                     bootstrap: Bootstrap | None = None) -> list[dict]:
    """PLS records per question type and per judgment dimension (``variant.slice``)."""
    records: list[dict] = []
    if question_types:
        comp = comparisons_frame(pairwise)
        labelled = comp["instance_id"].astype(str).map(question_types)
        for label in sorted(set(labelled.dropna())):
            part = comp[labelled == label]
            for r in pls_records(part, students, judge_of, registry, bootstrap=bootstrap, ties=_SLICE_TIES,
                                 extra_variant={"slice": {"question_type": label}}):
                if r["metric"] == "preference-leakage-score":
                    records.append(r)
        missing = int(labelled.isna().sum())
        if missing:
            records.append({"metric": "category-coverage", "judge": None, "generator": None, "pair": None,
                            "variant": {"slice": "question_type"}, "value": missing / len(comp), "ci_low": None,
                            "ci_high": None, "n": int(len(comp)), "n_excluded": missing,
                            "excluded": {"unlabelled": missing}, "note": "comparisons without a question type"})
    if dimensions:
        for label in sorted(set(dimensions.values())):
            chosen = [j for j in pairwise if dimensions.get(j.id) == label]
            comp = comparisons_frame(chosen)
            if comp.empty:
                continue
            for r in pls_records(comp, students, judge_of, registry, bootstrap=bootstrap, ties=_SLICE_TIES,
                                 extra_variant={"slice": {"dimension": label}}):
                if r["metric"] == "preference-leakage-score":
                    records.append(r)
    return records
