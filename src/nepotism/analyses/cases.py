"""The cases behind a judge verdict: the comparisons a `Verdict` rests on, the most telling first.

A verdict (`nepotism.analyses.verdicts`) is one number; this module finds, in the judgment table
its record was measured on, the comparisons that make it — what ``nepotism explain`` prints and
the report's "Cases behind the verdicts" section shows. Every table kind is read as the metrics
read it: one value per (judge, condition, prompt, pair of answers) from
`nepotism.analyses.matched.pair_values` — a pairwise verdict with both presentation orders
combined by `nepotism.analyses.comparisons.build_comparisons` (1 = the first answer preferred,
½ tie, 0 the other), a pointwise score difference, a rubric met-rate difference —, each oriented
to the judge's relative (the *related* answer) against the *other* answer.

What is selected depends on the rung of the evidence ladder the verdict (or, for "too little
data", its strongest reading) stands on:

- ``matched`` (`matched-bias`): the rows of `nepotism.analyses.matched.matched_rows` — the ones
  the metric averages, with the same reference judges (unrelated to both answers) — split into
  those where the judge is kinder to its relative than the reference judges' mean and those where
  it is harsher, each ordered by |value − reference mean|. A ``paired-win-rate-gap`` verdict: the
  same against the one other judge of its record, on its one pair of models.
- ``reference`` (`equal-opportunity-bias`, `hspp-ratio`): the comparisons where the judge sided
  with its relative although the reference prefers the other answer (the harmful direction), and
  those where it sided against its relative although the reference prefers the relative; each
  ordered by how strongly the judge sided (the score gap for pointwise and rubric tables). The
  truth is the one the record was measured against (`nepotism.analyses.suite.references_for`:
  human labels — one side per pair, the one more labels prefer, the counts shown —, correctness
  made into preferences, the reference score, or the rubric reference's met-rate).
- ``alone`` (`self-preference-ratio`): the comparisons the judge decided for its relative and
  those against it, the strongest first, with the note that without a reference nothing says
  which answer was right (a truth, where one exists, is shown beside each case, but the verdict
  does not rest on it).

Opponents are those of the record: unrelated to the judge, or any less related answer (variant
``opponents``), or for the HSPP ratio every answer outside the judge's family (paper 002's S_J),
through the suite's own selection (`nepotism.analyses.suite._self_rows`). Each case also lists
every judge's reading of the same pair on the same prompt — under the verdict's condition first,
then under the others (AlpacaEval's annotator configurations are conditions) — and who each judge
is to the two answers. Order is deterministic: the largest disagreement first, then (where a truth is
known) those the truth contradicts, then the prompt's id, then the answers' names; ``limit``
cases per direction, with how many there are in all.

`read_texts` reads the answers' texts (JSON Lines as ``nepotism import --texts-out`` writes
them — ``instance_id``, ``model`` (or ``generator``), ``text``, optional ``prompt`` — or a
store, where ``nepotism run`` keeps the responses and prompts of its output folder's tables),
keeping only the answers the cases show; `with_texts` puts them beside the cases. What this
module leaves out: auditing (`nepotism.audit`, which makes the verdicts), rendering
(``nepotism explain``, `nepotism.report.cases`).
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Callable, Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, TypeVar

import numpy as np
import pandas as pd

from nepotism.errors import InputError
from nepotism.models import Registry
from nepotism.results import Verdict, record_key

_T = TypeVar("_T")

__all__ = [
    "CASE_LIMIT",
    "Case",
    "CaseFinder",
    "CaseGroup",
    "Explanation",
    "Texts",
    "compared_words",
    "find_verdict",
    "read_texts",
    "reading_words",
    "truth_words",
    "verdict_key",
    "wanted_answers",
    "with_texts",
]

#: How many cases of each direction are shown by default.
CASE_LIMIT = 5

_PAIR = ["condition", "instance_id", "model_x", "model_y"]
_CASE_KINDS = ("pairwise", "pointwise", "rubric")


def verdict_key(verdict: Verdict) -> str:
    """``judge|condition|scope``: how the report names a verdict's cases."""
    return f"{verdict.judge}|{verdict.condition}|{verdict.scope}"


# ----------------------------------------------------------------------------------- results
@dataclass(frozen=True)
class Case:
    """One comparison behind a verdict: the judge's reading of ``related`` (its relative's answer)
    against ``other`` on prompt ``instance_id``.

    ``value``: the judge's value for the related answer — pairwise its preference (1 related, ½
    tie, 0 other; a mean over replicates in between), pointwise the score difference related −
    other, rubric the met-rate difference. ``compared_with``: what the value is set against on the
    matched rung (the reference judges' mean, or the other judge's value), else None.
    ``difference``: what orders the cases (value − compared_with, or value − the no-preference
    centre). ``truth``: +1 the reference says the related answer is better, −1 worse, 0 equal,
    None no reference; ``labels``: with several human labels of the pair, how many prefer each
    answer (and ``tie``). ``judges``: every judge's reading of the pair under every condition, the
    verdict's condition first (``judge``, ``condition``, ``value``, ``role``: ``this judge``,
    ``unrelated to both`` — the judges the matched rung compares with, under the same condition —,
    ``related to X (scope)`` or ``relation unknown to the registry``; pointwise and rubric also
    ``related_score`` and ``other_score``). ``prompt``/``text_related``/``text_other``: from `with_texts`."""

    instance_id: str
    related: str
    other: str
    value: float
    difference: float
    compared_with: float | None = None
    truth: float | None = None
    labels: Mapping[str, int] | None = None
    judges: tuple[Mapping[str, Any], ...] = ()
    prompt: str | None = None
    text_related: str | None = None
    text_other: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "instance_id": self.instance_id,
            "related": self.related,
            "other": self.other,
            "value": self.value,
            "difference": self.difference,
            "compared_with": self.compared_with,
            "truth": self.truth,
            "labels": dict(self.labels) if self.labels is not None else None,
            "judges": [dict(j) for j in self.judges],
            "prompt": self.prompt,
            "text_related": self.text_related,
            "text_other": self.text_other,
        }


