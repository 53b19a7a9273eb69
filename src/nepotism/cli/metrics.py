"""``nepotism metrics``: compute every metric whose inputs are present, for every judge."""

from __future__ import annotations

import click

from nepotism.cli._common import (
    bootstrap_options,
    echo_json,
    expand_run_folders,
    format_option,
    models_option,
    print_table,
)

_JUDGED = ("pairwise", "pointwise", "rubric", "recognition", "recognition-pairwise")


def _split(values, option):
    from nepotism.errors import InputError

    out = []
    for value in values:
        parts = [p.strip() for p in value.split(",") if p.strip()]
        if len(parts) < 2:
            raise InputError(f"expected at least two comma-separated names, got '{value}'", field=option)
        out.append(parts)
    return out


def _check_judges(table, registry, allowed=()) -> None:
    from nepotism.errors import InputError

    frame = table.frame
    for judge in frame["judge"].unique():
        if judge not in allowed and not registry.knows(judge):
            row = int((frame["judge"] == judge).to_numpy().argmax())
            raise InputError(f"judge '{judge}' is not in the model registry; add it to a --models file "
                             "(see `nepotism models`)", path=table.path, line=int(frame["_line"].iloc[row]),
                             field="judge")


def _with_committees(table, committees):
    """The table with each committee's majority-vote rows added (002 §3)."""
    import pandas as pd

    from nepotism.analyses.suite import committee
    from nepotism.errors import InputError
    from nepotism.tables import Table

    if not committees:
        return table
    if table.kind not in ("rubric", "pairwise"):
        raise InputError(f"--committee needs a rubric or pairwise table, not {table.kind}", path=table.path,
                         field="--committee")
    frames = [table.frame]
    for members in committees:
        missing = sorted(set(members) - set(table.frame["judge"]))
        if missing:
            raise InputError(f"committee member(s) not among the judges: {', '.join(missing)}", path=table.path,
                             field="--committee")
        frames.append(committee(table.frame, members))
    return Table(kind=table.kind, frame=pd.concat(frames, ignore_index=True), path=table.path)


@click.command("metrics")
@click.argument("judgments", nargs=-1, required=True, type=click.Path())
@click.option("--reference", multiple=True, type=click.Path(dir_okay=False),
              help="Reference table (preference-ref, correctness-ref, rubric-ref, rubric-items); repeatable.")
@click.option("--kind", type=click.Choice(list(_JUDGED)), help="Table kind of a single JUDGMENTS file, when the columns do not tell.")
@click.option("--rule", type=click.Choice(["consistent", "strict"]), default="consistent", show_default=True,
              help="How to combine the two presentation orders: paper 004 Eq. 1, or paper 003's strict agreement.")
@click.option("--opponents", type=click.Choice(["unrelated", "any"]), default="unrelated", show_default=True,
              help="Which opponents count in the self-preference ratio and demographic-parity bias of related "
                   "candidates. (Paper 004's D_diff metrics always come for both, as variant opponents.)")
@click.option("--leaderboard", type=click.Path(dir_okay=False),
              help="Reference leaderboard CSV with columns model, score (higher = better) for ranking-difference.")
@click.option("--rank-against", metavar="JUDGE", help="Rank every judge's leaderboard against this judge's.")
@click.option("--committee", "committees", multiple=True, metavar="J1,J2,J3",
              help="Add the majority vote of these judges as one judge (rubric or pairwise tables); repeatable.")
@click.option("--slice", "slices", multiple=True, metavar="COLUMN",
              help="Repeat every metric per value of COLUMN (e.g. category, condition), or per "
                   "rubric-polarity / rubric-length (needs rubric-items); repeatable.")
@click.option("--agreement", type=click.FloatRange(0.0, 1.0), metavar="THRESHOLD",
              help="Rubric tables: also recompute every metric on the rubrics whose inter-judge agreement is at "
                   "least THRESHOLD (paper 002 Fig. 4); those records carry variant agreement_at_least.")
@click.option("--recognition-target", type=click.Choice(["self", "student", "family"]), default="self",
              show_default=True, help="Whose answer a recognition question is about.")
