"""`Estimate`: what every metric returns — a value with its bootstrap interval, n and exclusions.

A value that cannot be computed (an empty denominator) is NaN with the reason in ``note``; it is
never replaced by 0. This module only defines the record; `bootstrap` fills it.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

__all__ = ["Estimate"]


@dataclass(frozen=True)
class Estimate:
    """A point estimate with a seeded cluster-bootstrap confidence interval.

    ``n`` counts the units the statistic used (comparisons, candidates, verdicts), ``n_clusters``
    the prompts (instances) they came from — the unit the bootstrap resamples — and
    ``n_excluded`` the units left out, with ``excluded`` giving the count per reason.
    ``p_value`` is set for metrics that test a one-sided hypothesis (e.g. value > 0).
    """

    value: float
    ci_low: float
    ci_high: float
    n: int
    n_clusters: int
    n_excluded: int = 0
    excluded: Mapping[str, int] = field(default_factory=dict)
    confidence: float = 0.95
    method: str = "percentile"
    n_resamples: int = 0
    p_value: float | None = None
    note: str | None = None

    @property
    def defined(self) -> bool:
        return not math.isnan(self.value)

    def as_dict(self) -> dict[str, Any]:
        """A JSON-able dict (NaN becomes None)."""

        def clean(x: Any) -> Any:
            if isinstance(x, float) and math.isnan(x):
                return None
            return x

        return {
            "value": clean(self.value),
            "ci_low": clean(self.ci_low),
            "ci_high": clean(self.ci_high),
            "n": self.n,
            "n_clusters": self.n_clusters,
            "n_excluded": self.n_excluded,
            "excluded": dict(self.excluded),
            "confidence": self.confidence,
            "method": self.method,
            "n_resamples": self.n_resamples,
            "p_value": clean(self.p_value),
            "note": self.note,
        }
