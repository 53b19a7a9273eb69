"""Queries over a validated model registry: name resolution, lineage and judge/model relations.

A `Registry` is built by `nepotism.models.loading` from TOML files and is immutable. It answers
"which model is this name?" and "how is this judge related to that model?". It does not read files,
does not validate input (the loader does) and holds no benchmark data.

Vocabulary used below (all transitive, all computed on registered ids only):

* *ancestors* of M: the chain ``M.parent``, ``M.parent.parent``, ... (fine-tuning lineage).
* *data sources* of M: every teacher of M or of one of M's ancestors, plus, recursively, the data
  sources of each such teacher. It is the set of models whose outputs (generations, preference
  labels or logits) went, directly or through a distillation chain, into M's weights.
* two models are *lineage-related* when one is an ancestor of the other.
"""

from __future__ import annotations

import enum
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from functools import cached_property
from types import MappingProxyType
from typing import Any

__all__ = ["AUDITED_SCOPES", "SCOPES", "SCOPE_LADDER", "ModelInfo", "Registry", "Relation", "less_related", "untagged"]

SCOPES: tuple[str, ...] = ("self", "family", "student", "teacher", "lineage")
"""Predicates accepted by `Registry.related`; see that method for their exact meaning."""

#: The scopes every metric audits, strongest first (`Registry.scope`).
AUDITED_SCOPES: tuple[str, ...] = ("self", "family", "student", "family-student")
#: Every value `Registry.scope` returns, from the most to the least related: an ``opponents=any``
#: comparison pairs a candidate with one strictly lower on this ladder (`less_related`).
SCOPE_LADDER: tuple[str, ...] = ("self", "family", "student", "family-student", "teacher", "unrelated", "unknown")


class Relation(enum.Enum):
    """How a judge is related to a model, strongest first (this is the precedence order).

    * ``SELF``: both names resolve to the same registered id.
    * ``LINEAGE``: one is an ancestor of the other through ``parent`` links (either direction,
      any depth).
    * ``STUDENT``: the model is a student of the judge: one of the model's data sources (see the
      module docstring: its teachers, its ancestors' teachers, and their teachers in turn) is the
      judge itself, an ancestor of the judge, or a descendant of the judge. We count ancestors and
      descendants because a fine-tune shares most of the style of the model it came from.
    * ``TEACHER``: the reverse: the judge is a student of the model.
    * ``FAMILY_STUDENT``: a data source of the model belongs to the judge's family.
    * ``SAME_SERIES``: both have the same non-empty ``series``.
    * ``SAME_FAMILY``: both have the same ``family``.
    * ``UNRELATED``: both are registered and none of the above holds.
    * ``UNKNOWN``: at least one of the names is not in the registry.
    """

    SELF = "self"
    LINEAGE = "lineage"
    STUDENT = "student"
    TEACHER = "teacher"
    FAMILY_STUDENT = "family_student"
    SAME_SERIES = "same_series"
    SAME_FAMILY = "same_family"
    UNRELATED = "unrelated"
    UNKNOWN = "unknown"


