"""PLS by question type and by judgment dimension, labelled by a categoriser model (paper 000 §5.6).

Question types: a categoriser model sorts each evaluation instruction into one of
`QUESTION_TYPES` (the ``categorise`` protocol, target = the instruction). Judgment dimensions:
the categoriser sorts each pairwise judgment's written rationale (needs judges that write one:
``reasoning = "cot"`` in text mode) into `DIMENSIONS` (target = the rationale). Paper 000 maps a
rationale to "one or multiple" dimensions; two ways here: ``labels = "main"`` (`plan_dimensions`:
one categorise call per rationale, its main dimension) or ``"several"`` (`plan_dimension_flags`:
one yes/no categorise call per rationale and dimension, so a rationale belongs to every dimension
it is said to weigh; 8× the calls). PLS is then recomputed on the comparisons of each label
(`category_records`); a label with too few comparisons gets an undefined estimate with its note,
not a number. An unreadable label leaves its item out, counted under ``unlabelled``.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from typing import Any

from nepotism.judging import plan_categorise
from nepotism.leakage.lineage import Student
from nepotism.metrics import Bootstrap
from nepotism.leakage.scores import comparisons_frame, pls_records
from nepotism.records import Instance, Judgment, Response

__all__ = [
    "DIMENSIONS",
    "DIMENSION_LABELS",
    "QUESTION_TYPES",
    "category_records",
    "dimension_flags",
    "labels_from",
    "plan_dimension_flags",
    "plan_dimensions",
    "plan_question_types",
]

#: How judgment dimensions are labelled: the main one per rationale, or every one it weighs.
DIMENSION_LABELS = ("main", "several")
_FLAG = "dimension:"  # the condition of a yes/no dimension task: "dimension:<name>"

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


def plan_question_types(
    instances: Sequence[Instance], categoriser: str, *, options: Mapping[str, Any] | None = None
) -> list[Any]:
    """One categorise task per instruction for ``categoriser``."""
    opts = {"categories": QUESTION_TYPES, **dict(options or {})}
    return plan_categorise(instances, [categoriser], options=opts)


def plan_dimensions(
    instances: Sequence[Instance], judgments: Sequence[Judgment], categoriser: str, *, options: Mapping[str, Any] | None = None
) -> list[Any]:
    """One categorise task per parsed pairwise judgment that has written text (its rationale).

    The rationale goes in as a response whose generator name is the judgment id, so labels map
    back to judgments (`labels_from`)."""
    by_instance = _rationales(judgments)
    if not by_instance:
        return []
    opts = {"categories": DIMENSIONS, **dict(options or {})}
    wanted = [i for i in instances if i.id in by_instance]
    return plan_categorise(wanted, [categoriser], responses_by_instance=by_instance, options=opts)


def _rationales(judgments: Sequence[Judgment]) -> dict[str, list[Response]]:
    """Each parsed pairwise judgment's written text, as a response named by the judgment's id."""
    by_instance: dict[str, list[Response]] = {}
    for j in judgments:
        if j.protocol == "pairwise" and j.status == "parsed" and (j.raw_output or "").strip():
            by_instance.setdefault(j.instance_id, []).append(Response(j.instance_id, j.id, j.raw_output or ""))
    return by_instance


def plan_dimension_flags(
    instances: Sequence[Instance], judgments: Sequence[Judgment], categoriser: str, *, options: Mapping[str, Any] | None = None
) -> list[Any]:
    """For every rationale and every dimension but "other": does the rationale weigh it? (yes | no)

    Each dimension's tasks carry condition ``dimension:<name>`` so `dimension_flags` can tell them
    apart; a rationale may then belong to several dimensions, as paper 000 §5.6 allows."""
    by_instance = _rationales(judgments)
    if not by_instance:
        return []
    wanted = [i for i in instances if i.id in by_instance]
    tasks: list[Any] = []
    for name, description in DIMENSIONS:
        if name == "other":
            continue
        categories = (("yes", f"the text weighs {name}: {description}"), ("no", f"the text does not weigh {name}"))
        tasks += plan_categorise(
            wanted,
            [categoriser],
            responses_by_instance=by_instance,
            condition=_FLAG + name,
            options={"categories": categories, **dict(options or {})},
        )
    return tasks


def dimension_flags(judgments: Sequence[Judgment]) -> tuple[dict[str, set[str]], int]:
    """{pairwise judgment id: the dimensions its rationale weighs} from `plan_dimension_flags`'s
    judgments, and the number of yes/no answers that could not be read (those leave the rationale
    out of that dimension only). A rationale said to weigh none is in no slice."""
    flags: dict[str, set[str]] = {}
    unreadable = 0
    for j in judgments:
        if j.protocol != "categorise" or not j.condition.startswith(_FLAG) or not j.candidates:
            continue
        if j.status != "parsed" or not j.verdict:
            unreadable += 1
            continue
        weighed = flags.setdefault(j.candidates[0], set())
        if j.verdict == "yes":
            weighed.add(j.condition[len(_FLAG) :])
    return flags, unreadable


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


def category_records(
    pairwise: Sequence[Judgment],
    students: Sequence[Student],
    judge_of: Mapping[str, str],
    registry: Any,
    *,
    question_types: Mapping[str, str] | None = None,
    dimensions: Mapping[str, str | Collection[str]] | None = None,
    bootstrap: Bootstrap | None = None,
) -> list[dict[str, Any]]:
    """PLS records per question type and per judgment dimension (``variant.slice``).

    ``dimensions`` maps a pairwise judgment's id to its dimension (main label) or to the set of
    dimensions its rationale weighs (several labels: the comparison then counts in each)."""
    records: list[dict[str, Any]] = []
    if question_types:
        comp = comparisons_frame(pairwise)
        labelled = comp["instance_id"].astype(str).map(question_types)
        for label in sorted(set(labelled.dropna())):
            part = comp[labelled == label]
            for r in pls_records(
                part,
                students,
                judge_of,
                registry,
                bootstrap=bootstrap,
                ties=_SLICE_TIES,
                extra_variant={"slice": {"question_type": label}},
            ):
                if r["metric"] == "preference-leakage-score":
                    records.append(r)
        missing = int(labelled.isna().sum())
        if missing:
            records.append(
                {
                    "metric": "category-coverage",
                    "judge": None,
                    "generator": None,
                    "pair": None,
                    "variant": {"slice": "question_type"},
                    "value": missing / len(comp),
                    "ci_low": None,
                    "ci_high": None,
                    "n": int(len(comp)),
                    "n_excluded": missing,
                    "excluded": {"unlabelled": missing},
                    "note": "comparisons without a question type",
                }
            )
    if dimensions:
        sets = {key: ({value} if isinstance(value, str) else set(value)) for key, value in dimensions.items()}
        for label in sorted(set().union(*sets.values())):
            chosen = [j for j in pairwise if label in sets.get(j.id, ())]
            comp = comparisons_frame(chosen)
            if comp.empty:
                continue
            for r in pls_records(
                comp,
                students,
                judge_of,
                registry,
                bootstrap=bootstrap,
                ties=_SLICE_TIES,
                extra_variant={"slice": {"dimension": label}},
            ):
                if r["metric"] == "preference-leakage-score":
                    records.append(r)
    return records
