"""``nepotism metrics``: compute every metric whose inputs are present, for every judge."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import click

from nepotism.cli._answer import print_answer, print_verdicts
from nepotism.cli._common import (
    Finite,
    bootstrap_options,
    echo_json,
    format_option,
    models_option,
    named_as_typed,
    print_table,
)

if TYPE_CHECKING:
    from nepotism.metrics import Bootstrap

_JUDGED = ("pairwise", "pointwise", "rubric", "recognition", "recognition-pairwise")
_OPPONENTS = {"both": ("unrelated", "any"), "unrelated": ("unrelated",), "any": ("any",)}
_ARGUMENT = {
    "source": "JUDGMENTS",
    "correlate": "--correlate",
    "committee": "--committee",
    "kind": "--kind",
    "agreement": "--agreement",
}


def _split(values: Iterable[str], option: str) -> list[list[str]]:
    from nepotism.errors import InputError

    out = []
    for value in values:
        parts = [p.strip() for p in value.split(",") if p.strip()]
        if len(parts) < 2:
            raise InputError(f"expected at least two comma-separated names, got '{value}'", field=option)
        out.append(parts)
    return out


@click.command("metrics")
@click.argument("judgments", nargs=-1, required=True, type=click.Path())
@click.option(
    "--reference",
    multiple=True,
    type=click.Path(dir_okay=False),
    help="Reference table (preference-ref, correctness-ref, rubric-ref, rubric-items); repeatable.",
)
@click.option(
    "--kind", type=click.Choice(list(_JUDGED)), help="Table kind of a single JUDGMENTS file, when the columns do not tell."
)
@click.option(
    "--rule",
    type=click.Choice(["consistent", "strict"]),
    default="consistent",
    show_default=True,
    help="How to combine the two presentation orders: paper 004 Eq. 1, or paper 003's strict agreement.",
)
@click.option(
    "--opponents",
    type=click.Choice(["both", "unrelated", "any"]),
    default="both",
    show_default=True,
    help="Which opponents count in the self-preference ratio and demographic-parity bias of related "
    "candidates: unrelated models, any less related model, or both (records carry variant "
    "opponents). (Paper 004's D_diff metrics always come for both.)",
)
@click.option(
    "--leaderboard",
    type=click.Path(dir_okay=False),
    help="Reference leaderboard CSV with columns model, score (higher = better) for ranking-difference.",
)
@click.option("--rank-against", metavar="JUDGE", help="Rank every judge's leaderboard against this judge's.")
@click.option(
    "--committee",
    "committees",
    multiple=True,
    metavar="J1,J2,J3",
    help="Add the majority vote of these judges as one judge (rubric or pairwise tables); repeatable.",
)
@click.option(
    "--slice",
    "slices",
    multiple=True,
    metavar="COLUMN",
    help="Repeat every metric per value of COLUMN (e.g. category, condition), or per "
    "rubric-polarity / rubric-length (needs rubric-items); repeatable.",
)
@click.option(
    "--agreement",
    type=Finite(0.0, 1.0),
    metavar="THRESHOLD",
    help="Rubric tables: also recompute every metric on the rubrics whose inter-judge agreement is at "
    "least THRESHOLD (paper 002 Fig. 4); those records carry variant agreement_at_least.",
)
@click.option(
    "--recognition-target",
    type=click.Choice(["self", "student", "family"]),
    default="self",
    show_default=True,
    help="Whose answer a recognition question is about.",
)
@click.option(
    "--perplexity-bins",
    type=click.IntRange(1, 100),
    default=5,
    show_default=True,
    help="Equal-count bins of the perplexity difference for perplexity-win-rate.",
)
@click.option(
    "--perplexity-difference",
    type=click.Choice(["perplexity", "log"]),
    default="perplexity",
    show_default=True,
    help="What perplexity-win-rate bins: PPL(A) − PPL(B) (paper 001) or log PPL(A) − log PPL(B).",
)
@click.option(
    "--correlate",
    multiple=True,
    metavar="METRIC_X,METRIC_Y",
    help="Also report Pearson r across judges between two metrics' headline values; repeatable.",
)
@click.option(
    "--stream",
    is_flag=True,
    help="Read a partitioned Parquet dataset (a folder of judge=NAME folders, or a glob) one partition at "
    "a time, keeping per-prompt sums instead of rows, for tables larger than memory: the first audit, "
    "leaderboards, excluded-verdicts and position-consistency (the same records as without --stream); "
    "the metrics it does not compute are listed as such.",
)
@click.option(
    "--reference-vote",
    type=click.Choice(["each", "majority"]),
    default="each",
    show_default=True,
    help="Several human labels of one pair: each label is one row (paper 001: one vote per battle), or the "
    "pair's plurality label, a split vote a tie (paper 000 App. C.3's majority of annotators).",
)
@click.option(
    "--min-prompts",
    type=click.IntRange(1, None),
    default=30,
    show_default=True,
    help="The fewest prompts a judge verdict's number may rest on; below it the verdict says 'too little data' (docs/answer.md).",
)
@models_option
@bootstrap_options
@click.option(
    "--all",
    "show_all",
    is_flag=True,
    help="Also print every result record (one line each) after the verdicts; --json always holds them all.",
)
@click.option(
    "--json",
    "as_json",
    is_flag=True,
    help="Print the results document (schema_version, summary, verdicts, findings, every record) as JSON.",
)
@format_option
def command(
    judgments: tuple[str, ...],
    reference: tuple[str, ...],
    kind: str | None,
    rule: str,
    opponents: str,
    leaderboard: str | None,
    rank_against: str | None,
    committees: tuple[str, ...],
    slices: tuple[str, ...],
    agreement: float | None,
    recognition_target: str,
    perplexity_bins: int,
    perplexity_difference: str,
    correlate: tuple[str, ...],
    stream: bool,
    reference_vote: str,
    min_prompts: int,
    models_files: tuple[str, ...],
    bootstrap: Bootstrap,
    show_all: bool,
    as_json: bool,
    output_format: str,
) -> None:
    """Compute every metric whose inputs are present in JUDGMENTS, for every judge, and say the answer.

    The first lines are the verdicts: for each judge and relation (its own answers, its family's,
    its students'), how much it favours them, from the strongest evidence the data hold — against
    judges unrelated to both candidates on the same pairs, against reference labels, or the judge
    alone (which cannot tell favouritism from better answers) — with a 95% interval and the prompts
    behind it, or why it cannot be measured (docs/answer.md). Then what each judge saw, and the
    judgments left out by reason. --all adds every record; --json prints the whole results document.

    JUDGMENTS is one or more judgment tables (pairwise, pointwise, rubric, recognition,
    recognition-pairwise), or the output folder of `nepotism run` (its run.json names the tables,
    the graded references and the models file, so no other flag is needed). Give a recognition table together with a pairwise table to get
    recognition-preference-association. Judgments without a verdict are left out of every metric
    and listed by reason (unparsed-conflicting, unparsed-low-label-mass, failed-timeout, ...;
    records of metric excluded-verdicts). Each result is a record {metric, judge, condition,
    generator, pair, scope, variant, value, ci_low, ci_high, n, n_clusters, n_excluded, excluded}.
    Intervals come from a seeded bootstrap that resamples prompts (instances), not rows: the same
    --seed gives the same numbers. --correlate adds records with metric "correlation" (Pearson r
    across judges, its interval from resampling the judges, the Fisher-z interval alongside).
    """
    from nepotism._malloc import reuse_freed_memory
    from nepotism.analyses.suite import read_leaderboard
    from nepotism.api import audit
    from nepotism.errors import InputError

    reuse_freed_memory()  # large tables: temporaries reuse freed pages instead of faulting in new ones
    _refuse_results(judgments)
    if kind and len(judgments) > 1:
        raise InputError("--kind applies to a single JUDGMENTS file", field="--kind")
    pairs = _split(correlate, "--correlate")
    for pair in pairs:
        if len(pair) != 2:
            raise InputError(
                f"--correlate takes two metric ids, e.g. judge-accuracy,self-preference-ratio; got {pair}", field="--correlate"
            )
    with named_as_typed(_ARGUMENT):  # name the command's own argument or option
        results = audit(
            list(judgments),
            references=list(reference),
            models=list(models_files),
            bootstrap=bootstrap,
            kind=kind,
            rule=rule,
            opponents=_OPPONENTS[opponents],
            leaderboard=read_leaderboard(leaderboard) if leaderboard else None,
            rank_against=rank_against,
            slices=tuple(slices),
            recognition_target=recognition_target,
            perplexity_bins=perplexity_bins,
            perplexity_difference=perplexity_difference,
            committees=_split(committees, "--committee"),
            agreement=agreement,
            correlate=[(first, second) for first, second in pairs],  # two names each (checked above)
            stream=stream,
            reference_vote=reference_vote,
            min_prompts=min_prompts,
        )
    if as_json:
        echo_json(results.document())
        return
    records = results.to_dicts()
    title = f"nepotism metrics — {', '.join(map(str, judgments))}"
    if output_format == "tsv" and not show_all:
        print_verdicts(results, title, output_format=output_format)
        return
    if output_format != "tsv":
        print_answer(results, title, output_format=output_format)
    if show_all:
        _print(records, judgments, output_format=output_format)
    if output_format != "tsv":
        for line in streaming_lines(results.summary):
            click.echo(line)
        if not show_all:
            click.echo(
                f"{len(records):,} result records: --all prints each, --json the whole document; "
                "`nepotism report` writes them with plots."
            )


def _refuse_results(judgments: Iterable[str]) -> None:
    """Result records given as judgments (``nepotism leakage``'s output folder, a results file):
    exit 2 naming the file and the command that reads it."""
    from nepotism.errors import InputError
    from nepotism.report.inputs import records_instead

    for source in judgments:
        found = records_instead(source)
        if found is None:
            continue
        file, results = found
        what = (
            f"`nepotism report {results} --out report` shows them (and `nepotism card {results} --thresholds FILE` checks them)"
            if results is not None
            else "`nepotism report` reads their JSON form (results.json, `--json` output)"
        )
        raise InputError(
            f"holds result records (metric, value, ci_low, ...), not judgments, so there is nothing "
            f"for `nepotism metrics` to compute: {what}",
            path=str(file),
        )


def streaming_lines(summary: Mapping[str, Any]) -> list[str]:
    """``Not computed when streaming:`` then one line per metric and why (``--stream`` only)."""
    missing = summary.get("not_computed_when_streaming") or []
    return ["Not computed when streaming:"] + [f"  {line}" for line in missing] if missing else []


def undefined_lines(records: Iterable[Mapping[str, Any]]) -> list[str]:
    """One line per record without a value that says why (e.g. self scope when the judge graded only others)."""
    rows = [
        r
        for r in records
        if r.get("value") is None and r.get("note") and r.get("judge") and "slice" not in (r.get("variant") or {})
    ]
    if not rows:
        return []
    lines = ["Not measured (no value above), and why:"]
    for r in rows:
        what = r["metric"] + (f" ({r['scope']})" if r.get("scope") else "")
        target = " vs ".join(r["pair"]) if r.get("pair") else (r.get("generator") or "")
        lines.append(f"  {r['judge']}: {what}{' ' + target if target else ''} — {r['note']}")
    return lines


def _print(records: Sequence[Mapping[str, Any]], judgments: Sequence[str], *, output_format: str) -> None:
    rows = []
    for r in records:
        if r["metric"] == "exclusion-share-gap" and not r.get("flagged"):
            continue  # one per judge and generator: shown only when it flags one (--json has them all)
        ci = f"{r['ci_low']:.3f} – {r['ci_high']:.3f}" if r.get("ci_low") is not None else ""
        value = f"{r['value']:.3f}" if r["value"] is not None else f"— ({r.get('note') or 'undefined'})"
        target = " vs ".join(r["pair"]) if r.get("pair") else (r.get("generator") or "")
        variant = ", ".join(f"{k}={v}" for k, v in (r.get("variant") or {}).items() if not isinstance(v, (list, dict)))
        rows.append(
            [
                r["metric"],
                str(r.get("judge") or ""),
                str(r.get("condition") or ""),
                r.get("scope") or "",
                target,
                variant,
                value,
                ci,
                str(r["n"]),
                str(r["n_excluded"]),
            ]
        )
    print_table(
        f"Every result record — {', '.join(judgments)}",
        ["metric", "judge", "condition", "scope", "generator / pair", "variant", "value", "CI", "n", "excl."],
        rows,
        output_format=output_format,
    )
    if output_format == "tsv":
        return
    for line in undefined_lines(records):
        click.echo(line)  # one line per record in a CI log