@dataclass(frozen=True)
class CaseGroup:
    """One direction of the cases: ``name`` (an id), ``title`` (words), ``n`` (how many
    comparisons go this way) and ``cases`` (the first ``limit`` of them, most telling first)."""

    name: str
    title: str
    n: int
    cases: tuple[Case, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "title": self.title,
            "n": self.n,
            "shown": len(self.cases),
            "cases": [c.to_dict() for c in self.cases],
        }


@dataclass(frozen=True)
class Explanation:
    """The cases behind one verdict. ``metric``/``record``/``rung``/``kind``: the reading they come
    from (the verdict's own, or for "too little data" its strongest reading; None when there is
    none); ``how``: how they were chosen, in words; ``n``: the comparisons of that reading with a
    value (``excluded``: those without one, left out as the metric leaves them out); ``groups``:
    the directions; ``rest``: the comparisons in neither direction, in words; ``note``: why there
    are no cases, or what they cannot tell; ``texts``: where the texts came from and how many shown
    answers it lacked (None without texts)."""

    verdict: Verdict
    how: str
    groups: tuple[CaseGroup, ...] = ()
    metric: str | None = None
    record: str | None = None
    rung: str | None = None
    kind: str | None = None
    n: int = 0
    excluded: int = 0
    note: str | None = None
    texts: Mapping[str, Any] | None = None
    rest: str | None = None
    record_n: int | None = None

    @property
    def unit(self) -> str:
        """What one case counts: a comparison, or — when the judge gave some pair more than one
        verdict (replicates, several votes) — a pair, its verdicts averaged, so that ``n`` is fewer
        than the comparisons its self-preference record counts (``record_n``)."""
        if self.metric == "self-preference-ratio" and self.record_n is not None and self.record_n != self.n:
            return "pair"
        return "comparison"

    def counted(self, n: int | None = None) -> str:
        """``n`` cases (all of them by default) in words: "1,033 comparisons", or "1,033 pairs"."""
        n = self.n if n is None else n
        return f"{n:,} {self.unit}{'' if n == 1 else 's'}"

    @property
    def count_words(self) -> str:
        """All the cases in words, with why they are pairs when they are: "1,033 comparisons", or
        "1,033 pairs (the record counts 1,037 comparisons: ...)"."""
        if self.unit == "comparison":
            return self.counted()
        return (
            f"{self.counted()} (the record counts {self.record_n:,} comparisons: a pair the judge gave more than "
            "one verdict is one case here, its verdicts averaged)"
        )

    @property
    def cases(self) -> list[Case]:
        """Every case shown, direction by direction."""
        return [c for g in self.groups for c in g.cases]

    def to_dict(self) -> dict[str, Any]:
        """The JSON document of ``nepotism explain --json``: the verdict, then its cases."""
        return {
            "verdict": self.verdict.to_dict(),
            "reading": {
                "metric": self.metric,
                "record": self.record,
                "rung": self.rung,
                "kind": self.kind,
                "n": self.n,
                "unit": self.unit,
                "record_n": self.record_n,
                "excluded": self.excluded,
            },
            "how": self.how,
            "note": self.note,
            "groups": [g.to_dict() for g in self.groups],
            "rest": self.rest,
            "texts": dict(self.texts) if self.texts is not None else None,
        }


def one_line(text: Any, limit: int = 80) -> str:
    """``text`` (a prompt's id, which may be the whole prompt) on one line of at most ``limit``
    characters: runs of white space as one space, a longer one cut with its length said."""
    flat = " ".join(str(text).split())
    if len(flat) <= limit:
        return flat
    return f"{flat[:limit].rstrip()}… ({len(flat):,} characters)"


# ----------------------------------------------------------------------------------- choosing the verdict
def find_verdict(verdicts: Sequence[Verdict], judge: str, scope: str, condition: str | None = None) -> Verdict:
    """The verdict of ``judge`` (its name in the data or its registry id), ``scope`` and
    ``condition`` (needed only when the judge was audited under several); an `InputError` naming
    the choices when there is no such verdict."""
    from nepotism.analyses.verdicts import SCOPE_WORDS

    if scope not in SCOPE_WORDS:
        raise InputError(f"unknown scope '{scope}'; scopes are {', '.join(SCOPE_WORDS)}", field="--scope")
    judges = sorted({v.judge for v in verdicts})
    mine = [v for v in verdicts if judge in (v.judge, v.judge_id)]
    if not mine:
        raise InputError(f"no verdict for judge '{judge}'; the judges are {', '.join(judges) or 'none'}", field="--judge")
    if len({v.judge for v in mine}) > 1:
        names = sorted({v.judge for v in mine})
        raise InputError(
            f"'{judge}' is the registry id of several judges of the data ({', '.join(names)}): name one", field="--judge"
        )
    conditions = sorted({v.condition for v in mine})
    if condition is None:
        if len(conditions) > 1:
            raise InputError(
                f"judge '{mine[0].judge}' was audited under several conditions; choose one with "
                f"--condition: {', '.join(conditions)}",
                field="--condition",
            )
        condition = conditions[0]
    found = [v for v in mine if v.condition == condition and v.scope == scope]
    if not found:
        raise InputError(
            f"judge '{mine[0].judge}' has no condition '{condition}'; its conditions are {', '.join(conditions)}",
            field="--condition",
        )
    return found[0]