@click.option("--perplexity-bins", type=click.IntRange(1, 100), default=5, show_default=True,
              help="Equal-count bins of the perplexity difference for perplexity-win-rate.")
@click.option("--correlate", multiple=True, metavar="METRIC_X,METRIC_Y",
              help="Also report Pearson r across judges between two metrics' headline values; repeatable.")
@models_option
@bootstrap_options
@click.option("--json", "as_json", is_flag=True, help="Print the result records as JSON.")
@format_option
def command(judgments, reference, kind, rule, opponents, leaderboard, rank_against, committees, slices, agreement,
            recognition_target, perplexity_bins, correlate, models_files, bootstrap, as_json, output_format):
    """Compute every metric whose inputs are present in JUDGMENTS, for every judge.

    JUDGMENTS is one or more judgment tables (pairwise, pointwise, rubric, recognition,
    recognition-pairwise), or the output folder of `nepotism run` (its run.json names the tables,
    the graded references and the models file, so no other flag is needed). Give a recognition table together with a pairwise table to get
    recognition-preference-association. Judgments without a verdict are left out of every metric
    and listed by reason (unparsed-conflicting, unparsed-low-label-mass, failed-timeout, ...;
    records of metric excluded-verdicts). Each result is a record {metric, judge, condition,
    generator, pair, scope, variant, value, ci_low, ci_high, n, n_clusters, n_excluded, excluded}.
    Intervals come from a seeded bootstrap that resamples prompts (instances), not rows: the same
    --seed gives the same numbers. --correlate adds records with metric "correlation" (Pearson r
    with a Fisher-z interval across judges).
    """
    from nepotism.analyses.audit import AuditOptions, audit_pairwise
    from nepotism.analyses.comparisons import build_comparisons
    from nepotism.analyses.suite import SuiteOptions, agreement_filter, read_leaderboard, run_suite
    from nepotism.analyses.suite import correlate as correlate_fn
    from nepotism.errors import InputError
    from nepotism.metrics.catalogue import METRICS
    from nepotism.models import load_registry
    from nepotism.tables import read_table

    judgments, reference, models_files = expand_run_folders(judgments, reference, models_files)
    if kind and len(judgments) > 1:
        raise InputError("--kind applies to a single JUDGMENTS file", field="--kind")
    pairs = _split(correlate, "--correlate")
    for pair in pairs:
        unknown = [m for m in pair[:2] if m not in METRICS]
        if unknown or len(pair) != 2:
            raise InputError(f"--correlate takes two metric ids, e.g. judge-accuracy,self-preference-ratio; "
                             f"unknown: {', '.join(unknown) or pair}", field="--correlate")
    groups = _split(committees, "--committee")
    references = {}
    for path in reference:
        ref = read_table(path)
        if ref.kind in _JUDGED:
            raise InputError(f"a {ref.kind} table is a judgment table: pass it as JUDGMENTS", path=path)
        references[ref.kind] = ref.frame
    registry = load_registry(models_files)
    tables = [read_table(path, kind=kind) for path in judgments]
    kinds = [t.kind for t in tables]
    for dup in {k for k in kinds if kinds.count(k) > 1}:
        raise InputError(f"two {dup} tables given; merge them into one file", field="JUDGMENTS")
    for table in tables:
        _check_judges(table, registry)
    board = read_leaderboard(leaderboard) if leaderboard else None
    suite_options = SuiteOptions(bootstrap=bootstrap, rule=rule, include_audit=False, slices=tuple(slices), leaderboard=board,
                                 rank_against=rank_against, recognition_target=recognition_target,
                                 perplexity_bins=perplexity_bins)
    by_kind = {t.kind: t for t in tables}
    records = []
    unexplained = []
    for table in tables:
        table = _with_committees(table, groups)
        refs = dict(references)
        if table.kind in ("recognition", "recognition-pairwise") and "pairwise" in by_kind:
            refs["pairwise"] = by_kind["pairwise"].frame
        if table.kind == "pairwise":
            options = AuditOptions(bootstrap=bootstrap, opponents=(opponents,))
            records += audit_pairwise(build_comparisons(table.frame, rule=rule), registry, options=options)
        found = run_suite(table.frame, table.kind, registry, references=refs, options=suite_options).records
        records += found
        if table.kind != "pairwise":  # pairwise tables: the plain-words summary says what is not measurable
            unexplained += found
        if agreement is not None and table.kind == "rubric":
            filtered, _ = agreement_filter(table.frame, agreement)
            for r in run_suite(filtered, "rubric", registry, references=refs, options=suite_options).records:
                r["variant"] = {**r["variant"], "agreement_at_least": agreement}
                records.append(r)
    for x, y in pairs:
        result = correlate_fn(records, x, y, confidence=bootstrap.confidence_level)
        records.append({"metric": "correlation", "judge": None, "condition": None, "generator": None, "pair": None,
                        "scope": None, "variant": {"x": x, "y": y, "across": "judges", "interval": "Fisher z"},
                        "value": _clean(result["r"]), "ci_low": _clean(result["ci_low"]),
                        "ci_high": _clean(result["ci_high"]), "n": result["n"], "n_clusters": result["n"],
                        "n_excluded": 0, "excluded": {}, "p_value": _clean(result["p_value"]),
                        "note": result.get("note"), "keys": result["keys"]})
    if as_json:
        echo_json(records)
        return
    _print(records, judgments, pairwise="pairwise" in by_kind, output_format=output_format, unexplained=unexplained)


