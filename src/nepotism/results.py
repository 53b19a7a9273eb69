"""Typed results: one frozen `Record` per number, and `Results`, the collection every audit returns.

A `Record` is one estimate of one metric: ``metric`` (a catalogue id), ``judge``, ``condition``,
``scope`` (self, family, student, family-student, ...), the subject (``generator`` — one model —
or ``pair`` — two), ``value`` with its interval ``ci_low``/``ci_high`` (None when undefined, never
a silent 0), ``n`` units from ``n_clusters`` prompts, ``n_excluded`` left out with ``excluded``
counting them per reason, the bootstrap that made the interval (``confidence``, ``method``,
``n_resamples``), ``p_value`` and ``note`` where set, the ``variant`` (which reading of the
metric: opponents, ties, paradigm, ...) and ``extra`` (fields only some metrics have, such as
``judge_id`` or ``tie_share``).

`new_record` is the one builder of a record as the analyses emit it (a dict in the shape of
`Record.to_dict`, its keys in the order every record has); `Record.to_dict` gives exactly the dict
the JSON and CSV outputs have always held (the same keys, in the same order, ``variant`` nested);
`Record.from_dict` reads one back; `record_key` names a
record (a short hash of what it measures: metric, judge, condition, scope, subject, variant) so a
verdict and a report can point at it. `Results` adds `Results.frame` (a tidy DataFrame whose variant
fields are flat columns), `Results.to_json` (the one results document every command writes, with
``schema_version``), `Results.from_document` (reads it back) and `Results.select`.

A `Verdict` is the answer for one (judge, condition, scope): which rung of the evidence ladder
(docs/answer.md) measured it — ``matched`` (against unrelated judges on the same items and pairs),
``reference`` (against human labels, correctness or rubric truth) or ``alone`` (the judge's own
preferences, which cannot separate favouritism from answer quality) —, the number with its interval,
n and prompts, a plain sentence, and when nothing could be measured, what data would make it
measurable. Verdicts are built from records (`nepotism.analyses.verdicts`); this module only holds them.

>>> r = Record(metric="self-preference-ratio", judge="gpt-4", condition="default", scope="self",
...            value=0.62, ci_low=0.55, ci_high=0.69, n=400, n_clusters=200,
...            variant={"opponents": "unrelated"})
>>> results = Results([r])
>>> results.select(metric="self-preference-ratio", scope="self")[0].value
0.62
>>> results.frame()[["metric", "scope", "opponents", "value"]].to_dict("records")
[{'metric': 'self-preference-ratio', 'scope': 'self', 'opponents': 'unrelated', 'value': 0.62}]

This module sits beside `records` and `tables` at the bottom of the layers: it imports nothing
else from the package, so every layer that emits results can build them.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, fields
from types import MappingProxyType
from typing import Any, overload

__all__ = ["SCHEMA_VERSION", "VERDICT_RUNGS", "VERDICT_STATUSES", "Record", "Results", "Verdict", "new_record", "record_key"]

#: Version of the `Results.to_json` document. 1: ``{"schema_version", "summary", "findings",
#: "results"}`` with each result in the shape of `Record.to_dict`. 2: adds ``verdicts`` (a list of
#: `Verdict.to_dict`) and ``findings`` become the verdicts' sentences.
SCHEMA_VERSION = 2
#: The document versions `Results.from_document` reads.
_READABLE_VERSIONS = (1, 2)

#: How a verdict was measured, strongest first (docs/answer.md).
VERDICT_RUNGS = ("matched", "reference", "alone")
#: ``measured``: a number from enough prompts; ``too-little-data``: some evidence, fewer prompts than
#: the minimum (no number is claimed); ``not-measurable``: nothing in the data can measure it.
VERDICT_STATUSES = ("measured", "too-little-data", "not-measurable")


def _number(value: Any, name: str) -> float | int | None:
    if value is None:
        return None
    if isinstance(value, bool):
        raise TypeError(f"{name} must be a number or None, not {value!r}")
    if not isinstance(value, (int, float)):
        try:
            value = float(value)  # numpy scalars
        except (TypeError, ValueError):
            raise TypeError(f"{name} must be a number or None, not {value!r}") from None
    return None if isinstance(value, float) and math.isnan(value) else value


def _count(value: Any, name: str) -> int:
    if isinstance(value, bool):
        raise TypeError(f"{name} must be an integer, not {value!r}")
    try:
        count = int(value)
    except (TypeError, ValueError):
        raise TypeError(f"{name} must be an integer, not {value!r}") from None
    if count != value or count < 0:
        raise ValueError(f"{name} must be a non-negative integer, not {value!r}")
    return count


@dataclass(frozen=True)
class Record:
    """One estimate of one metric (see the module docstring for the fields)."""

    metric: str
    judge: str | None = None
    condition: str | None = None
    scope: str | None = None
    generator: str | None = None
    pair: tuple[str, ...] | None = None
    variant: Mapping[str, Any] = field(default_factory=dict)
    value: float | None = None
    ci_low: float | None = None
    ci_high: float | None = None
    n: int = 0
    n_clusters: int = 0
    n_excluded: int = 0
    excluded: Mapping[str, int] = field(default_factory=dict)
    confidence: float | None = None
    method: str | None = None
    n_resamples: int | None = None
    p_value: float | None = None
    note: str | None = None
    extra: Mapping[str, Any] = field(default_factory=dict)
    #: the key order of `to_dict` (the order the record was built in); not part of equality
    keys: tuple[str, ...] = field(default=(), compare=False, repr=False)

    def __post_init__(self) -> None:
        if not isinstance(self.metric, str) or not self.metric:
            raise TypeError(f"metric must be a non-empty string, not {self.metric!r}")
        for name in ("value", "ci_low", "ci_high", "p_value", "confidence"):
            object.__setattr__(self, name, _number(getattr(self, name), name))
        for name in ("n", "n_clusters", "n_excluded"):
            object.__setattr__(self, name, _count(getattr(self, name), name))
        if self.n_resamples is not None:
            object.__setattr__(self, "n_resamples", _count(self.n_resamples, "n_resamples"))
        if self.pair is not None:
            object.__setattr__(self, "pair", tuple(self.pair))
        excluded = {str(k): _count(v, f"excluded[{k!r}]") for k, v in dict(self.excluded or {}).items()}
        object.__setattr__(self, "excluded", MappingProxyType(excluded))
        object.__setattr__(self, "variant", MappingProxyType(dict(self.variant or {})))
        object.__setattr__(self, "extra", MappingProxyType(dict(self.extra or {})))

    @property
    def subject(self) -> str | None:
        """What the number is about: the generator, or the pair as ``"a vs b"``."""
        if self.generator is not None:
            return self.generator
        return " vs ".join(map(str, self.pair)) if self.pair else None

    @property
    def defined(self) -> bool:
        return self.value is not None

    @classmethod
    def from_dict(cls, record: Mapping[str, Any]) -> Record:
        """Read a record in the shape of `to_dict` (unknown keys go to ``extra``)."""
        if "metric" not in record:
            raise ValueError("a result record needs a 'metric'")
        known = {f.name for f in fields(cls)} - {"extra", "keys"}
        core = {k: v for k, v in record.items() if k in known}
        extra = {k: v for k, v in record.items() if k not in known}
        return cls(**core, extra=extra, keys=tuple(record))

    def to_dict(self) -> dict[str, Any]:
        """The record as the JSON and CSV outputs hold it: flat fields, ``variant`` and ``excluded``
        nested, ``pair`` a list, undefined numbers None, extra fields at the top level."""
        values: dict[str, Any] = {f.name: getattr(self, f.name) for f in fields(self) if f.name not in ("extra", "keys")}
        values["variant"] = dict(self.variant)
        values["excluded"] = dict(self.excluded)
        values["pair"] = list(self.pair) if self.pair is not None else None
        values.update(self.extra)
        if not self.keys:
            return values
        return {k: values[k] for k in self.keys if k in values}


def new_record(metric: str, judge: Any = None, condition: Any = None, estimate: Any = None, /, **fields: Any) -> dict[str, Any]:
    """A result record as the analyses emit it: ``metric``, ``judge`` (then ``judge_id`` when given),
    ``condition``, ``generator``, ``pair`` and ``scope`` (None unless given), ``variant`` ({} unless
    given), the other ``fields`` in their order, then the estimate's fields when an ``estimate`` (an
    object with ``as_dict``, e.g. `nepotism.metrics.Estimate`) is given — the one key order of every
    record, which `Record.from_dict` keeps.

    >>> list(new_record("win-rate", "gpt-4", "default", generator="m1", n_ties=3))
    ['metric', 'judge', 'condition', 'generator', 'pair', 'scope', 'variant', 'n_ties']
    """
    record: dict[str, Any] = {"metric": metric, "judge": judge}
    if "judge_id" in fields:
        record["judge_id"] = fields.pop("judge_id")
    record.update(condition=condition, generator=None, pair=None, scope=None, variant={})
    record.update(fields)
    if estimate is not None:
        record.update(estimate.as_dict())
    return record


def record_key(record: Record | Mapping[str, Any]) -> str:
    """A short stable name for a record: the first 12 hex digits of SHA-256 over what it measures
    (metric, judge, condition, scope, generator, pair, variant), the same for a `Record` and its dict."""
    if isinstance(record, Record):
        parts: dict[str, Any] = {
            "metric": record.metric,
            "judge": record.judge,
            "condition": record.condition,
            "scope": record.scope,
            "generator": record.generator,
            "pair": list(record.pair) if record.pair is not None else None,
            "variant": dict(record.variant),
        }
    else:
        pair = record.get("pair")
        parts = {
            "metric": record.get("metric"),
            "judge": record.get("judge"),
            "condition": record.get("condition"),
            "scope": record.get("scope"),
            "generator": record.get("generator"),
            "pair": list(pair) if pair is not None else None,
            "variant": dict(record.get("variant") or {}),
        }
    text = json.dumps(parts, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:12]


@dataclass(frozen=True)
class Verdict:
    """The answer for one (judge, condition, scope); see the module docstring and docs/answer.md.

    ``value``/``ci_low``/``ci_high`` are on the scale of ``metric`` (``null`` is its value when the
    judge does not favour the scope: 0 for differences, 1 for ratios, None when the rung has no such
    value); ``finding`` reads the interval against ``null``: ``favours``, ``disfavours``,
    ``no-clear-difference``, or for the ``alone`` rung ``cannot-separate``. ``evidence`` holds the
    `record_key` of the record the verdict reads first, then of any other record it used; ``also``
    the other rungs' readings (dicts with rung, metric, value, interval, prompts and why they were
    not the verdict); ``harm`` how often the favouritism costs a better answer, where a truth tells
    (a dict, or None); ``needs`` what data would measure it (or measure it better)."""

    judge: str
    condition: str
    scope: str
    status: str
    sentence: str
    judge_id: str | None = None
    rung: str | None = None
    metric: str | None = None
    variant: Mapping[str, Any] = field(default_factory=dict)
    value: float | None = None
    ci_low: float | None = None
    ci_high: float | None = None
    confidence: float | None = None
    n: int = 0
    n_clusters: int = 0
    p_value: float | None = None
    null: float | None = None
    finding: str | None = None
    needs: tuple[str, ...] = ()
    evidence: tuple[str, ...] = ()
    also: tuple[Mapping[str, Any], ...] = ()
    harm: Mapping[str, Any] | None = None

    def __post_init__(self) -> None:
        if self.status not in VERDICT_STATUSES:
            raise ValueError(f"status must be one of {', '.join(VERDICT_STATUSES)}, not {self.status!r}")
        if self.rung is not None and self.rung not in VERDICT_RUNGS:
            raise ValueError(f"rung must be one of {', '.join(VERDICT_RUNGS)} or None, not {self.rung!r}")
        if self.status == "measured" and (self.value is None or self.rung is None):
            raise ValueError("a measured verdict needs a value and a rung")
        for name in ("value", "ci_low", "ci_high", "confidence", "p_value", "null"):
            object.__setattr__(self, name, _number(getattr(self, name), name))
        for name in ("n", "n_clusters"):
            object.__setattr__(self, name, _count(getattr(self, name), name))
        object.__setattr__(self, "variant", MappingProxyType(dict(self.variant or {})))
        object.__setattr__(self, "needs", tuple(str(x) for x in self.needs))
        object.__setattr__(self, "evidence", tuple(str(x) for x in self.evidence))
        object.__setattr__(self, "also", tuple(MappingProxyType(dict(x)) for x in self.also))
        if self.harm is not None:
            object.__setattr__(self, "harm", MappingProxyType(dict(self.harm)))

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-able fields in declaration order (``variant``, ``also`` and ``harm`` as dicts)."""
        out: dict[str, Any] = {}
        for f in fields(self):
            value = getattr(self, f.name)
            if isinstance(value, Mapping):
                value = dict(value)
            elif f.name == "also":
                value = [dict(x) for x in value]
            elif isinstance(value, tuple):
                value = list(value)
            out[f.name] = value
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Verdict:
        """Read `to_dict`'s shape back (unknown keys are refused: a verdict has no extras)."""
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(data) - known)
        if unknown:
            raise ValueError(f"unknown verdict field(s): {', '.join(unknown)}")
        values = dict(data)
        for name in ("needs", "evidence", "also"):
            if name in values:
                values[name] = tuple(values[name] or ())
        return cls(**values)