# ----------------------------------------------------------------------------------- finding cases
def _kind_of(record: Mapping[str, Any]) -> str:
    """The judged table a record was measured on."""
    metric, variant = record.get("metric"), record.get("variant") or {}
    if metric == "matched-bias":
        return str(variant.get("kind", "pairwise"))
    if metric == "hspp-ratio":
        return {"PWC": "pairwise", "DA": "pointwise"}.get(str(variant.get("paradigm")), "rubric")
    if metric == "self-preference-ratio" and variant.get("paradigm") == "pointwise":
        return "pointwise"
    return "pairwise"


def _defaults(frame: pd.DataFrame) -> pd.DataFrame:
    if "condition" not in frame:
        frame = frame.assign(condition="default")
    if "replicate" not in frame:
        frame = frame.assign(replicate=0)
    return frame


def _number(x: Any) -> float | None:
    return None if x is None or (isinstance(x, float) and math.isnan(x)) else float(x)


class CaseFinder:
    """Finds the cases behind verdicts in the judgment tables they were measured on.

    ``tables``: judged tables by kind (pairwise, pointwise, rubric; others are ignored);
    ``references``: reference tables by kind, as the audit was given them; ``records``: the
    audit's records as dicts (a verdict names its records by `record_key`); ``rule`` and
    ``reference_vote`` as the audit used them. The costly parts (pairing, the matched rows) are
    computed once per table kind and shared by every verdict."""

    def __init__(
        self,
        tables: Mapping[str, pd.DataFrame],
        references: Mapping[str, pd.DataFrame] | None,
        registry: Registry,
        *,
        records: Iterable[Mapping[str, Any]],
        rule: str = "consistent",
        reference_vote: str = "each",
    ):
        self.tables = {k: _defaults(v) for k, v in tables.items() if k in _CASE_KINDS}
        self.references = dict(references or {})
        self.registry = registry
        self.rule = rule
        self.reference_vote = reference_vote
        self.records = {record_key(r): r for r in records}
        self._memo: dict[tuple[Hashable, ...], Any] = {}  # each key's value has the type its make returns

    # -- shared per kind
    def _once(self, key: tuple[Hashable, ...], make: Callable[[], _T]) -> _T:
        if key not in self._memo:
            self._memo[key] = make()
        value: _T = self._memo[key]
        return value

    def _values(self, kind: str) -> tuple[pd.DataFrame, float]:
        """Every judge's value per (condition, prompt, pair): `pair_values`, the metrics' own pairing."""
        from nepotism.analyses.comparisons import build_comparisons
        from nepotism.analyses.matched import pair_values

        def make() -> tuple[pd.DataFrame, float]:
            frame = self.tables[kind]
            source = build_comparisons(frame, rule=self.rule) if kind == "pairwise" else frame
            return pair_values(source, kind, rule=self.rule)

        return self._once(("values", kind), make)

    def _scores(self, kind: str) -> pd.Series | None:
        """Each answer's score (pointwise) or met-rate (rubric) per (judge, condition, prompt, model)."""
        if kind == "pairwise":
            return None
        from nepotism.analyses.matched import response_values

        def make() -> pd.Series:
            values = response_values(self.tables[kind], kind)
            return values.set_index(["judge", "condition", "instance_id", "model"])["value"]

        return self._once(("scores", kind), make)

    def _refs(self, kind: str) -> dict[str, pd.DataFrame]:
        from nepotism.analyses.suite import references_for

        return self._once(("refs", kind), lambda: references_for(kind, self.references, reference_vote=self.reference_vote))

    def _truth(self, kind: str, record: Mapping[str, Any]) -> pd.DataFrame | None:
        """(instance_id, model_x, model_y, truth) as the record's metric reads the reference."""
        from nepotism.analyses.matched import truth_codes

        refs = self._refs(kind)
        metric, variant = record.get("metric"), record.get("variant") or {}
        if metric == "equal-opportunity-bias" or (metric == "hspp-ratio" and variant.get("paradigm") == "PWC"):
            wanted = {"preference-ref": refs["preference-ref"]} if "preference-ref" in refs else {}
            name = "preference"
        elif metric == "hspp-ratio" and variant.get("paradigm") == "DA" and "correctness-ref" in refs:
            from nepotism.metrics._suite_tables import _reference_scores

            corr = refs["correctness-ref"]
            wanted = {
                "correctness-ref": pd.DataFrame(
                    {
                        "instance_id": corr["instance_id"].astype(str),
                        "model": corr["model"].astype(str),
                        "score": _reference_scores(corr),
                    }
                )
            }
            name = "score"
        elif metric == "hspp-ratio" and kind == "rubric":
            wanted = {"rubric-ref": refs["rubric-ref"]} if "rubric-ref" in refs else {}
            name = "rubric"
        else:  # matched-bias's subsets and the alone rung's context read the truth as matched-bias does
            wanted, name = refs, "matched"
        return self._once(("truth", kind, name), lambda: truth_codes(wanted))

    def _labels(self) -> pd.DataFrame | None:
        """Several human labels of one pair: (instance_id, model_x, model_y, for_x, for_y, ties)."""

        def make() -> pd.DataFrame | None:
            pref = self.references.get("preference-ref")
            if pref is None or pref.empty:
                return None
            from nepotism.analyses.suite import labels_per_pair

            if labels_per_pair(pref) < 2:
                return None
            a, b = pref["model_a"].astype(str).to_numpy(), pref["model_b"].astype(str).to_numpy()
            w = pref["winner"].astype(str).to_numpy()
            x, y = np.where(a < b, a, b), np.where(a < b, b, a)
            frame = pd.DataFrame(
                {
                    "instance_id": pref["instance_id"].astype(str).to_numpy(),
                    "model_x": x,
                    "model_y": y,
                    "for_x": (w == x).astype(int),
                    "for_y": (w == y).astype(int),
                    "ties": ((w != x) & (w != y)).astype(int),
                }
            )
            return frame.groupby(["instance_id", "model_x", "model_y"], sort=False, as_index=False).sum()

        return self._once(("labels",), make)

    # -- one verdict
    def explain(self, verdict: Verdict, *, limit: int = CASE_LIMIT) -> Explanation:
        """The cases behind ``verdict`` (at most ``limit`` per direction)."""
        if isinstance(limit, bool) or not isinstance(limit, int) or limit < 0:
            raise InputError("the number of cases must be a whole number of at least 0", field="--limit")
        if verdict.status == "not-measurable":
            why = verdict.sentence.partition(" — ")[2].rstrip(".") or verdict.sentence
            needs = "; ".join(verdict.needs)
            return Explanation(
                verdict,
                how="no comparison measures this relation",
                note=f"no cases: {why}" + (f". To measure it: {needs}" if needs else "") + ".",
            )
        key = verdict.evidence[0] if verdict.evidence else None
        record = self.records.get(key) if key else None
        if record is None or key is None:
            return Explanation(
                verdict,
                how="",
                note="no cases: the record behind this verdict is not among these "
                "results (cases are read from the judgments the audit measured)",
            )
        kind = _kind_of(record)
        if kind not in self.tables:
            return Explanation(
                verdict,
                how="",
                metric=record["metric"],
                record=key,
                kind=kind,
                note=f"no cases: the {kind} judgments behind this verdict were not given",
            )
        rung = verdict.rung if verdict.status == "measured" else _rung_of(verdict, key)
        values, centre = self._values(kind)
        mine = values[(values["judge"] == verdict.judge) & (values["condition"] == verdict.condition)]
        if record["metric"] == "matched-bias":
            rows, how = self._matched(kind, record, verdict, values, centre)
        elif record["metric"] == "paired-win-rate-gap":
            rows, how = self._gap(record, verdict, values, centre)
        else:
            rows, how = self._own(kind, record, verdict, mine, centre)
        excluded = int(rows["value"].isna().sum())
        rows = rows[rows["value"].notna() & rows["difference"].notna()]
        groups = self._groups(kind, record, rung, rows, centre, limit)
        groups = tuple(replace(g, cases=self._cases(kind, verdict, g.cases, values, centre)) for g in groups)
        note = _note(rung, record, verdict, bool(rows["truth"].notna().any()) if len(rows) else False)
        return Explanation(
            verdict,
            how=how,
            groups=groups,
            metric=record["metric"],
            record=key,
            rung=rung,
            kind=kind,
            n=int(len(rows)),
            excluded=excluded,
            note=note,
            rest=_rest(rung, rows, groups, record),
            record_n=record.get("n"),
        )

    def explain_all(self, verdicts: Iterable[Verdict], *, limit: int = CASE_LIMIT) -> dict[str, Explanation]:
        """`explain` for every verdict with evidence (measured or too little data), by `verdict_key`."""
        return {verdict_key(v): self.explain(v, limit=limit) for v in verdicts if v.status != "not-measurable"}

    # -- the rows of each rung: columns instance_id, related, other, value, compared_with, difference, truth
    def _matched(
        self, kind: str, record: Mapping[str, Any], verdict: Verdict, values: pd.DataFrame, centre: float
    ) -> tuple[pd.DataFrame, str]:
        from nepotism.analyses.matched import matched_rows

        scope = str(record.get("scope"))
        truth = self._truth(kind, record)
        matched = self._once(
            ("matched", kind, scope),
            lambda: matched_rows(values, self.registry, centre=centre, truth=truth, scopes=(scope,), neutral=False),
        )
        frame = matched.frame
        rows = frame[
            (frame["judge"] == verdict.judge)
            & (frame["condition"] == verdict.condition)
            & (frame["scope"] == scope)
            & frame["reference_value"].notna()
        ]
        out = pd.DataFrame(
            {
                "instance_id": rows["instance_id"],
                "related": rows["related"],
                "other": rows["other"],
                "value": rows["judge_value"],
                "compared_with": rows["reference_value"],
                "truth": rows["truth"],
            }
        )
        out["difference"] = out["value"] - out["compared_with"]
        refs = record.get("reference_judges") or []
        who = f"among {', '.join(refs)}" if refs else "none here"
        how = (
            f"matched-bias's comparisons: the judge's {_unit_words(kind)} for its relative's answer against the "
            f"mean of the judges unrelated to both answers of each pair ({who}), on the same prompt; the largest "
            "differences first"
        )
        return out, how

    def _gap(self, record: Mapping[str, Any], verdict: Verdict, values: pd.DataFrame, centre: float) -> tuple[pd.DataFrame, str]:
        generator, opponent = (record.get("pair") or [None, None])[:2]
        variant = record.get("variant") or {}
        other_judge = variant.get("other_judge")
        other_condition = variant.get("other_condition") or verdict.condition
        pair = (
            values["model_x"].isin([generator, opponent])
            & values["model_y"].isin([generator, opponent])
            & (values["model_x"] != values["model_y"])
        )
        here = values[pair & (values["judge"] == verdict.judge) & (values["condition"] == verdict.condition)]
        there = values[pair & (values["judge"] == other_judge) & (values["condition"] == other_condition)]
        merged = here.merge(
            there[["instance_id", "model_x", "model_y", "value"]],
            on=["instance_id", "model_x", "model_y"],
            suffixes=("", "_other"),
        )
        flip = (merged["model_x"] != generator).to_numpy()
        value = np.where(flip, 2 * centre - merged["value"], merged["value"])
        other = np.where(flip, 2 * centre - merged["value_other"], merged["value_other"])
        out = pd.DataFrame(
            {
                "instance_id": merged["instance_id"],
                "related": generator,
                "other": opponent,
                "value": value,
                "compared_with": other,
                "difference": value - other,
                "truth": np.nan,
            }
        )
        out = out[np.isfinite(out["compared_with"].to_numpy(dtype=float))]
        how = (
            f"the paired win-rate gap's comparisons: {generator} against {opponent}, this judge's verdict "
            f"against {other_judge}'s (unrelated to both) on the same prompt; the largest differences first"
        )
        return out, how

    def _own(
        self, kind: str, record: Mapping[str, Any], verdict: Verdict, mine: pd.DataFrame, centre: float
    ) -> tuple[pd.DataFrame, str]:
        from nepotism.analyses.suite import _self_rows, scope_table

        variant = record.get("variant") or {}
        metric = record["metric"]
        opponents = "any" if metric == "hspp-ratio" else str(variant.get("opponents", "unrelated"))
        if metric == "hspp-ratio" and variant.get("denominator") == "unrelated":
            opponents = "unrelated"
        models = sorted(set(mine["model_x"]) | set(mine["model_y"]))
        scopes = scope_table(self.registry, [verdict.judge], models)
        frame = mine.assign(outcome=mine["value"] - centre)
        sub = _self_rows(frame, scopes, verdict.scope, opponents=opponents)
        if metric == "hspp-ratio" and len(sub):  # paper 002's S_J: every answer outside the judge's family
            outside = np.array([scopes.get((verdict.judge, m)) not in ("self", "family") for m in sub["other"]])
            sub = sub[outside]
        value = sub["outcome_related"].to_numpy(dtype=float) + centre
        out = pd.DataFrame(
            {
                "instance_id": sub["instance_id"].to_numpy(dtype=object),
                "related": sub["related"].to_numpy(dtype=object),
                "other": sub["other"].to_numpy(dtype=object),
                "value": value,
                "compared_with": np.nan,
                "difference": value - centre,
            }
        )
        truth = self._truth(kind, record) if metric != "self-preference-ratio" or self.references else None
        out["truth"] = _oriented_truth(out, truth)
        against = {"unrelated": "answers of models unrelated to it", "any": "any less related answer"}[opponents]
        if metric == "hspp-ratio":
            against = "answers outside its family" if opponents == "any" else against
        if metric == "self-preference-ratio":
            how = (
                f"the self-preference ratio's comparisons: its relative's answer against {against}, "
                f"{'the largest score gaps first' if kind != 'pairwise' else 'by prompt'}"
            )
        else:
            how = (
                f"{metric}'s comparisons: its relative's answer against {against}, where the judge and the "
                f"reference disagree; {'the largest score gaps first' if kind != 'pairwise' else 'by prompt'}"
            )
        return out, how

    # -- directions and ordering
    def _groups(
        self, kind: str, record: Mapping[str, Any], rung: str | None, rows: pd.DataFrame, centre: float, limit: int
    ) -> tuple[CaseGroup, ...]:
        def group(name: str, title: str, mask: np.ndarray) -> CaseGroup:
            chosen = rows[mask]
            # the largest disagreement first; among equals, those the reference contradicts first
            against = (np.sign(chosen["difference"].to_numpy(dtype=float)) * chosen["truth"].to_numpy(dtype=float)) < 0
            order = chosen.assign(_size=-chosen["difference"].abs(), _agrees=~against).sort_values(
                ["_size", "_agrees", "instance_id", "related", "other"], kind="stable"
            )
            return CaseGroup(name, title, int(len(chosen)), tuple(_raw_case(r) for r in order.head(limit).itertuples()))

        d = rows["difference"].to_numpy(dtype=float)
        if rung == "matched":
            other = "the other judge" if record["metric"] == "paired-win-rate-gap" else "the unrelated judges"
            return (
                group("kinder", f"kinder to its relative than {other}", d > 0),
                group("harsher", f"harsher on its relative than {other}", d < 0),
            )
        if rung == "reference":
            truth = rows["truth"].to_numpy(dtype=float)
            return (
                group(
                    "for-relative-against-reference",
                    "sided with its relative where the reference prefers the other answer",
                    (d > 0) & (truth < 0),
                ),
                group(
                    "against-relative-against-reference",
                    "sided against its relative where the reference prefers its relative",
                    (d < 0) & (truth > 0),
                ),
            )
        return (
            group("for-relative", "decided for its relative", d > 0),
            group("against-relative", "decided against its relative", d < 0),
        )

    def _cases(self, kind: str, verdict: Verdict, raw: tuple[Case, ...], values: pd.DataFrame, centre: float) -> tuple[Case, ...]:
        """The chosen rows with every judge's reading of their pair and the human label counts."""
        if not raw:
            return ()
        keys = pd.DataFrame(
            {
                "instance_id": [c.instance_id for c in raw],
                "model_x": [min(c.related, c.other) for c in raw],
                "model_y": [max(c.related, c.other) for c in raw],
            }
        )
        seen = values.merge(keys, on=["instance_id", "model_x", "model_y"], how="inner")  # under every condition
        readings: dict[tuple[str, str, str], list[dict[str, Any]]] = {}
        scores = self._scores(kind)
        for r in seen.itertuples(index=False):
            readings.setdefault((r.instance_id, r.model_x, r.model_y), []).append(
                {"judge": r.judge, "condition": r.condition, "value": _number(r.value)}
            )
        labels = self._labels()
        label_of = {}
        if labels is not None:
            hit = labels.merge(keys[["instance_id", "model_x", "model_y"]], on=["instance_id", "model_x", "model_y"])
            label_of = {
                (r.instance_id, r.model_x, r.model_y): (int(r.for_x), int(r.for_y), int(r.ties))
                for r in hit.itertuples(index=False)
            }
        out = []
        for case in raw:
            x, y = min(case.related, case.other), max(case.related, case.other)
            judges = []
            here = readings.get((case.instance_id, x, y), [])
            for reading in sorted(here, key=lambda j: (j["condition"] != verdict.condition, j["condition"], j["judge"])):
                value = reading["value"]
                if value is not None and case.related != x:
                    value = 2 * centre - value
                same = reading["condition"] == verdict.condition
                role = self._role(reading["judge"], verdict.judge, case)
                entry = {
                    "judge": reading["judge"],
                    "condition": reading["condition"],
                    "value": value,
                    "role": role if same or role != "this judge" else "this judge, under another condition",
                }
                if scores is not None:
                    entry["related_score"] = _number(
                        scores.get((reading["judge"], reading["condition"], case.instance_id, case.related))
                    )
                    entry["other_score"] = _number(
                        scores.get((reading["judge"], reading["condition"], case.instance_id, case.other))
                    )
                judges.append(entry)
            counts = label_of.get((case.instance_id, x, y))
            labels_here = None
            if counts is not None:
                for_x, for_y, ties = counts
                labels_here = {
                    case.related: for_x if case.related == x else for_y,
                    case.other: for_y if case.related == x else for_x,
                    "tie": ties,
                }
            out.append(replace(case, judges=tuple(judges), labels=labels_here))
        return tuple(out)

    def _role(self, judge: str, this: str, case: Case) -> str:
        if judge == this:
            return "this judge"
        related = [m for m in (case.related, case.other) if self.registry.is_related(judge, m)]
        unknown = [m for m in (case.related, case.other) if self.registry.scope(judge, m) == "unknown"]
        if related:
            return "related to " + " and ".join(f"{m} ({self.registry.scope(judge, m)})" for m in related)
        if unknown:
            return "relation unknown to the registry"
        return "unrelated to both"