def exclusion_lines(records) -> list[str]:
    """``Judgments without a verdict`` then one line per judge, condition and kind, by reason."""
    rows = [r for r in records if r["metric"] == "excluded-verdicts" and "slice" not in (r.get("variant") or {})]
    if not rows:
        return []
    lines = ["Judgments without a verdict (left out of every metric above), by reason:"]
    for r in rows:
        variant = r.get("variant") or {}
        where = ", ".join(str(v) for v in (r.get("condition"), variant.get("kind"), variant.get("setup")) if v)
        reasons = ", ".join(f"{k} {v:,}" for k, v in (r.get("excluded") or {}).items()) or "none"
        lines.append(f"  {r['judge']} ({where}): {r['n_excluded']:,} of {r['n']:,} — {reasons}")
    return lines


def undefined_lines(records) -> list[str]:
    """One line per record without a value that says why (e.g. self scope when the judge graded only others)."""
    rows = [r for r in records if r.get("value") is None and r.get("note") and r.get("judge")
            and "slice" not in (r.get("variant") or {})]
    if not rows:
        return []
    lines = ["Not measured (no value above), and why:"]
    for r in rows:
        what = r["metric"] + (f" ({r['scope']})" if r.get("scope") else "")
        target = " vs ".join(r["pair"]) if r.get("pair") else (r.get("generator") or "")
        lines.append(f"  {r['judge']}: {what}{' ' + target if target else ''} — {r['note']}")
    return lines


def _clean(x):
    import math

    return None if x is None or (isinstance(x, float) and math.isnan(x)) else x


def _print(records, judgments, *, pairwise: bool, output_format: str, unexplained=()) -> None:
    from nepotism.report.summary import describe

    rows = []
    for r in records:
        ci = f"{r['ci_low']:.3f} – {r['ci_high']:.3f}" if r.get("ci_low") is not None else ""
        value = f"{r['value']:.3f}" if r["value"] is not None else f"— ({r.get('note') or 'undefined'})"
        target = " vs ".join(r["pair"]) if r.get("pair") else (r.get("generator") or "")
        variant = ", ".join(f"{k}={v}" for k, v in (r.get("variant") or {}).items() if not isinstance(v, (list, dict)))
        rows.append([r["metric"], str(r.get("judge") or ""), str(r.get("condition") or ""), r.get("scope") or "",
                     target, variant, value, ci, str(r["n"]), str(r["n_excluded"])])
    print_table(f"nepotism metrics — {', '.join(judgments)}",
                ["metric", "judge", "condition", "scope", "generator / pair", "variant", "value", "CI", "n", "excl."],
                rows, output_format=output_format)
    if output_format == "tsv":
        return
    for line in exclusion_lines(records) + undefined_lines(unexplained):
        click.echo(line)  # one line per judge in a CI log
    if pairwise:
        for line in describe([r for r in records if r["metric"] != "correlation" and r.get("judge")]):
            click.echo(line)