class Results(Sequence[Record]):
    """The records of one audit (a read-only sequence of `Record`), with the audit's summary."""

    def __init__(
        self,
        records: Iterable[Record | Mapping[str, Any]] = (),
        *,
        summary: Mapping[str, Any] | None = None,
        findings: Sequence[str] = (),
        verdicts: Iterable[Verdict | Mapping[str, Any]] = (),
    ):
        self._given = list(records)
        self._typed: tuple[Record, ...] | None = None
        self.summary: dict[str, Any] = dict(summary or {})
        self.findings: list[str] = list(findings)
        self.verdicts: list[Verdict] = [v if isinstance(v, Verdict) else Verdict.from_dict(v) for v in verdicts]

    @property
    def _records(self) -> tuple[Record, ...]:
        if self._typed is None:  # dicts are read (and validated) when first used as records
            self._typed = tuple(r if isinstance(r, Record) else Record.from_dict(r) for r in self._given)
        return self._typed

    @overload
    def __getitem__(self, index: int) -> Record: ...
    @overload
    def __getitem__(self, index: slice) -> Results: ...

    def __getitem__(self, index: int | slice) -> Record | Results:
        if isinstance(index, slice):
            return Results(self._records[index], summary=self.summary, findings=self.findings, verdicts=self.verdicts)
        return self._records[index]

    def __len__(self) -> int:
        return len(self._given)

    def __iter__(self) -> Iterator[Record]:
        return iter(self._records)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Results):
            return self._records == other._records
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        metrics = sorted({r.metric for r in self._records})
        return f"Results({len(self)} records: {', '.join(metrics[:6])}{', ...' if len(metrics) > 6 else ''})"

    def select(
        self,
        metric: str | Iterable[str] | None = None,
        *,
        scope: str | Iterable[str] | None = None,
        judge: str | Iterable[str] | None = None,
        condition: str | Iterable[str] | None = None,
        **variant: Any,
    ) -> Results:
        """The records matching every criterion given (a value, or several to accept any of them);
        other keywords match variant fields, e.g. ``select(metric="win-rate", ties="half")``."""

        def accepted(wanted: str | Iterable[str] | None) -> set[str] | None:
            return None if wanted is None else ({wanted} if isinstance(wanted, str) else set(wanted))

        tests = {"metric": accepted(metric), "scope": accepted(scope), "judge": accepted(judge), "condition": accepted(condition)}
        out = []
        for record in self._records:
            if any(allowed is not None and getattr(record, name) not in allowed for name, allowed in tests.items()):
                continue
            if any(record.variant.get(k) != v for k, v in variant.items()):
                continue
            out.append(record)
        return Results(out, summary=self.summary, findings=self.findings, verdicts=self.verdicts)

    def to_dicts(self) -> list[dict[str, Any]]:
        """Every record as `Record.to_dict` (the list the JSON outputs hold under ``results``)."""
        return [r.to_dict() for r in self._records]

    def frame(self) -> Any:  # a pandas.DataFrame (pandas is imported on first use)
        """A tidy DataFrame: one row per record, variant fields as flat columns (a variant field
        named like a record field becomes ``variant_<name>``; the whole variant stays in the
        ``variant`` column), ``excluded`` a dict column, ``subject`` the generator or the pair."""
        import pandas as pd

        core = [f.name for f in fields(Record) if f.name not in ("variant", "extra", "keys")]
        rows = []
        for record in self._records:
            row = {name: getattr(record, name) for name in core}
            row["excluded"] = dict(record.excluded)
            row["pair"] = list(record.pair) if record.pair is not None else None
            row["subject"] = record.subject
            row["variant"] = dict(record.variant)
            for key, value in record.variant.items():
                row[f"variant_{key}" if key in row else key] = value
            for key, value in record.extra.items():
                row.setdefault(key, value)
            rows.append(row)
        return pd.DataFrame.from_records(rows, columns=None if rows else [*core, "subject"])

    def document(self) -> dict[str, Any]:
        """The results document as a dict: ``{"schema_version", "summary", "findings", "verdicts",
        "results"}`` (what `to_json` writes and `from_document` reads)."""
        return {
            "schema_version": SCHEMA_VERSION,
            "summary": self.summary,
            "findings": self.findings,
            "verdicts": [v.to_dict() for v in self.verdicts],
            "results": self.to_dicts(),
        }

    def to_json(self, *, indent: int | None = 2) -> str:
        """The one results document every command writes (`document`) as JSON, keys sorted: what
        `nepotism report` and `nepotism card` read back; the records in the shape of `Record.to_dict`."""
        return json.dumps(self.document(), indent=indent, sort_keys=True, default=str)

    @classmethod
    def from_document(cls, document: Any) -> Results:
        """Read a results document back (`document`'s shape; version 1 has no verdicts). `ValueError`
        names what is wrong: a version this package does not read, a part of the wrong type, or a
        shape an older nepotism wrote (a bare list of records, ``{"summary", "records"}``), with
        the command that writes the document now. The one other shape read is the agreement report
        of ``nepotism annotate agreement --json`` (a documented input of ``nepotism report``), made
        into ``annotator-agreement``, ``annotator-kappa``, ``judge-human-agreement`` and
        ``judge-human-kappa`` records here and nowhere else."""
        if isinstance(document, Mapping) and "schema_version" not in document and _is_agreement(document):
            return _agreement_results(document)
        if not isinstance(document, Mapping) or "schema_version" not in document:
            raise ValueError(_old_shape(document))
        version = document.get("schema_version")
        if version not in _READABLE_VERSIONS:
            raise ValueError(
                f"schema_version {version!r} is not one this nepotism reads ({', '.join(map(str, _READABLE_VERSIONS))})"
            )
        results = document.get("results")
        if not isinstance(results, list):
            raise ValueError("'results' must be a list of records")
        summary = document.get("summary") or {}
        if not isinstance(summary, Mapping):
            raise ValueError("'summary' must be an object")
        verdicts = document.get("verdicts") or []
        if not isinstance(verdicts, list):
            raise ValueError("'verdicts' must be a list")
        return cls(results, summary=summary, findings=[str(x) for x in document.get("findings") or []], verdicts=verdicts)