def _rung_of(verdict: Verdict, key: str) -> str | None:
    """The rung of the reading ``key`` among a verdict's ``also``."""
    return next((a.get("rung") for a in verdict.also if a.get("record") == key), None)


def _rest(rung: str | None, rows: pd.DataFrame, groups: Sequence[CaseGroup], record: Mapping[str, Any]) -> str | None:
    """What the comparisons outside the directions shown are, in words (None when there are none)."""
    rest = len(rows) - sum(g.n for g in groups)
    if not len(rows) or rest <= 0:
        return None
    d = rows["difference"].to_numpy(dtype=float)
    if rung == "matched":
        other = "the other judge" if record.get("metric") == "paired-win-rate-gap" else "the unrelated judges' mean"
        return f"{_count(int((d == 0).sum()), 'comparison')} where it gave what {other} gave"
    if rung == "reference":
        truth = rows["truth"].to_numpy(dtype=float)
        decided = np.isfinite(truth) & (truth != 0)
        parts = [
            (int((decided & (np.sign(d) == truth)).sum()), "where it sided with the reference"),
            (int((decided & (d == 0)).sum()), "where it tied and the reference did not"),
            (int((np.isfinite(truth) & (truth == 0)).sum()), "where the reference rates both answers alike"),
            (int((~np.isfinite(truth)).sum()), "without a reference"),
        ]
        return "; ".join(f"{_count(n, 'comparison')} {words}" for n, words in parts if n)
    return f"{_count(int((d == 0).sum()), 'tie')}"


