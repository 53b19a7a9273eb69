"""One call from recorded files to result records: read, validate, aggregate, audit.

This is what ``nepotism metrics`` and ``nepotism demo`` run. It validates every input (tables and
registry) before computing anything, so a bad file stops the run before any output exists.
Presentation is left to `nepotism.report`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from nepotism.analyses.audit import AuditOptions, audit_pairwise
from nepotism.analyses.comparisons import Comparisons, build_comparisons
from nepotism.errors import InputError
from nepotism.tables import Table, read_table

__all__ = ["AuditResult", "run_audit"]


@dataclass(frozen=True)
class AuditResult:
    """Result records plus what a reader needs to trust them."""

    records: list[dict]
    summary: dict = field(default_factory=dict)

    def frame(self) -> pd.DataFrame:
        return pd.DataFrame.from_records(self.records)


def _check_judges(table: Table, registry) -> None:
    frame = table.frame
    for judge in frame["judge"].unique():
        if not registry.knows(judge):
            row = int((frame["judge"] == judge).to_numpy().argmax())
            raise InputError(
                f"judge '{judge}' is not in the model registry; add it to a --models file "
                "(see `nepotism models`)",
                path=table.path,
                line=int(frame["_line"].iloc[row]),
                field="judge",
            )


def run_audit(
    judgments: str | Path | Table,
    *,
    registry=None,
    models_files: Sequence[str | Path] = (),
    kind: str | None = None,
    rule: str = "consistent",
    options: AuditOptions | None = None,
) -> AuditResult:
    """Audit a recorded pairwise judgment table with the registry (bundled + ``models_files``)."""
    if registry is None:
        from nepotism.models import load_registry

        registry = load_registry(models_files)
    table = judgments if isinstance(judgments, Table) else read_table(judgments, kind=kind)
    if table.kind != "pairwise":
        raise InputError(
            f"this audit needs a pairwise table; {table.kind} tables are used by `nepotism metrics` "
            "once the full metric library lands",
            path=table.path,
        )
    _check_judges(table, registry)
    comparisons: Comparisons = build_comparisons(table.frame, rule=rule)
    records = audit_pairwise(comparisons, registry, options=options)
    frame = comparisons.frame
    unknown = sorted(
        m for m in set(frame["model_x"]) | set(frame["model_y"]) if not registry.knows(m)
    )
    summary = {
        "source": str(table.path),
        "rows": len(table),
        "comparisons": int(len(frame)),
        "single_order_comparisons": int((frame["n_orders"] == 1).sum()),
        "excluded_comparisons": {f"{j} / {c}": v for (j, c), v in comparisons.excluded.items()},
        "instances": int(frame["instance_id"].nunique()),
        "judges": sorted(frame["judge"].unique()),
        "generators": int(len(set(frame["model_x"]) | set(frame["model_y"]))),
        "generators_not_in_registry": unknown,
        "aggregation_rule": rule,
        "options": {**(options or AuditOptions()).bootstrap.as_dict(),
                    "opponents": (options or AuditOptions()).opponents},
    }
    return AuditResult(records=records, summary=summary)