#: The commands that write a results document, for the message refusing an older shape.
_WRITERS = (
    "`nepotism metrics ... --json`, `nepotism mitigate EXPERIMENT --json` (or its output folder's "
    "mitigations.json), `nepotism leakage run`'s results.json, `nepotism leakage audit ... --json`, "
    "`nepotism report`'s results.json"
)


def _old_shape(document: Any) -> str:
    """Why ``document`` is not a results document, and how to make one."""
    if isinstance(document, list):
        what = "a bare list of result records (what `nepotism metrics --json` printed before results documents)"
    elif isinstance(document, Mapping) and isinstance(document.get("records"), list):
        what = (
            "a {summary, records} document (what `nepotism mitigate --json` and `nepotism leakage run` wrote "
            "before results documents)"
        )
    else:
        what = "not a results document"
    return (
        f"{what}; a results document has a schema_version, a summary and a 'results' list: run the command "
        f"that made it again with this nepotism ({_WRITERS})"
    )


#: The fields `new_record` sets from its arguments, which an agreement entry's numbers never replace.
_IDENTITY = frozenset({"metric", "judge", "judge_id", "condition", "generator", "pair", "scope", "variant"})


def _is_agreement(document: Mapping[str, Any]) -> bool:
    return isinstance(document.get("overall"), Mapping) and "annotators" in document