def _count(n: int, word: str) -> str:
    return f"{n:,} {word}{'' if n == 1 else 's'}"


def _raw_case(row: Any) -> Case:
    return Case(
        instance_id=str(row.instance_id),
        related=str(row.related),
        other=str(row.other),
        value=float(row.value),
        difference=float(row.difference),
        compared_with=_number(row.compared_with),
        truth=_number(row.truth),
    )


def _oriented_truth(rows: pd.DataFrame, truth: pd.DataFrame | None) -> np.ndarray:
    """The truth of each row's pair, from the related answer's side (NaN where none)."""
    if truth is None or truth.empty or rows.empty:
        return np.full(len(rows), np.nan)
    x = np.where(rows["related"] < rows["other"], rows["related"], rows["other"])
    y = np.where(rows["related"] < rows["other"], rows["other"], rows["related"])
    keys = pd.DataFrame({"instance_id": rows["instance_id"].astype(str).to_numpy(), "model_x": x, "model_y": y})
    found = keys.merge(truth.astype({"instance_id": str}), on=["instance_id", "model_x", "model_y"], how="left")
    value = found["truth"].to_numpy(dtype=float)
    oriented: np.ndarray = np.where(rows["related"].to_numpy() == x, value, -value)
    return oriented


def _unit_words(kind: str) -> str:
    return {"pairwise": "preference", "pointwise": "score", "rubric": "share of rubrics met"}[kind]


