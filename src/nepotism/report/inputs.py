"""What `nepotism report` and `nepotism card` read: saved results, or judgments to audit first.

- `load_results`: a results JSON file — a list of records (``nepotism metrics --json``), a
  document with a ``results`` list (``nepotism demo``, ``nepotism report``) or a ``records`` list
  (``nepotism mitigate --json``, ``nepotism leakage run``'s results.json), with its ``summary``
  and ``findings`` when present; the list of audits of ``nepotism leakage audit --json``; the
  agreement report of ``nepotism annotate agreement --json`` (made into ``annotator-agreement``,
  ``annotator-kappa``, ``judge-human-agreement`` and ``judge-human-kappa`` records); or JSON Lines
  records (``nepotism mitigate --out``). Records are checked for the fields the report needs.

- `folder_results`: the result records a run's output folder lists in its ``run.json``
  (``results``: ``nepotism mitigate``'s ``mitigations.jsonl``), for the report to add to the
  folder's audit — every record but those of a metric the audit already measured from the tables.

- `records_instead`: for something given as judgments that holds result records instead (``nepotism
  leakage``'s output folder, a ``results.csv`` / ``results.json`` / ``mitigations.jsonl``), the
  file ``nepotism report`` reads, so that ``nepotism metrics`` can say what to run.

- `report_records`: everything above put together for one source, as ``nepotism report SOURCE``
  reads it — a results file loaded (also from a folder holding one, as ``nepotism demo`` writes
  it), anything else audited (`nepotism.audit`) with the results its run folder lists added.

Auditing judgments is `nepotism.audit` (`nepotism.api`). What this module leaves out: rendering
(`full`), thresholds (`card`).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from nepotism import input_limits
from nepotism._files import is_store, parse_json_line
from nepotism.errors import InputError

if TYPE_CHECKING:
    from nepotism.metrics import Bootstrap

__all__ = ["folder_results", "is_results_file", "is_store", "load_results", "records_instead", "report_records",
           "results_source"]

_REQUIRED = ("metric", "judge", "value")


def is_results_file(path: str | Path) -> bool:
    """A results JSON file (or the JSON Lines records of ``nepotism mitigate --out``)."""
    path = Path(path)
    if path.suffix.lower() == ".json":
        return True
    if path.suffix.lower() != ".jsonl":
        return False
    try:
        with open(path, encoding="utf-8") as handle:
            first = handle.readline(input_limits.current().line)
        return '"metric"' in first and '"value"' in first
    except (OSError, UnicodeDecodeError):
        return False


def _jsonl(path: Path) -> list:
    records = []
    with open(path, encoding="utf-8") as handle:
        for number, line in input_limits.numbered_lines(handle, path):
            if line.strip():
                records.append(parse_json_line(line, str(path), number))
    return records


def _agreement(document: dict) -> tuple[list[dict], dict]:
    """Records and summary from ``nepotism annotate agreement --json`` (humans with each other, judges with them)."""
    collection = str(document.get("collection") or "labels")

    def record(metric, estimate, judge=None, **variant):
        return {**estimate, "metric": metric, "judge": judge, "condition": collection, "generator": None,
                "pair": None, "scope": None, "variant": variant}

    records = []
    overall = document.get("overall") or {}
    for key, metric, name in (("percent_agreement", "annotator-agreement", "percent agreement"),
                              ("fleiss_kappa", "annotator-kappa", "Fleiss' kappa"),
                              ("krippendorff_alpha", "annotator-kappa", "Krippendorff's alpha")):
        if isinstance(overall.get(key), dict):
            records.append(record(metric, overall[key], statistic=name, between="all annotators"))
    for pair in document.get("pairs") or []:
        between = " vs ".join(map(str, pair.get("annotators") or []))
        if isinstance(pair.get("agreement"), dict):
            records.append(record("annotator-agreement", pair["agreement"], statistic="percent agreement", between=between))
        if isinstance(pair.get("cohen_kappa"), dict):
            records.append(record("annotator-kappa", pair["cohen_kappa"], statistic="Cohen's kappa", between=between))
    for judge, entry in (document.get("judges") or {}).items():
        if isinstance(entry.get("agreement"), dict):
            records.append(record("judge-human-agreement", entry["agreement"], judge=str(judge),
                                  statistic="agreement with the human majority"))
        if isinstance(entry.get("cohen_kappa"), dict):
            records.append(record("judge-human-kappa", entry["cohen_kappa"], judge=str(judge),
                                  statistic="Cohen's kappa with the human majority"))
    summary = {"collection": collection, "items": document.get("n_items"), "annotators": document.get("annotators"),
               "majority": document.get("majority"), "judgment_rows_unmatched": document.get("judgment_rows_unmatched")}
    return records, {k: v for k, v in summary.items() if v is not None}


def _audits(document: list) -> list[dict] | None:
    """The records of ``nepotism leakage audit --json`` (a list of audits, each with its records)."""
    if document and all(isinstance(a, dict) and isinstance(a.get("records"), list) and "metric" not in a
                        for a in document):
        return [r for audit in document for r in audit["records"]]
    return None


def load_results(path: str | Path) -> tuple[list[dict], dict, list[str]]:
    """``(records, summary, findings)`` from a results JSON file."""
    path = Path(path)
    try:
        if path.suffix.lower() == ".jsonl":
            document = _jsonl(path)
        else:
            document = parse_json_line(path.read_text(encoding="utf-8"), str(path), None)
    except FileNotFoundError:
        raise InputError("results file not found", path=str(path)) from None
    except UnicodeDecodeError as err:
        raise InputError(f"not a JSON results file: {err}", path=str(path)) from None
    except InputError as err:
        raise InputError(f"not a JSON results file: {err.message}", path=err.path, line=err.line,
                         field=err.field) from None
    summary, findings = {}, []
    if isinstance(document, dict) and isinstance(document.get("overall"), dict) and "annotators" in document:
        records, summary = _agreement(document)
        document = {"results": records, "summary": summary}
    if isinstance(document, dict):
        key = "results" if isinstance(document.get("results"), list) else "records"
        if not isinstance(document.get(key), list):
            raise InputError("a results document needs a 'results' (or 'records') list of records", path=str(path),
                             field="results")
        records = document[key]
        summary = document.get("summary") or {}
        if not isinstance(summary, dict):
            summary = {}
        if key == "records" and not document.get("summary"):  # `nepotism leakage run`: the run's facts
            summary = {k: document[k] for k in ("experiment", "run_id", "generation_failures", "judgments", "notes")
                       if k in document}
        findings = [str(x) for x in document.get("findings") or []]
    elif isinstance(document, list):
        records = _audits(document)
        if records is None:
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


def results_source(source: str | Path) -> Path | None:
    """The results file ``nepotism report SOURCE`` reads when SOURCE holds results, not judgments:
    SOURCE itself (a results JSON or JSON Lines file; not a store or an Inspect log, which are
    judgments), or the results JSON of a folder of results (``nepotism-demo/``); None for
    judgments (tables, a store, a run folder), which are audited and have cases. A folder of
    records without their JSON is an `InputError`."""
    from nepotism.importers.inspect_log import is_inspect_log

    if is_results_file(source) and not is_store(source) and not is_inspect_log(source):
        return Path(source)
    if Path(source).is_dir() and (found := records_instead(source)) is not None:  # e.g. nepotism-demo/
        file, results = found
        if results is None:
            raise InputError("holds result records (metric, value, ci_low, ...), not judgments, and no results "
                             "JSON beside them: give `nepotism report` the .json results file", path=str(file))
        return results
    return None


def report_records(source: str | Path, *, references: Sequence[str | Path] = (), models: Sequence[str | Path] = (),
                   kind: str | None = None, rule: str = "consistent", protocol: str | None = None,
                   bootstrap: Bootstrap | None = None) -> tuple[list[dict], dict, list[str]]:
    """``(records, summary, findings)`` of what ``nepotism report SOURCE`` reports: a results file
    (`load_results`) as it is; judgments, a store or a run folder audited (`nepotism.audit`, with
    ``references``, ``models`` registries, ``kind``, ``rule``, ``protocol``, ``bootstrap``), plus
    the result records the run folder lists (`folder_results`: e.g. mitigation effects)."""
    found = results_source(source)
    if found is not None:
        return load_results(found)
    from nepotism.api import audit

    results = audit(source, references=list(references), models=list(models), kind=kind, rule=rule,
                    protocol=protocol, bootstrap=bootstrap)
    records = results.to_dicts()
    return records + folder_results(source, records), results.summary, results.findings


def folder_results(path: str | Path, audited: list[dict]) -> list[dict]:
    """The records of the result files listed in the run folder's ``run.json`` (none for another
    source), leaving out metrics present in ``audited`` (the folder's audit measures those from its
    tables: one number each, not two)."""
    from nepotism.run_folder import is_run_folder, read_manifest

    if not is_run_folder(path):
        return []
    measured = {r.get("metric") for r in audited}
    out = []
    for file in read_manifest(path).results.values():
        records, _, _ = load_results(file)
        out += [r for r in records if r.get("metric") not in measured]
    return out


#: Columns every result record has and no judgment table needs together.
_RECORD_COLUMNS = frozenset({"metric", "value", "ci_low", "ci_high"})


def _holds_records(path: Path) -> bool:
    """A CSV or JSON Lines file whose first line is a header / record of result-record fields."""
    if path.suffix.lower() not in (".csv", ".jsonl", ".ndjson"):
        return False
    try:
        with open(path, encoding="utf-8-sig") as handle:
            first = handle.readline(input_limits.current().line)
        if path.suffix.lower() == ".csv":
            return _RECORD_COLUMNS <= {c.strip().strip('"') for c in first.rstrip("\r\n").split(",")}
        return isinstance(row := parse_json_line(first, str(path), 1), dict) and _RECORD_COLUMNS <= set(row)
    except (OSError, UnicodeDecodeError, InputError):
        return False


def records_instead(source: str | Path) -> tuple[Path, Path | None] | None:
    """``(file, results file)`` when ``source`` — a table file, or a folder without ``run.json``
    whose tables are read — holds result records (`load_results`'s input, e.g. ``nepotism
    leakage``'s ``results.csv``) where judgments were expected. The results file is the one
    ``nepotism report`` reads: the file itself (JSON, JSON Lines) or a CSV's sibling ``.json``
    (None when there is none). None for anything else."""
    from nepotism.run_folder import is_run_folder

    path = Path(source)
    if path.is_dir() and not is_run_folder(path):
        files = sorted(p for p in path.iterdir() if p.is_file() and _holds_records(p))
    elif path.is_file() and path.suffix.lower() == ".json":
        try:
            load_results(path)
        except InputError:
            return None
        return path, path
    else:
        files = [path] if path.is_file() and _holds_records(path) else []
    if not files:
        return None
    file = files[0]
    if file.suffix.lower() != ".csv":
        return file, file
    sibling = file.with_suffix(".json")
    return file, sibling if sibling.is_file() and is_results_file(sibling) else None