def _agreement_results(document: Mapping[str, Any]) -> Results:
    """The records of ``nepotism annotate agreement --json``: humans with each other (overall and
    per pair of annotators) and each judge with the human majority; the collection is the condition."""
    collection = str(document.get("collection") or "labels")

    def record(metric: str, estimate: Mapping[str, Any], judge: str | None = None, **variant: Any) -> dict[str, Any]:
        keep = {k: v for k, v in estimate.items() if k not in _IDENTITY}
        return new_record(metric, judge, collection, variant=variant, **keep)

    records = []
    overall = document.get("overall") or {}
    for key, metric, name in (
        ("percent_agreement", "annotator-agreement", "percent agreement"),
        ("fleiss_kappa", "annotator-kappa", "Fleiss' kappa"),
        ("krippendorff_alpha", "annotator-kappa", "Krippendorff's alpha"),
    ):
        if isinstance(overall.get(key), Mapping):
            records.append(record(metric, overall[key], statistic=name, between="all annotators"))
    for pair in document.get("pairs") or []:
        between = " vs ".join(map(str, pair.get("annotators") or []))
        if isinstance(pair.get("agreement"), Mapping):
            records.append(record("annotator-agreement", pair["agreement"], statistic="percent agreement", between=between))
        if isinstance(pair.get("cohen_kappa"), Mapping):
            records.append(record("annotator-kappa", pair["cohen_kappa"], statistic="Cohen's kappa", between=between))
    for judge, entry in (document.get("judges") or {}).items():
        if isinstance(entry.get("agreement"), Mapping):
            records.append(
                record(
                    "judge-human-agreement", entry["agreement"], judge=str(judge), statistic="agreement with the human majority"
                )
            )
        if isinstance(entry.get("cohen_kappa"), Mapping):
            records.append(
                record(
                    "judge-human-kappa", entry["cohen_kappa"], judge=str(judge), statistic="Cohen's kappa with the human majority"
                )
            )
    summary = {
        "collection": collection,
        "items": document.get("n_items"),
        "annotators": document.get("annotators"),
        "majority": document.get("majority"),
        "judgment_rows_unmatched": document.get("judgment_rows_unmatched"),
    }
    return Results(records, summary={k: v for k, v in summary.items() if v is not None})