def _note(rung: str | None, record: Mapping[str, Any], verdict: Verdict, has_truth: bool) -> str | None:
    notes = []
    if verdict.status == "too-little-data":
        notes.append(
            f"too little data for a verdict: these are the comparisons of its strongest reading "
            f"({record['metric']}), which rests on too few prompts to say more than what they show"
        )
    if rung == "alone":
        notes.append(
            "without a reference nothing says which answer was right: a judge whose relatives write "
            "better answers decides for them without any favouritism"
            + (" (the reference shown beside each case is not what the verdict rests on)" if has_truth else "")
        )
    return "; ".join(notes) + "." if notes else None


# ----------------------------------------------------------------------------------- words
def reading_words(kind: str | None, case: Case, reading: Mapping[str, Any] | None = None) -> str:
    """A judge's reading of a case in words: ``prefers X`` / ``tie`` (pairwise), ``X 8, Y 5``
    (pointwise scores), ``X 80% of rubrics met, Y 40%`` (rubric). ``reading``: one of
    ``case.judges`` (default: the case's own judge's value)."""
    value = case.value if reading is None else reading.get("value")
    if value is None:
        return "no verdict"
    if kind == "pairwise":
        if value == 1:
            return f"prefers {case.related}"
        if value == 0:
            return f"prefers {case.other}"
        if value == 0.5:
            return "tie"
        return f"prefers {case.related} in {100 * value:.0f}% of its verdicts (replicates)"
    ours, theirs = (reading or {}).get("related_score"), (reading or {}).get("other_score")
    if kind == "rubric":
        if ours is not None and theirs is not None:
            return f"{case.related} {100 * ours:.0f}% of rubrics met, {case.other} {100 * theirs:.0f}%"
        return f"{case.related} {100 * value:+.0f} points of rubrics met over {case.other}"
    if ours is not None and theirs is not None:
        return f"{case.related} {ours:g}, {case.other} {theirs:g}"
    return f"{case.related} {value:+.2f} over {case.other}"


