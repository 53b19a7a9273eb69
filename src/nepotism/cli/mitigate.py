"""``nepotism mitigate``: run an experiment's audit under each mitigation of its ``[mitigate]`` table.

Only argument handling and printing live here; the work is done by `nepotism.mitigations.run`.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from nepotism.cli._common import (
    echo_json,
    exit_if_calls_failed,
    experiment_store,
    max_failure_rate_option,
    prevented_line,
    run_live,
)

if TYPE_CHECKING:
    from nepotism.mitigations.run import MitigationResult

__all__ = ["command"]


@click.command("mitigate")
@click.argument("experiment_file", type=click.Path(path_type=Path, dir_okay=False))
@click.option("--dry-run", is_flag=True, help="Check the file and list the conditions without calling any model.")
@click.option(
    "--store",
    "store_path",
    type=click.Path(path_type=Path, dir_okay=False),
    default=None,
    help="Store file (default: the experiment's store, else $NEPOTISM_STORE, else ./nepotism.db).",
)
@click.option(
    "--out",
    "out_path",
    type=click.Path(path_type=Path, dir_okay=False),
    default=None,
    help="Also write the results document here (the output folder always gets mitigations.json, "
    "listed in its run.json; without [output] dir, default ./mitigations.json).",
)
@click.option(
    "--json",
    "as_json",
    is_flag=True,
    help="Print the results document (the records and the summary, as `nepotism metrics --json`).",
)
@click.option("--progress/--no-progress", default=None, help="Show the progress bar (default: on a terminal).")
@click.option(
    "--rule",
    type=click.Choice(["consistent", "strict"]),
    default=None,
    help="How the two presentation orders combine (default: [mitigate] rule, else consistent = paper 004 "
    "Eq. 1; strict = paper 003: both orders must agree, a disagreement is ambiguous and left out).",
)
@max_failure_rate_option("the calls (generation, rewrites, judging) of the baseline and every condition")
def command(
    experiment_file: Path,
    dry_run: bool,
    store_path: Path | None,
    out_path: Path | None,
    as_json: bool,
    progress: bool | None,
    rule: str | None,
    max_failure_rate: float,
) -> None:
    """Run the audit of EXPERIMENT_FILE as a baseline and under each [[mitigate.conditions]].

    For each mitigation it reports the change in every bias metric (self-preference, harmful
    self-preference, judge accuracy, Error Bias) on the same instances and the same judge, with a
    paired bootstrap interval, and, for perturbations, the same perturbed pairs judged by
    third-party judges as a control. The records are written as a results document
    (mitigations.json: ``metric = mitigation-effect``), followed, when the answers can be graded,
    by the baseline's judge accuracy (self-evaluation, third-party, all examples), task accuracy
    and own win rate by ground truth and by the judge's own judgment (paper 003). The output folder
    also gets the judgment tables and run.json listing them and mitigations.json: `nepotism
    metrics` and `nepotism report` take it
    (recognition per condition; the report adds the mitigation effects). Every
    model call is cached in the store: a rerun repeats nothing.
    """

    from nepotism.mitigations.config import load_plan

    plan = load_plan(experiment_file)
    if rule is not None:
        from dataclasses import replace

        plan = replace(plan, rule=rule)
    if dry_run:
        listing: dict[str, Any] = {
            "experiment": plan.experiment.name,
            "judges": list(plan.experiment.judges),
            "rewriter": plan.rewriter,
            "rule": plan.rule,
            "conditions": [{"name": c.name, "kind": c.kind, **dict(c.params)} for c in plan.conditions],
        }
        if as_json:
            echo_json(listing)
        else:
            click.echo(f"experiment {listing['experiment']}: judges {', '.join(listing['judges'])}")
            for c in listing["conditions"]:
                click.echo(f"  {c['name']:<24}{c['kind']}")
        return
    from nepotism.mitigations.run import RECORDS_FILE, run_mitigations, write_results
    from nepotism.store import Store

    exp = plan.experiment
    with Store(experiment_store(store_path, exp)) as store:
        result = run_live(lambda view: run_mitigations(plan, store, view=view), progress=progress, as_json=as_json)
    written = result.summary.get("records_file")  # the output folder's copy, listed in its run.json
    target = out_path or Path(written or RECORDS_FILE)
    if written is None or target.resolve() != Path(written).resolve():
        write_results(target, result.results)
    if as_json:
        echo_json(result.results.document())
    else:
        _print(result, target)
    exit_if_calls_failed(result.summary["calls"], max_failure_rate)


def _calls(summary: Mapping[str, Any], what: str) -> str:
    """``N judge calls (S sent, C from the store's cache, D the answer of an identical call)``:
    planned, and how each was answered."""
    planned, sent, cached = (summary.get(f"{what}_calls{k}", 0) for k in ("", "_sent", "_cached"))
    shared = planned - sent - cached
    return (
        f"{planned} {what} calls ({sent} sent, {cached} from the store's cache"
        + (f", {shared} the answer of an identical call" if shared > 0 else "")
        + ")"
    )


def _fmt(value: float | None) -> str:
    return "   n/a" if value is None else f"{value:+.3f}"


def _print(result: MitigationResult, target: Path) -> None:
    s = result.summary
    click.echo(f"run {s['run_id']}: {s['status']}, {s['instances']} instances, {_calls(s, 'judge')}")
    if s.get("rewrite_calls"):
        click.echo(f"  rewrites: {_calls(s, 'rewrite')}, {s.get('rewrite_failed', 0)} without a usable text")
    if s.get("generation_failures"):
        click.echo(prevented_line(s["generation_failures"], s.get("prevented", {}), counted=True))
    if s.get("rule") == "strict":
        ambiguous = ", ".join(f"{c}: {n}" for c, n in s.get("ambiguous_comparisons", {}).items()) or "none"
        click.echo(f"strict rule: comparisons whose two orders disagree are left out (ambiguous: {ambiguous})")
    for name, info in s.get("perturbations", {}).items():
        failed = ", ".join(f"{k}: {v}" for k, v in info["failed"].items()) or "none"
        click.echo(f"  {name}: {info['perturbed']}/{info['pairs']} pairs perturbed (failed: {failed})")
    pairs = s.get("perturbed_pairs") or {}
    if pairs.get("file"):
        click.echo(f"  wrote {pairs['file']}: {pairs['items']} original-vs-perturbed pairs for `nepotism annotate serve`")
    click.echo(f"{'condition':<22}{'judge':<30}{'scope':<22}{'metric':<29}{'change':>8}  {'CI':<18}{'n':>5}")
    effects = result.records
    pooled = {r["condition"] for r in effects if r["judge"] == "all"}
    click.echo("(judges pooled where a condition has several; per-judge rows are in the JSON Lines file)")
    for r in effects:
        if r["condition"] in pooled and r["judge"] != "all":
            continue
        v = r["variant"]
        ci = "" if r["ci_low"] is None else f"[{r['ci_low']:+.2f}, {r['ci_high']:+.2f}]"
        what = v["base_metric"] if r["metric"] == "mitigation-effect" else "|self| / |third-party| change"
        click.echo(f"{r['condition']:<22}{r['judge']:<30}{v['scope']:<22}{what:<29}{_fmt(r['value']):>8}  {ci:<18}{r['n']:>5}")
    baseline = result.baseline
    if baseline:
        click.echo("baseline accuracy (paper 003 Figs. 2, 4, 5):")
        for r in baseline:
            what = ", ".join(str(v) for k, v in r["variant"].items() if k not in ("averaging", "source"))
            ci = "" if r["ci_low"] is None else f"[{r['ci_low']:.2f}, {r['ci_high']:.2f}]"
            value = "   n/a" if r["value"] is None else f"{r['value']:.3f}"
            click.echo(f"  {r['metric']:<26}{str(r['judge'] or r['generator']):<30}{what:<22}{value:>8}  {ci:<14}{r['n']:>5}")
    click.echo(f"wrote {target}")
