"""The value every ground-truth grader returns.

A grader never turns "could not tell" into "wrong": ``correct`` is ``None`` when no answer could be
extracted or checked, and callers count those apart. This module holds only the record.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["GradeResult"]


@dataclass(frozen=True)
class GradeResult:
    """The outcome of grading one response against its ground truth.

    ``correct``: True / False, or None when the response could not be graded (no answer found,
    sandbox error, ...). ``extracted``: the answer read from the response (None if none).
    ``method``: how the answer was extracted (e.g. ``"boxed"``, ``"letter:answer-is"``, ``"sandbox"``).
    ``decided_by``: which comparison settled ``correct`` (e.g. ``"math-verify"``, ``"string"``).
    ``detail``: a short human-readable note (why ungradable, sandbox status, ...).
    """

    correct: bool | None
    extracted: str | None
    method: str | None
    decided_by: str | None = None
    detail: str = ""

    @property
    def gradable(self) -> bool:
        """True when ``correct`` is a definite True or False."""
        return self.correct is not None