def compared_words(kind: str | None, case: Case) -> str | None:
    """What the judge's value is set against on the matched rung, in words (None elsewhere)."""
    if case.compared_with is None:
        return None
    v = case.compared_with
    if kind == "pairwise":
        return f"preference for {case.related} {v:.2f} (1 = always {case.related}, 0 = always {case.other})"
    if kind == "rubric":
        return f"{case.related} {100 * v:+.0f} points of rubrics met over {case.other}"
    return f"{case.related} {v:+.2f} over {case.other}"


def truth_words(case: Case) -> str | None:
    """What the reference says of the case's two answers (None without one), with label counts."""
    if case.truth is None:
        return None
    said = {1.0: f"{case.related} is better", -1.0: f"{case.other} is better"}.get(case.truth, "both are alike")
    if case.labels:
        counts = ", ".join(
            f"{n} for {who}" if who != "tie" else f"{n} tie{'' if n == 1 else 's'}"
            for who, n in case.labels.items()
            if n or who != "tie"
        )
        said += f" (labels: {counts})"
    return said


# ----------------------------------------------------------------------------------- texts
@dataclass(frozen=True)
class Texts:
    """Answers and prompts read for the cases: ``answers[(instance_id, model)]``,
    ``prompts[instance_id]``; ``source`` the file or store they came from."""

    source: str
    answers: Mapping[tuple[str, str], str] = field(default_factory=dict)
    prompts: Mapping[str, str] = field(default_factory=dict)


def _prompt_text(value: Any, path: str, line: int | None) -> str | None:
    """A prompt as text: a string, or a chat (a list of {role, content}) as ``role: content`` lines."""
    if value is None:
        return None
    if isinstance(value, str):
        return value
    if isinstance(value, (list, tuple)):
        parts = []
        for message in value:
            role = getattr(message, "role", None) if not isinstance(message, dict) else message.get("role")
            content = getattr(message, "content", None) if not isinstance(message, dict) else message.get("content")
            if not isinstance(role, str) or not isinstance(content, str):
                raise InputError(
                    "a prompt given as a list must hold {role, content} messages", path=path, line=line, field="prompt"
                )
            parts.append(f"{role}: {content}")
        return "\n".join(parts)
    raise InputError("prompt must be a string, a list of {role, content} messages or null", path=path, line=line, field="prompt")


def _digest(text: str) -> bytes:
    return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=8).digest()


