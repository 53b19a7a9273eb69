"""Students and their lineage: who taught whom, written into a registry file every metric reads.

A `Student` records how it was made (method, base model, generator, data digest, mixing, training
settings, where its weights or endpoint are). `write_student_registry` writes one registry TOML
with a ``[models."<student>"]`` table per student: ``family``/``series`` of its base,
``parent = base``, ``teachers = [teacher]`` (the generator, or for an inheriting student the
student whose answers it learned from, written earlier in the same file: the registry follows the
chain back to the generator), a source note per edge and a ``notes`` line saying how it was made. The leakage run loads the bundled registry, the experiment's own files and this
file together (`registry_with_students`), so `Registry.relation(judge, student)` says STUDENT for
the judge that generated its data, for every metric of the library. An ICL student has no weights
of its own: its ``parent`` edge means "runs on the base's weights". Not done here: choosing
students or training them (see `nepotism.leakage.students`).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from nepotism._files import atomic_write
from nepotism.errors import InputError

__all__ = ["METHODS", "Student", "registry_with_students", "student_id", "write_student_registry"]

METHODS = ("icl", "sft", "dpo", "external")
_SAFE = re.compile(r"[^A-Za-z0-9._+-]+")


@dataclass(frozen=True)
class Student:
    """One student: ``id`` (registry id), ``method``, ``base`` and ``generator`` (registry ids),
    ``group`` (students compared with each other share it: same method, base and variant),
    ``variant`` (e.g. ``{"mix": 0.3, "other": "human"}``), ``how`` (method details: k, data
    digest, training configuration, adapter or endpoint) and ``teacher`` (whose answers it learned
    from when that is not ``generator`` itself: the parent student of paper 000 §5.2's inheritance)."""

    id: str
    method: str
    base: str
    generator: str
    group: str
    variant: Mapping[str, Any] = field(default_factory=dict)
    how: Mapping[str, Any] = field(default_factory=dict)
    teacher: str | None = None

    def as_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "method": self.method,
            "base": self.base,
            "generator": self.generator,
            "group": self.group,
            "variant": dict(self.variant),
            "how": dict(self.how),
            "teacher": self.teacher or self.generator,
        }


def student_id(method: str, base: str, generator: str, suffix: str = "") -> str:
    """``<base>-<method>-from-<generator>[-<suffix>]`` with characters a registry id accepts."""
    raw = f"{base}-{method}-from-{generator}" + (f"-{suffix}" if suffix else "")
    return _SAFE.sub("_", raw)


def _toml_str(value: str) -> str:
    return json.dumps(value, ensure_ascii=False)  # a JSON string is a valid TOML basic string


def _describe(student: Student) -> str:
    details = ", ".join(f"{k}={v}" for k, v in sorted(student.how.items()) if not isinstance(v, (dict, list)))
    variant = ", ".join(f"{k}={v}" for k, v in sorted(student.variant.items()))
    parts = [f"nepotism leakage student: method={student.method}"]
    if variant:
        parts.append(f"variant {variant}")
    if details:
        parts.append(details)
    return "; ".join(parts)


def write_student_registry(students: Sequence[Student], registry: Any, path: str | Path) -> Path:
    """Write the registry TOML of ``students`` (bases and generators must be registered)."""
    lines = ["# Written by `nepotism leakage`: one entry per student, with its lineage.", ""]
    seen: set[str] = set()
    for s in students:
        if s.id in seen:
            raise ValueError(f"student id {s.id!r} twice")
        seen.add(s.id)
        for role, name in (("base", s.base), ("generator", s.generator)):
            if not registry.knows(name):
                raise InputError(
                    f"{role} {name!r} of student {s.id!r} is not in the model registry", field=f"leakage.students.{role}"
                )
        if registry.knows(s.id):
            raise InputError(f"student id {s.id!r} is already a registered model; rename the student", field="leakage.students")
        if s.teacher is not None and s.teacher not in seen:
            raise InputError(
                f"teacher {s.teacher!r} of student {s.id!r} must be a student listed before it", field="leakage.students.inherit"
            )
        base = registry.get(s.base)
        gen = s.teacher if s.teacher is not None else registry.resolve(s.generator)
        lines.append(f"[models.{_toml_str(s.id)}]")
        lines.append(f"family = {_toml_str(base.family)}")
        if base.series:
            lines.append(f"series = {_toml_str(base.series)}")
        lines.append(f"parent = {_toml_str(base.id)}")
        lines.append(f"teachers = [{_toml_str(gen)}]")
        parent_note = (
            "runs on the base model's weights with in-context demonstrations"
            if s.method == "icl"
            else f"{s.method} of the base model"
        )
        lines.append(
            "sources = { parent = "
            + _toml_str(parent_note)
            + ", "
            + _toml_str(f"teachers.{gen}")
            + " = "
            + _toml_str(
                f"learned from {gen}'s synthetic data ({s.method})"
                + ("" if s.teacher is None else f"; {gen} descends from {s.generator}")
            )
            + " }"
        )
        lines.append(f"notes = {_toml_str(_describe(s))}")
        lines.append("")
    text = "\n".join(lines)
    return atomic_write(path, lambda tmp: tmp.write_text(text, encoding="utf-8"))


def registry_with_students(files: Sequence[str | Path], student_file: str | Path) -> Any:
    """The bundled registry plus ``files`` plus the generated student file."""
    from nepotism.models import load_registry

    return load_registry([*map(str, files), str(student_file)])
