"""What `nepotism report` and `nepotism card` read: saved results, or judgments to audit first.

- `load_results`: a results JSON file — a list of records (``nepotism metrics --json``) or a
  document with a ``results`` list (``nepotism demo``, ``nepotism report``), with its ``summary``
  and ``findings`` when present. Records are checked for the fields the report needs.
- `audit_judgments`: a recorded judgment table (CSV/JSONL/Parquet) or a store (SQLite file, its
  judgments exported in the recorded format first) → the audit and suite records, the
  leaderboard records (pairwise), a summary and the findings sentences.

What this module leaves out: rendering (`full`), thresholds (`card`).
"""

from __future__ import annotations

import json
import tempfile
from collections.abc import Sequence
from pathlib import Path

from nepotism.errors import InputError

__all__ = ["audit_judgments", "is_results_file", "is_store", "load_results"]

_REQUIRED = ("metric", "judge", "value")


def is_store(path: str | Path) -> bool:
    """True for an SQLite file (a nepotism store)."""
    try:
        with open(path, "rb") as handle:
            return handle.read(16) == b"SQLite format 3\x00"
    except OSError:
        return False


def is_results_file(path: str | Path) -> bool:
    return Path(path).suffix.lower() == ".json"


def load_results(path: str | Path) -> tuple[list[dict], dict, list[str]]:
    """``(records, summary, findings)`` from a results JSON file."""
    path = Path(path)
    try:
        document = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise InputError("results file not found", path=str(path)) from None
    except (json.JSONDecodeError, UnicodeDecodeError) as err:
        raise InputError(f"not a JSON results file: {err}", path=str(path)) from None
    summary, findings = {}, []
    if isinstance(document, dict):
        if not isinstance(document.get("results"), list):
            raise InputError("a results document needs a 'results' list of records", path=str(path), field="results")
        records = document["results"]
        summary = document.get("summary") or {}
        findings = [str(x) for x in document.get("findings") or []]
    elif isinstance(document, list):
        records = document
    else:
        raise InputError("expected a list of result records or a document with 'results'", path=str(path))
    for i, record in enumerate(records):
        if not isinstance(record, dict):
            raise InputError(f"result {i} is not an object", path=str(path), field=f"results[{i}]")
        for key in _REQUIRED:
            if key not in record:
                raise InputError(f"result {i} has no '{key}'", path=str(path), field=f"results[{i}].{key}")
        value = record["value"]
        if value is not None and (isinstance(value, bool) or not isinstance(value, int | float)):
            raise InputError(f"result {i}: value must be a number or null", path=str(path), field=f"results[{i}].value")
        record.setdefault("variant", {})
        record.setdefault("condition", "default")
    summary.setdefault("source", str(path))
    return records, summary, findings


def _store_table(path: Path, protocol: str | None, workdir: Path) -> Path:
    from nepotism.store import Store

    out = workdir / "judgments.parquet"
    with Store(path) as store:
        if store.export("judgments", out, fmt="parquet", protocol=protocol) == 0:
            raise InputError("the store holds no judgments", path=str(path))
    return out


def audit_judgments(path: str | Path, *, references: Sequence[str | Path] = (), models_files: Sequence[str | Path] = (),
                    kind: str | None = None, rule: str = "consistent", protocol: str | None = None,
                    n_resamples: int = 1000, seed: int = 0, confidence: float = 0.95,
                    method: str = "percentile") -> tuple[list[dict], dict, list[str]]:
    """Audit recorded judgments (or a store's) with every metric whose inputs are present."""
    from nepotism.analyses.audit import AuditOptions
    from nepotism.analyses.comparisons import build_comparisons
    from nepotism.analyses.run_audit import run_audit
    from nepotism.analyses.suite import SuiteOptions, run_suite
    from nepotism.models import load_registry
    from nepotism.report.derived import leaderboard_records
    from nepotism.report.summary import describe
    from nepotism.tables import read_table

    path = Path(path)
    if not path.exists():
        raise InputError("file not found", path=str(path))
    registry = load_registry(models_files)
    refs = {}
    for ref_path in references:
        ref = read_table(ref_path)
        refs[ref.kind] = ref.frame
    with tempfile.TemporaryDirectory() as tmp:
        source = _store_table(path, protocol, Path(tmp)) if is_store(path) else path
        table = read_table(source, kind=kind)
    boot = {"n_resamples": n_resamples, "seed": seed, "confidence": confidence, "method": method}
    summary = {"source": str(path), "rows": len(table), "kind": table.kind, "options": dict(boot),
               "references": [str(p) for p in references]}
    records: list[dict] = []
    if table.kind == "pairwise":
        audit = run_audit(table, registry=registry, rule=rule, options=AuditOptions(**boot))
        records += audit.records
        summary.update({k: v for k, v in audit.summary.items() if k not in ("source", "options")})
        comparisons = build_comparisons(table.frame, rule=rule)
        leaderboard = leaderboard_records(comparisons.frame, registry, n_resamples=n_resamples, seed=seed,
                                          confidence=confidence)
    else:
        leaderboard = []
        summary.update({"instances": int(table.frame["instance_id"].nunique()),
                        "judges": sorted(map(str, table.frame["judge"].unique()))})
    suite = run_suite(table.frame, table.kind, registry, references=refs,
                      options=SuiteOptions(**boot, rule=rule, include_audit=table.kind != "pairwise"))
    records += suite.records + leaderboard
    first = ("win-rate", "self-preference-ratio", "demographic-parity-bias", "paired-win-rate-gap")
    return records, summary, describe([r for r in records if r.get("metric") in first])