@dataclass(frozen=True)
class ModelInfo:
    """One registered model. ``sources`` maps a lineage edge (``"parent"`` or ``"teachers.<id>"``)
    to a short note naming the paper or model card that documents it. Prices are USD per million
    tokens. ``files`` lists the registry files that defined or extended this entry."""

    id: str
    family: str
    series: str | None = None
    aliases: tuple[str, ...] = ()
    parent: str | None = None
    teachers: tuple[str, ...] = ()
    sources: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))
    provider: str | None = None
    price_input_per_mtok: float | None = None
    price_output_per_mtok: float | None = None
    notes: str | None = None
    files: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready plain dict of every field."""
        return {
            "id": self.id,
            "family": self.family,
            "series": self.series,
            "aliases": list(self.aliases),
            "parent": self.parent,
            "teachers": list(self.teachers),
            "sources": dict(self.sources),
            "provider": self.provider,
            "price_input_per_mtok": self.price_input_per_mtok,
            "price_output_per_mtok": self.price_output_per_mtok,
            "notes": self.notes,
            "files": list(self.files),
        }


class Registry:
    """An immutable, validated set of models. Build it with `nepotism.models.load_registry`.

    The constructor trusts its input: it expects ids and aliases to be unique (also
    case-insensitively), every ``parent``/``teachers`` id to be registered and the edges to be
    acyclic, which `load_registry` guarantees.
    """

    def __init__(self, models: Mapping[str, ModelInfo]) -> None:
        self._models: dict[str, ModelInfo] = dict(models)
        self._exact: dict[str, str] = {}
        self._folded: dict[str, str] = {}
        for model_id, info in self._models.items():
            for name in (model_id, *info.aliases):
                self._exact[name] = model_id
                self._folded[name.casefold()] = model_id
        self._sources_memo: dict[str, frozenset[str]] = {}
        # the one cache of relation look-ups (the registry is immutable): (judge, model) → Relation / scope
        self._relation_memo: dict[tuple[str, str], Relation] = {}
        self._scope_memo: dict[tuple[str, str], str] = {}

    # -- names ------------------------------------------------------------------------------
    def __len__(self) -> int:
        return len(self._models)

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and self.knows(name)

    def __iter__(self) -> Iterator[ModelInfo]:
        return (self._models[i] for i in self.ids())

    def ids(self) -> list[str]:
        """All registered ids, sorted."""
        return sorted(self._models)

    def resolve(self, name: str) -> str:
        """The registered id for ``name``.

        Steps: drop an ``@tag`` suffix (everything from the first ``@``, e.g. ``gpt-4o@sample2``
        becomes ``gpt-4o``); then look the name up among ids and aliases, exactly first and then
        case-insensitively; if that fails and the name looks like a Hugging Face repo id
        (``org/name``), retry with the part after the last ``/``. Raises `KeyError` otherwise.
        """
        if not isinstance(name, str):
            raise KeyError(name)
        base = untagged(name)
        candidates = [base]
        if "/" in base:
            candidates.append(base.rsplit("/", 1)[1])
        for candidate in candidates:
            if candidate in self._exact:
                return self._exact[candidate]
            folded = self._folded.get(candidate.casefold())
            if folded is not None:
                return folded
        raise KeyError(f"unknown model name {name!r}")

    def knows(self, name: str) -> bool:
        """Whether `resolve` would succeed."""
        try:
            self.resolve(name)
        except KeyError:
            return False
        return True

    def get(self, name: str) -> ModelInfo:
        """The `ModelInfo` of a name (id or alias); `KeyError` when unknown."""
        return self._models[self.resolve(name)]

    def family_of(self, name: str) -> str | None:
        """The family of a name, or None when the name is not registered."""
        return self._models[self.resolve(name)].family if self.knows(name) else None

    # -- lineage ----------------------------------------------------------------------------
    def ancestors_of(self, name: str) -> list[str]:
        """The parent chain of a model, nearest first (empty for a base model)."""
        chain: list[str] = []
        current = self._models[self.resolve(name)].parent
        while current is not None:
            chain.append(current)
            current = self._models[current].parent
        return chain

    def teachers_of(self, name: str) -> list[str]:
        """Sorted data sources of a model: its teachers, its ancestors' teachers and, recursively,
        their own data sources (a distillation chain passes a teacher's style on). Only models
        named in ``teachers`` fields appear here, not their relatives; `relation` is broader."""
        return sorted(self._data_sources(self.resolve(name)))

    def students_of(self, name: str) -> list[str]:
        """Sorted ids whose data sources (see `teachers_of`) contain this model."""
        target = self.resolve(name)
        return sorted(m for m in self._models if target in self._data_sources(m))

    def _data_sources(self, model_id: str) -> frozenset[str]:
        memo = self._sources_memo.get(model_id)
        if memo is not None:
            return memo
        found: set[str] = set()
        for node in (model_id, *self._ancestor_ids[model_id]):
            for teacher in self._models[node].teachers:
                found.add(teacher)
                found |= self._data_sources(teacher)
        result = frozenset(found)
        self._sources_memo[model_id] = result
        return result

    @cached_property
    def _ancestor_ids(self) -> dict[str, frozenset[str]]:
        out: dict[str, frozenset[str]] = {}
        for model_id in self._models:
            chain = []
            current = self._models[model_id].parent
            while current is not None:
                chain.append(current)
                current = self._models[current].parent
            out[model_id] = frozenset(chain)
        return out

    def _lineage(self, a: str, b: str) -> bool:
        return a != b and (a in self._ancestor_ids[b] or b in self._ancestor_ids[a])

    def _is_student(self, judge: str, model: str) -> bool:
        if judge == model:
            return False
        return any(t == judge or self._lineage(t, judge) for t in self._data_sources(model))

    def _is_family_student(self, judge: str, model: str) -> bool:
        family = self._models[judge].family
        return any(self._models[t].family == family for t in self._data_sources(model))

    # -- relations --------------------------------------------------------------------------
    def relation(self, judge: str, model: str) -> Relation:
        """The strongest `Relation` of ``judge`` to ``model`` in the order the enum lists them;
        `Relation.UNKNOWN` when either name is not registered (never raises for unknown names).
        Answers are remembered per (judge, model) names: callers need no cache of their own."""
        key = (judge, model)
        found = self._relation_memo.get(key)
        if found is None:
            found = self._relation_memo[key] = self._relation(judge, model)
        return found

    def _relation(self, judge: str, model: str) -> Relation:
        if not (self.knows(judge) and self.knows(model)):
            return Relation.UNKNOWN
        j, m = self.resolve(judge), self.resolve(model)
        if j == m:
            return Relation.SELF
        if self._lineage(j, m):
            return Relation.LINEAGE
        if self._is_student(j, m):
            return Relation.STUDENT
        if self._is_student(m, j):
            return Relation.TEACHER
        if self._is_family_student(j, m):
            return Relation.FAMILY_STUDENT
        jinfo, minfo = self._models[j], self._models[m]
        if jinfo.series is not None and jinfo.series == minfo.series:
            return Relation.SAME_SERIES
        if jinfo.family == minfo.family:
            return Relation.SAME_FAMILY
        return Relation.UNRELATED

    def scope(self, judge: str, model: str) -> str:
        """The one scope rule every metric uses: the scope of the strongest `relation`.

        ``self`` (SELF); ``family`` (LINEAGE, SAME_SERIES, SAME_FAMILY); ``student`` (STUDENT);
        ``family-student`` (FAMILY_STUDENT); ``teacher`` (TEACHER); ``unrelated``; ``unknown``
        (a name the registry does not know). Scopes are exclusive: a model in two relations counts
        in the strongest only (a fine-tune of the judge that also learned from it is family, since
        LINEAGE comes first). A name is always ``self`` to itself, known or not (``@tag`` suffixes
        ignored). `related` answers the overlapping lineage predicates instead (e.g. for
        ``nepotism models relate``); no metric uses it. Remembered per (judge, model) names, as
        `relation`.
        """
        key = (judge, model)
        found = self._scope_memo.get(key)
        if found is None:
            found = "self" if untagged(judge) == untagged(model) else _SCOPE_OF[self.relation(judge, model)]
            self._scope_memo[key] = found
        return found

    def is_related(self, judge: str, model: str) -> bool:
        """Whether ``model`` is in any of the judge's scopes (`related_scope` of `scope`): the one
        "is related" every metric, leaderboard, jury and audit asks."""
        return related_scope(self.scope(judge, model))

    def is_unrelated(self, judge: str, model: str) -> bool:
        """Whether the registry knows both names and relates them in no way (scope ``unrelated``):
        what a clean comparison needs of a third judge. An unknown name is neither related nor
        unrelated."""
        return self.scope(judge, model) == "unrelated"

    def related(self, judge: str, model: str, scope: str) -> bool:
        """Whether ``model`` is inside the judge's ``scope``; scopes are predicates, independent of
        the precedence of `relation` (a model can be both a descendant and a student):

        * ``"self"``: same id.
        * ``"family"``: same family and a different id (so descendants in the family count).
        * ``"student"``: the STUDENT predicate of `Relation` holds (model learned from the judge).
        * ``"teacher"``: the TEACHER predicate holds (judge learned from the model).
        * ``"lineage"``: one is a strict ancestor of the other.

        Raises `KeyError` for an unregistered name (an unknown model is not "unrelated") and
        `ValueError` for a scope not in `SCOPES`.
        """
        if scope not in SCOPES:
            raise ValueError(f"unknown scope {scope!r}; expected one of {', '.join(SCOPES)}")
        j, m = self.resolve(judge), self.resolve(model)
        if scope == "self":
            return j == m
        if scope == "family":
            return j != m and self._models[j].family == self._models[m].family
        if scope == "student":
            return self._is_student(j, m)
        if scope == "teacher":
            return self._is_student(m, j)
        return self._lineage(j, m)


_SCOPE_OF = {
    Relation.SELF: "self",
    Relation.LINEAGE: "family",
    Relation.SAME_SERIES: "family",
    Relation.SAME_FAMILY: "family",
    Relation.STUDENT: "student",
    Relation.FAMILY_STUDENT: "family-student",
    Relation.TEACHER: "teacher",
    Relation.UNRELATED: "unrelated",
    Relation.UNKNOWN: "unknown",
}


#: The scopes of a model outside every relation to the judge (an unknown name is never related).
NOT_RELATED = frozenset({"unrelated", "unknown"})


def related_scope(scope: str | None) -> bool:
    """Whether a `Registry.scope` value (as records and tables carry it) is a relation to the judge:
    anything but ``unrelated``, ``unknown`` or missing.

    >>> related_scope("family-student"), related_scope("teacher"), related_scope("unknown"), related_scope(None)
    (True, True, False, False)
    """
    return scope is not None and scope not in NOT_RELATED


def untagged(name: str) -> str:
    """The model a name stands for: the name without its ``@tag`` (everything from the first ``@``,
    surrounding spaces dropped), so ``gpt-4o@sample2`` and ``gpt-4o@output_1`` are samples of
    ``gpt-4o``. Registry ids and aliases never hold an ``@`` (`load_registry` refuses them)."""
    return str(name).split("@", 1)[0].strip()


def less_related(opponent_scope: str, scope: str) -> bool:
    """Whether an opponent in ``opponent_scope`` is strictly less related to the judge than a
    candidate in ``scope`` (the ``opponents=any`` population): lower on the ladder self > family >
    student > family-student > teacher > unrelated / unknown. A family-student's opponents are thus
    never the judge's family.

    >>> less_related("family", "family-student"), less_related("unrelated", "family-student")
    (False, True)
    """
    return SCOPE_LADDER.index(opponent_scope) > SCOPE_LADDER.index(scope) and not (
        {opponent_scope, scope} == {"unrelated", "unknown"}
    )
