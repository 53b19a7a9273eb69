"""Pairwise comparisons and their per-prompt sums computed by an embedded columnar engine (DuckDB),
out of core, straight from Parquet — for tables too large to hold as pandas frames.

Two queries over a Parquet file, a partitioned dataset folder or a glob (`nepotism.datasets`:
``judge=NAME`` folders give their rows that column; the rows are in the dataset's file order):

- `engine_comparisons`: the comparisons `nepotism.analyses.comparisons.build_comparisons` makes
  of the same rows — the two presentation orders of each (instance, judge, condition, replicate,
  pair) combined (paper 004 Eq. 1, the ``consistent`` rule: for the two orders' codes c1, c2 of the
  candidate whose name sorts first, outcome = sign(c1 + c2); the ``strict`` rule of paper 003:
  c1 when c1 = c2, else ambiguous), a single order used as it is, a comparison with an order
  without a verdict excluded under that order's `nepotism.records.exclusion_label`, paper 001's
  probability score averaged over both orders — as the same frame, in the same order (each
  comparison where its first row is), optionally for one (judge, condition) only. The audit's own
  functions (`nepotism.analyses.audit.audit_pairwise`) then give the same records
  (``tests/analyses/test_engine.py`` checks both on random tables).
- `per_prompt_sums`: per (judge, condition, instance, candidate) the wins, ties, decided and
  excluded comparisons of those comparisons — the cluster sums every win rate, self-preference
  ratio and parity gap is a ratio of, as one aggregate query (``bench/engine_pairwise.py`` times it
  against Polars' streaming engine and pandas; docs/scale.md).

DuckDB runs the queries with a memory limit (`MEMORY_LIMIT`) and spills to a temporary folder
beyond it, so the input may be larger than memory; the result (one judge's comparisons, or the
per-prompt sums) is what is held. Measured (docs/scale.md): 10M pairwise rows in about 1 GB; 100M
rows' per-prompt sums in 3.18 GB with the 3 GB limit and one thread (with 2 GB they ran out of
memory: an `InputError` saying so, nothing written). What this module leaves out: checking the rows — it reads tables as `nepotism
.tables.validate` leaves them (verdicts A, B, tie or empty; ``status``/``reason`` as documented;
what ``nepotism store export`` writes) and only trims names and lower-cases verdicts; a file that
does not hold such rows must go through `nepotism.datasets.read_files` first. It knows no registry.
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from nepotism.analyses.comparisons import Comparisons
from nepotism.datasets import dataset_files
from nepotism.errors import InputError
from nepotism.records import exclusion_label

__all__ = ["AMBIGUOUS", "MEMORY_LIMIT", "engine_comparisons", "per_prompt_sums"]

#: The exclusion reason of a comparison whose two orders disagree under the strict rule (as `build_comparisons`).
AMBIGUOUS = "ambiguous orders (strict rule)"
#: DuckDB's memory limit: beyond it, its operators spill to a temporary folder.
MEMORY_LIMIT = "3GB"


def _files(source: str | Path) -> list[tuple[Path, dict[str, str]]]:
    path = Path(source) if not isinstance(source, Path) else source
    if path.is_file():
        return [(path, {})]
    files = dataset_files(source)
    if not files:
        raise InputError("the dataset holds no Parquet file (.parquet)", path=str(source))
    return files


@contextmanager
def _connect(threads: int | None, source: str | Path) -> Iterator[Any]:
    """A DuckDB connection with the memory limit and a temporary spill folder (removed after); an
    error of the engine reading the input becomes an `InputError` naming the source."""
    import duckdb

    spill = tempfile.mkdtemp(prefix="nepotism-engine-")
    config: dict[str, Any] = {"memory_limit": MEMORY_LIMIT, "temp_directory": spill, "preserve_insertion_order": False}
    if threads:
        config["threads"] = threads
    try:
        connection = duckdb.connect(config=config)
        try:
            connection.execute("SET enable_progress_bar = false")  # a library writes nothing to the terminal
            yield connection
        except duckdb.Error as error:
            first = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
            raise InputError(f"the engine stopped on the Parquet input: {first}", path=str(source)) from None
        finally:
            connection.close()
    finally:  # also when connecting fails
        shutil.rmtree(spill, ignore_errors=True)


def _rows_sql(connection: Any, files: list[tuple[Path, dict[str, str]]]) -> tuple[str, set[str]]:
    """The rows as a SQL expression (one per table row, coded as `build_comparisons` codes them) and
    the columns the files hold (with the partition columns)."""
    paths = [str(path) for path, _ in files]
    partition_columns = sorted({column for _, values in files for column in values})
    listing = pd.DataFrame(
        {
            "filename": paths,
            "nepotism_file": np.arange(len(paths), dtype=np.int64),
            **{c: [values.get(c) for _, values in files] for c in partition_columns},
        }
    )
    connection.register("nepotism_files", listing)
    scan = "read_parquet($files, filename = true, file_row_number = true, union_by_name = true, hive_partitioning = false)"
    columns = {row[0] for row in connection.execute(f"DESCRIBE SELECT * FROM {scan}", {"files": paths}).fetchall()}
    for column in partition_columns:
        if column in columns:
            raise InputError(f"column '{column}' is both in the files and in their folder names", path=paths[0], field=column)
    columns |= set(partition_columns)
    missing = [c for c in ("instance_id", "judge", "model_a", "model_b", "verdict") if c not in columns]
    if missing:
        raise InputError(f"a pairwise table needs the column(s) {', '.join(missing)}", path=paths[0], field=missing[0])

    def text(column: str, default: str | None = None) -> str:
        if column not in columns:
            return f"'{default}'" if default is not None else "NULL::VARCHAR"
        value = f"nullif(trim(CAST({column} AS VARCHAR)), '')"
        return f"coalesce({value}, '{default}')" if default is not None else value

    verdict = "CASE lower(trim(CAST(verdict AS VARCHAR))) WHEN 'a' THEN 1 WHEN 'b' THEN -1 WHEN 'tie' THEN 0 END"
    status = f"coalesce(lower({text('status')}), CASE WHEN ({verdict}) IS NULL THEN 'unparsed' ELSE 'parsed' END)"
    share = (
        "CAST(prob_a AS DOUBLE) / (CAST(prob_a AS DOUBLE) + CAST(prob_b AS DOUBLE))"
        if {"prob_a", "prob_b"} <= columns
        else "NULL::DOUBLE"
    )
    replicate = "coalesce(CAST(replicate AS BIGINT), 0)" if "replicate" in columns else "0::BIGINT"
    category = f", {text('category')} AS category" if "category" in columns else ""
    rows = f"""
        SELECT nepotism_file * 4294967296 + file_row_number AS ord,
               {text("instance_id")} AS instance_id, {text("judge")} AS judge,
               {text("condition", "default")} AS condition, {replicate} AS replicate,
               {text("model_a")} AS model_a, {text("model_b")} AS model_b, {verdict} AS code_a,
               {status} AS status, {text("reason")} AS reason, {share} AS share_a{category}
        FROM {scan} JOIN nepotism_files USING (filename)"""
    coded = f"""
        SELECT ord, instance_id, judge, condition, replicate, least(model_a, model_b) AS model_x,
               greatest(model_a, model_b) AS model_y,
               CASE WHEN model_a < model_b THEN code_a ELSE -code_a END AS code,
               CASE WHEN model_a < model_b THEN share_a ELSE 1.0 - share_a END AS prob,
               status, reason{", category" if category else ""}
        FROM ({rows})"""
    return coded, columns


def _comparisons_sql(coded: str, rule: str, has_category: bool, *, reasons: bool = True) -> str:
    """The comparisons of the coded rows; without ``reasons``, only their outcomes (no probability
    score, no exclusion reasons: what the per-prompt sums count)."""
    if rule == "consistent":
        outcome = "sign(sum(code))"
    elif rule == "strict":
        outcome = "CASE WHEN min(code) = max(code) THEN min(code) END"
    else:
        raise ValueError("rule must be 'consistent' or 'strict'")
    no_prob = "(prob IS NULL OR isnan(prob))"
    return f"""
        SELECT min(ord) AS ord, instance_id, judge, condition, replicate, model_x, model_y,
               {"arg_min(category, ord) AS category," if has_category else ""}
               CASE WHEN count(code) = count(*) THEN CAST({outcome} AS DOUBLE) END AS outcome,
               count(code) = count(*) AS verdicts{"," if reasons else ""}
               {_REASONS.format(no_prob=no_prob) if reasons else ""}
        FROM ({coded})
        GROUP BY instance_id, judge, condition, replicate, model_x, model_y"""


_REASONS = """CASE WHEN count(*) = count(*) FILTER (WHERE NOT {no_prob}) THEN sum(prob) / count(*) END AS prob_x,
               count(*) AS n_orders,
               arg_min({{'status': status, 'reason': reason}}, ord) FILTER (WHERE code IS NULL) AS why,
               arg_min({{'status': status, 'reason': reason}}, ord) FILTER (WHERE {no_prob}) AS prob_why"""


def _label(why: Any, *, prob: bool = False) -> str | None:
    if not isinstance(why, dict):
        return None
    status = why["status"]
    if prob and status == "parsed":
        return "no label probabilities"
    return exclusion_label(status if status != "parsed" else "unparsed", why["reason"])


def _labels(values: pd.Series, *, prob: bool = False) -> np.ndarray:
    """One label per struct, computed once per distinct (status, reason)."""
    keys = [(v["status"], v["reason"]) if isinstance(v, dict) else None for v in values.tolist()]
    memo: dict[Any, str | None] = {}
    out = np.empty(len(keys), dtype=object)
    for i, key in enumerate(keys):
        if key not in memo:
            memo[key] = _label({"status": key[0], "reason": key[1]} if key else None, prob=prob)
        out[i] = memo[key]
    return out


def _only_where(mask: np.ndarray, labels: np.ndarray) -> pd.Series:
    """An object column of ``labels`` where ``mask`` holds, None elsewhere."""
    out = np.full(mask.size, None, dtype=object)
    out[mask] = labels[mask]
    return pd.Series(out, dtype=object)


def engine_comparisons(
    source: str | Path,
    *,
    rule: str = "consistent",
    judge: str | None = None,
    condition: str | None = None,
    threads: int | None = None,
) -> Comparisons:
    """The comparisons of a pairwise Parquet file or dataset (module docstring), as
    `build_comparisons` gives them (its frame's columns and order; ``rows`` is None); with ``judge``
    and/or ``condition``, those of that judge and condition only."""
    files = _files(source)
    with _connect(threads, source) as connection:
        coded, columns = _rows_sql(connection, files)
        has_category = "category" in columns
        query = _comparisons_sql(coded, rule, has_category)
        where: list[str] = []
        parameters: dict[str, Any] = {"files": [str(path) for path, _ in files]}
        for column, value in (("judge", judge), ("condition", condition)):
            if value is not None:
                where.append(f"{column} = ${column}")
                parameters[column] = value
        if where:
            query = f"SELECT * FROM ({query}) WHERE {' AND '.join(where)}"
        found = connection.execute(f"{query} ORDER BY ord", parameters).df()
    n = len(found)
    two = found["n_orders"].to_numpy() == 2
    outcome = found["outcome"].to_numpy(dtype=float)
    verdicts = found["verdicts"].to_numpy(dtype=bool)
    ambiguous = verdicts & np.isnan(outcome)  # the strict rule's disagreeing orders
    reasons = np.where(ambiguous, AMBIGUOUS, _labels(found["why"]))
    prob_x = found["prob_x"].to_numpy(dtype=float)
    columns_out: dict[str, Any] = {}
    for column in ("instance_id", "judge", "condition"):
        columns_out[column] = pd.Series(found[column].to_numpy(dtype=object), dtype=object)
    columns_out["replicate"] = found["replicate"].to_numpy(dtype=np.int64)
    for column in ("model_x", "model_y"):
        columns_out[column] = pd.Series(found[column].to_numpy(dtype=object), dtype=object)
    if has_category:
        columns_out["category"] = found["category"].to_numpy(dtype=object)
    frame = pd.DataFrame(columns_out)
    frame["outcome"] = outcome
    frame["prob_x"] = prob_x
    frame["n_orders"] = np.where(two, 2, 1)
    frame["prob_excluded_reason"] = _only_where(np.isnan(prob_x), _labels(found["prob_why"], prob=True))
    bad = np.isnan(outcome)
    frame["excluded_reason"] = _only_where(bad, reasons)
    excluded: dict[tuple[str, str], dict[str, int]] = {}
    if n and bad.any():
        counts = pd.DataFrame(
            {"judge": frame["judge"][bad], "condition": frame["condition"][bad], "reason": reasons[bad]}
        ).value_counts()
        for (j, c, reason), count in counts.items():
            excluded.setdefault((j, c), {})[reason] = int(count)
    return Comparisons(frame=frame, excluded=excluded, rule=rule, rows=None)


def per_prompt_sums(
    source: str | Path, *, rule: str = "consistent", threads: int | None = None, out: Path | None = None
) -> pd.DataFrame | None:
    """Per (judge, condition, instance_id, candidate): ``wins``, ``ties``, ``comparisons`` (decided)
    and ``excluded`` (no verdict in an order, or ambiguous) of the comparisons `engine_comparisons`
    gives, each comparison counted for both its candidates (unordered rows). With ``out``, written
    there as Parquet by the engine (nothing held) and None returned."""
    files = _files(source)
    with _connect(threads, source) as connection:
        coded, columns = _rows_sql(connection, files)
        comparisons = _comparisons_sql(coded, rule, False, reasons=False)
        query = f"""
            WITH sides AS (
                SELECT judge, condition, instance_id, CASE WHEN side = 0 THEN model_x ELSE model_y END AS candidate,
                       CASE WHEN side = 0 THEN outcome ELSE -outcome END AS outcome
                FROM ({comparisons}) CROSS JOIN (VALUES (0), (1)) AS sides(side))
            SELECT judge, condition, instance_id, candidate,
                   count(*) FILTER (WHERE outcome > 0) AS wins, count(*) FILTER (WHERE outcome = 0) AS ties,
                   count(outcome) AS comparisons, count(*) - count(outcome) AS excluded
            FROM sides GROUP BY judge, condition, instance_id, candidate"""
        parameters = {"files": [str(path) for path, _ in files]}
        if out is not None:
            target = str(out).replace("'", "''")
            connection.execute(f"COPY ({query}) TO '{target}' (FORMAT parquet)", parameters)
            return None
        return connection.execute(query, parameters).df()
