"""What `nepotism report` and `nepotism card` read: saved results, or judgments to audit first.

- `load_results`: a results document (`nepotism.results.Results.from_document`: what ``nepotism
  metrics --json``, ``mitigate --json`` and its ``mitigations.json``, ``leakage run``'s
  ``results.json``, ``leakage audit --json``, ``demo`` and ``report`` write; and the agreement
  report of ``nepotism annotate agreement --json``, which `Results.from_document` converts). A file
  an older nepotism wrote (a bare list of records, ``{"summary", "records"}``, JSON Lines records)
  is refused, naming the file and the command that writes the document now. Records are checked
  for the fields the report needs (an interval has both ends or none). No shape is guessed here.

- `folder_results`: the result records a run's output folder lists in its ``run.json``
  (``results``: ``nepotism mitigate``'s ``mitigations.json``), for the report to add to the
  folder's audit — every record but those of a metric the audit already measured from the tables.

- `records_instead`: for something given as judgments that holds result records instead (``nepotism
  leakage``'s output folder, a ``results.csv`` / ``results.json`` / ``mitigations.json``), the
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
from typing import TYPE_CHECKING, Any

from nepotism import input_limits
from nepotism._files import is_store, parse_json_line
from nepotism.errors import InputError

if TYPE_CHECKING:
    from nepotism.metrics import Bootstrap

__all__ = ["folder_results", "is_results_file", "is_store", "load_results", "records_instead", "report_records", "results_source"]

_REQUIRED = ("metric", "judge", "value")


def is_results_file(path: str | Path) -> bool:
    """A results document's file: JSON (``.json``). JSON Lines records (an older ``nepotism mitigate
    --out``) are not one (`records_instead` finds them, and `results_source` says how to remake them)."""
    return Path(path).suffix.lower() == ".json"


def load_results(path: str | Path) -> tuple[list[dict[str, Any]], dict[str, Any], list[str]]:
    """``(records, summary, findings)`` of the results document in ``path``
    (`nepotism.results.Results.from_document`; every record read as a `Record`)."""
    from nepotism.results import Record, Results

    path = Path(path)
    if not is_results_file(path):
        raise InputError("not a results document (.json): " + _remake(path), path=str(path))
    try:
        document = parse_json_line(path.read_text(encoding="utf-8"), str(path), None)
    except FileNotFoundError:
        raise InputError("results file not found", path=str(path)) from None
    except UnicodeDecodeError as err:
        raise InputError(f"not a JSON results file: {err}", path=str(path)) from None
    except InputError as err:
        raise InputError(f"not a JSON results file: {err.message}", path=err.path, line=err.line, field=err.field) from None
    try:
        results = Results.from_document(document)
    except ValueError as err:
        raise InputError(str(err), path=str(path)) from None
    # Results.from_document made sure a document with schema_version has a list of results
    given: list[Any] = document["results"] if isinstance(document, dict) and "schema_version" in document else []
    for i, record in enumerate(given):  # each record as `Record` reads it, named by its place in the file
        if not isinstance(record, dict):
            raise InputError(f"result {i} is not an object", path=str(path), field=f"results[{i}]")
        for key in _REQUIRED:
            if key not in record:
                raise InputError(f"result {i} has no '{key}'", path=str(path), field=f"results[{i}].{key}")
        value = record["value"]
        if value is not None and (isinstance(value, bool) or not isinstance(value, int | float)):
            raise InputError(f"result {i}: value must be a number or null", path=str(path), field=f"results[{i}].value")
        low, high = record.get("ci_low"), record.get("ci_high")
        if (low is None) != (high is None):  # `Record` types each end alone; the pages draw and check both
            missing = "ci_low" if low is None else "ci_high"
            raise InputError(
                f"result {i}: an interval needs both ci_low and ci_high (or neither); {missing} is missing",
                path=str(path),
                field=f"results[{i}].{missing}",
            )
        try:
            Record.from_dict(record)
        except (TypeError, ValueError) as err:
            raise InputError(f"result {i}: {err}", path=str(path), field=f"results[{i}]") from None
    records = results.to_dicts()
    for record in records:
        record.setdefault("variant", {})
        record.setdefault("condition", "default")
    summary = dict(results.summary)
    summary.setdefault("source", str(path))
    return records, summary, list(results.findings)


def _remake(path: Path) -> str:
    """How to make the results document of what ``path`` holds."""
    return (
        "it holds result records in a shape an older nepotism wrote; run the command that made it again "
        "(`nepotism mitigate EXPERIMENT --json` or its output folder's mitigations.json, `nepotism leakage run`'s "
        "results.json, `nepotism metrics ... --json`) and give `nepotism report` that results document"
    )


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
            raise InputError(
                "holds result records (metric, value, ci_low, ...), not judgments, and no results "
                "JSON beside them: give `nepotism report` the .json results file",
                path=str(file),
            )
        return results
    if Path(source).is_file() and _holds_records(Path(source)):  # JSON Lines records of an older nepotism
        sibling = Path(source).with_suffix(".json")
        if Path(source).suffix.lower() == ".csv" and sibling.is_file():
            return sibling
        raise InputError("holds result records, not a results document: " + _remake(Path(source)), path=str(source))
    return None


def report_records(
    source: str | Path,
    *,
    references: Sequence[str | Path] = (),
    models: Sequence[str | Path] = (),
    kind: str | None = None,
    rule: str = "consistent",
    protocol: str | None = None,
    bootstrap: Bootstrap | None = None,
) -> tuple[list[dict[str, Any]], dict[str, Any], list[str]]:
    """``(records, summary, findings)`` of what ``nepotism report SOURCE`` reports: a results file
    (`load_results`) as it is; judgments, a store or a run folder audited (`nepotism.audit`, with
    ``references``, ``models`` registries, ``kind``, ``rule``, ``protocol``, ``bootstrap``), plus
    the result records the run folder lists (`folder_results`: e.g. mitigation effects)."""
    found = results_source(source)
    if found is not None:
        return load_results(found)
    from nepotism.api import audit

    results = audit(
        source, references=list(references), models=list(models), kind=kind, rule=rule, protocol=protocol, bootstrap=bootstrap
    )
    records = results.to_dicts()
    return records + folder_results(source, records), results.summary, results.findings


def folder_results(path: str | Path, audited: list[dict[str, Any]]) -> list[dict[str, Any]]:
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
    ``nepotism report`` reads: the file itself (a results document) or a CSV's sibling ``.json``
    (None when there is none, and for JSON Lines records, which an older nepotism wrote). None for
    anything else."""
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
        return file, None
    sibling = file.with_suffix(".json")
    return file, sibling if sibling.is_file() and is_results_file(sibling) else None