def read_texts(source: str | Path, wanted: Iterable[tuple[str, str]], *, registry: Registry | None = None) -> Texts:
    """The texts of the answers ``wanted`` ((instance_id, model) pairs) and their prompts.

    ``source``: a JSON Lines file (optionally gzipped) with ``instance_id``, ``model`` (or
    ``generator``, as ``nepotism store export responses`` writes it), ``text`` and optionally
    ``prompt`` (a string or a list of {role, content}); other keys are ignored. Every line is
    checked (an `InputError` names the file, line and field) but only the wanted answers are kept,
    so memory grows with the cases shown, not with the file. Two lines giving one answer different
    texts are refused. A model name that differs from the table's but that the registry resolves
    to the same id matches too. Or ``source`` is a store (SQLite): its responses and prompts."""
    path = Path(source)
    if path.is_dir():
        raise InputError(
            "texts must be a JSON Lines file or a store, not a folder (a run's output folder holds "
            "no texts: give the run's store)",
            path=str(path),
        )
    if not path.exists():
        raise InputError("texts file not found", path=str(path))
    from nepotism._files import base_suffix, is_store, iter_jsonl_rows

    wanted = set(wanted)
    if is_store(path):
        return _store_texts(path, wanted)

    if base_suffix(path) not in (".jsonl", ".ndjson"):
        raise InputError(
            "texts must be JSON Lines (.jsonl, .jsonl.gz: instance_id, model, text, prompt), as "
            "`nepotism import --texts-out` writes them, or a store",
            path=str(path),
        )
    by_id = _resolved(wanted, registry)
    answers: dict[tuple[str, str], str] = {}
    digests: dict[tuple[str, str], tuple[bytes, int]] = {}
    prompts: dict[str, str] = {}
    instances = {i for i, _ in wanted}
    name = str(path)
    for line, row in iter_jsonl_rows(path):
        instance = row.get("instance_id", row.get("id"))
        if isinstance(instance, bool) or not isinstance(instance, (str, int)) or instance == "":
            raise InputError("instance_id must be a non-empty string", path=name, line=line, field="instance_id")
        model = row.get("model", row.get("generator"))
        if not isinstance(model, str) or not model:
            raise InputError(
                "model must be a non-empty string (the generator of the text)",
                path=name,
                line=line,
                field="model" if "model" in row or "generator" not in row else "generator",
            )
        text = row.get("text")
        if not isinstance(text, str):
            raise InputError("text must be a string (the answer)", path=name, line=line, field="text")
        prompt = _prompt_text(row.get("prompt"), name, line)
        instance = str(instance)
        if instance in instances and prompt is not None and instance not in prompts:
            prompts[instance] = prompt
        keys = [(instance, model)] if (instance, model) in wanted else by_id.get((instance, _resolve(registry, model)), [])
        for key in keys:
            seen = digests.get(key)
            if seen is not None and seen[0] != _digest(text):
                raise InputError(
                    f"a second, different text of {key[1]}'s answer to '{key[0]}' (first on line {seen[1]})",
                    path=name,
                    line=line,
                    field="text",
                )
            if seen is None:
                digests[key] = (_digest(text), line)
                answers[key] = text
    return Texts(name, answers, prompts)


def _resolve(registry: Registry | None, model: str) -> str | None:
    if registry is None:
        return None
    base, _, tag = model.partition("@")
    try:
        return registry.resolve(base) + ("@" + tag if tag else "") if registry.knows(base) else None
    except KeyError:
        return None


def _resolved(wanted: set[tuple[str, str]], registry: Registry | None) -> dict[tuple[str, str | None], list[tuple[str, str]]]:
    out: dict[tuple[str, str | None], list[tuple[str, str]]] = {}
    if registry is None:
        return out
    for instance, model in sorted(wanted):
        resolved = _resolve(registry, model)
        if resolved is not None:
            out.setdefault((instance, resolved), []).append((instance, model))
    return out


def _store_texts(path: Path, wanted: set[tuple[str, str]]) -> Texts:
    """The wanted answers and their prompts from a store's responses and instances."""
    from nepotism.store import Store

    answers, prompts = {}, {}
    with Store.read_only(path) as store:
        for instance, model in sorted(wanted):
            found = store.responses(instance_id=instance, generator=model)
            if found:
                answers[(instance, model)] = found[0].text
        for instance in sorted({i for i, _ in wanted}):
            items = store.instances(id=instance)
            if items:
                prompt = (
                    _prompt_text(list(items[0].messages), str(path), None)
                    if not isinstance(items[0].prompt, str)
                    else items[0].prompt
                )
                if prompt is not None:
                    prompts[instance] = prompt
    return Texts(str(path), answers, prompts)


def wanted_answers(explanations: Iterable[Explanation]) -> set[tuple[str, str]]:
    """The (instance_id, model) of both answers of every case shown."""
    return {(c.instance_id, m) for e in explanations for c in e.cases for m in (c.related, c.other)}


def with_texts(explanation: Explanation, texts: Texts) -> Explanation:
    """``explanation`` with each case's prompt and both answers from ``texts``, and a count of the
    answers the texts lack (a case without its text shows none, never another answer's)."""
    missing: list[str] = []

    def one(case: Case) -> Case:
        related = texts.answers.get((case.instance_id, case.related))
        other = texts.answers.get((case.instance_id, case.other))
        for model, text in ((case.related, related), (case.other, other)):
            if text is None:
                missing.append(f"{model} on {case.instance_id}")
        return replace(case, prompt=texts.prompts.get(case.instance_id), text_related=related, text_other=other)

    groups = tuple(replace(g, cases=tuple(one(c) for c in g.cases)) for g in explanation.groups)
    shown = 2 * sum(len(g.cases) for g in groups)
    return replace(
        explanation,
        groups=groups,
        texts={
            "source": texts.source,
            "answers_shown": shown - len(missing),
            "answers_missing": len(missing),
            "missing": missing[:20],
        },
    )
