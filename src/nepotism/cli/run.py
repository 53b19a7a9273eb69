"""``nepotism run``: run (or, with --dry-run, price) an experiment file.

Only argument handling and printing live here; the work is done by `nepotism.runner`.
"""

from __future__ import annotations

import sys
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
    store_path_of,
)
from nepotism.errors import InputError

if TYPE_CHECKING:
    from nepotism.experiment import Experiment
    from nepotism.records import Instance, Response
    from nepotism.runner.batch import BatchRound
    from nepotism.runner.experiment_run import RunSummary
    from nepotism.runner.shards import Shard

__all__ = ["command"]


@click.command("run")
@click.argument("experiment_file", type=click.Path(path_type=Path, dir_okay=False))
@click.option(
    "--dry-run",
    is_flag=True,
    help="Print the plan (calls per model, estimated tokens and cost, what is cached) "
    "without calling any model or writing any file; checks that every model can be "
    "loaded (GGUF file and hash) or reached (HTTP), exit 2 if not.",
)
@click.option(
    "--store",
    "store_path",
    type=click.Path(path_type=Path, dir_okay=False),
    default=None,
    help="Store file (default: the experiment's store, else $NEPOTISM_STORE, else ./nepotism.db).",
)
@click.option("--json", "as_json", is_flag=True, help="Print the summary (or plan) as JSON.")
@click.option("--progress/--no-progress", default=None, help="Show the progress bar (default: when stderr is a terminal).")
@click.option(
    "--shard",
    "shard_spec",
    default=None,
    metavar="K/N",
    help="Run only shard K of N (K from 0): the instances whose prompt hashes to K, each with "
    "all its calls; the default store gets .shard-K-of-N before its suffix and the "
    "exports go to output.dir/shard-K-of-N. Join the stores with nepotism store merge.",
)
@click.option(
    "--batch-out",
    "batch_out",
    type=click.Path(path_type=Path, file_okay=False),
    default=None,
    help="Call nothing: write every call still to send as OpenAI Batch-API JSONL files "
    "(custom_id = the call's cache key) into this folder (docs/scale.md).",
)
@click.option(
    "--batch-in",
    "batch_in",
    multiple=True,
    type=click.Path(path_type=Path, dir_okay=False),
    help="Store a batch's results file (repeatable) as calls, then finish the run from the store "
    "without calling anything (or write the next round with --batch-out).",
)
@max_failure_rate_option("the run's calls (generation, judging, perplexity)")
def command(
    experiment_file: Path,
    dry_run: bool,
    store_path: Path | None,
    as_json: bool,
    progress: bool | None,
    shard_spec: str | None,
    batch_out: Path | None,
    batch_in: tuple[Path, ...],
    max_failure_rate: float,
) -> None:
    """Generate the missing responses and judge every planned comparison of EXPERIMENT_FILE.

    Every model call is stored before it is used, so a run that is stopped (Ctrl-C, a crash, a
    kill) resumes where it left off when started again, without repeating a completed call.
    Judgments are exported in the recorded table formats to the experiment's output directory,
    ready for ``nepotism metrics``. API keys are read from the environment variables the file
    names and are never stored or printed.

    A store that cannot be written (a read-only mount, a shared copy) serves a complete rerun:
    nothing is sent, and a run that would have to send or store anything stops with exit 2,
    saying so. The output folder is checked before anything is sent.

    Exit status: 0 when the run is complete; 2 for a bad experiment or dataset file, or an output
    folder or store that cannot be written (nothing is called or written); 3 when more than --max-failure-rate of the calls failed (the summary is
    still printed and the failures are stored: run again to retry them); 74 when the store's disk
    filled up (the run stops sending and keeps every answer it was paid for: free space and run
    again); 130 when interrupted (with --json, the document says {"status": "interrupted"}).
    """
    from nepotism.experiment import load_experiment
    from nepotism.runner.experiment_run import check_inputs, run_experiment
    from nepotism.runner.shards import Shard, shard_store_path
    from nepotism.store import Store

    shard = Shard.parse(shard_spec) if shard_spec is not None else None
    experiment = load_experiment(experiment_file)
    # before any store file exists: a bad dataset, grading truth or key variable writes nothing
    batch = batch_out is not None or bool(batch_in)
    if batch and dry_run:
        raise InputError("--dry-run does not combine with --batch-out or --batch-in", field="--dry-run")
    # batch mode sends nothing, a dry run writes nothing
    dataset = check_inputs(experiment, keys=not (dry_run or batch), output=not dry_run)
    if shard is not None and store_path is None:
        store_path = shard_store_path(store_path_of(None, experiment), shard)
    if dry_run:
        _dry_run(experiment, store_path, as_json, dataset, shard)
        return
    path = experiment_store(store_path, experiment)
    # a store that cannot be written serves a complete rerun (offline), or says what it lacks
    with Store.read_only(path) if path.exists() else Store(path) as store:
        if store.readonly:
            click.echo(
                f"note: the store {path} is read-only ({store.readonly_reason}): the run is served from "
                "it, nothing is sent and nothing written to it",
                err=True,
            )
        if batch:
            from nepotism.runner.batch import plan_round, read_results, store_results

            report: dict[str, Any] = {}
            if batch_in:
                results = read_results(plan_round(experiment, store, dataset=dataset, shard=shard), batch_in)
                report["stored"] = store_results(store, results)
            round_ = plan_round(experiment, store, dataset=dataset, shard=shard)
            if batch_out is not None or not round_.complete:
                _batch_round(experiment, round_, batch_out, report, as_json)
                return
        summary = run_live(
            lambda view: run_experiment(experiment, store, view=view, dataset=dataset, shard=shard, offline=batch),
            progress=progress,
            as_json=as_json,
        )
    if as_json:
        echo_json(summary.as_dict())
    else:
        _print_summary(summary)
    exit_if_calls_failed(summary.phases().values(), max_failure_rate)


def _batch_round(
    experiment: Experiment, round_: BatchRound, batch_out: Path | None, report: dict[str, Any], as_json: bool
) -> None:
    """Write the round's calls to send (with --batch-out), or say what is still missing."""
    from nepotism.runner.batch import write_batch

    stored = report.get("stored")
    if batch_out is not None:  # counts the round while writing it
        report["batch"] = write_batch(experiment, round_, batch_out)
    report |= {"phase": round_.phase, "missing": round_.missing, "to_send": round_.to_send}
    if as_json:
        echo_json(report)
        return
    if stored:
        click.echo(
            f"stored {stored['ok']} answered and {stored['failed']} failed calls from the results"
            + (f" ({stored['already']} were stored already)" if stored["already"] else "")
        )
    if batch_out is None:
        click.echo(
            f"{round_.missing} calls of the {round_.phase} phase have no answer yet: write them with "
            "--batch-out DIR, send the files, then --batch-in the results"
        )
        return
    written = report["batch"]
    if not written["files"]:
        click.echo("nothing to send: every call is stored; run with --batch-in (or live) to finish")
        return
    click.echo(f"wrote {written['requests']} {round_.phase} requests to {batch_out}:")
    for f in written["files"]:
        click.echo(f"  {f['file']}  {f['requests']} requests, {f['bytes'] / 1e6:.1f} MB ({f['model']}, {f['url']})")
    if round_.phase == "generate":
        click.echo("the judge requests follow once these answers are stored (a second round)")


def _dry_run(
    experiment: Experiment,
    store_path: Path | None,
    as_json: bool,
    dataset: tuple[list[Instance], list[Response]] | None = None,
    shard: Shard | None = None,
) -> None:
    """Plan against the store if it exists (to count cached calls), else against a throw-away one:
    a dry run leaves no file behind. Exit 2 when a model cannot be loaded or reached."""
    import tempfile

    from nepotism.runner.experiment_run import dry_run as plan_only
    from nepotism.store import Store

    path = store_path_of(store_path, experiment)
    with tempfile.TemporaryDirectory(prefix="nepotism-dry-run-") as scratch:
        with Store(path if path.exists() else Path(scratch) / "plan.db") as store:
            plan = plan_only(experiment, store, dataset=dataset, shard=shard)
    _print_plan(plan, as_json)
    for model_id, problem in plan["problems"].items():
        click.echo(f"error: model '{model_id}' cannot be used: {problem}", err=True)
    if plan["problems"]:
        sys.exit(2)


def _print_plan(plan: dict[str, Any], as_json: bool) -> None:
    if as_json:
        echo_json(plan)
        return
    click.echo(
        f"experiment  {plan['experiment']}   instances {plan['instances']}   recorded responses {plan['recorded_responses']}"
    )
    click.echo(
        f"calls       {plan['generation_calls']} generation, {plan['judge_calls']} judge"
        + (f", {plan['perplexity_calls']} perplexity" if plan.get("perplexity_calls") else "")
    )
    header = (
        f"{'model':<32}{'gen':>7}{'judge':>8}{'cached':>8}{'shared':>8}{'to send':>9}{'prompt tok':>12}"
        f"{'output tok':>12}{'cost $':>10}"
    )
    click.echo(header)
    rows = list(plan["models"].items()) + [
        ("total", plan["totals"] | {"generate": plan["generation_calls"], "judge": plan["judge_calls"]})
    ]
    for name, m in rows:
        cost = "n/a" if m["cost_usd"] is None else f"{m['cost_usd']:.4f}"
        click.echo(
            f"{name:<32}{m['generate']:>7}{m['judge']:>8}{m['cached']:>8}{m['shared']:>8}{m['to_send']:>9}"
            f"{m['prompt_tokens']:>12,}{m['output_tokens']:>12,}{cost:>10}"
        )
    if plan.get("graded_instances"):
        click.echo(
            "grading     "
            + ", ".join(f"{n} {task}" for task, n in plan["graded_instances"].items())
            + " instances (truth checked)"
        )
    click.echo(
        f"estimates: {plan['estimate']}"
        + ("; shared: calls planned more than once (same request), sent once" if plan["totals"]["shared"] else "")
    )


def _print_summary(summary: RunSummary) -> None:
    phases = summary.phases().values()
    failed, total = sum(p["failed"] for p in phases), sum(p["total"] for p in phases)
    status = (
        f"ended with {failed} of {total} calls failed (stored: a rerun retries them)"
        if failed and summary.status == "done"
        else summary.status
    )  # not "done" above "18 of 18 failed"
    click.echo(f"run {summary.run_id}: {status}, {summary.instances} instances")
    for name, s in summary.phases().items():
        shared = f" (+{s['shared']} sharing their answers: same request)" if s.get("shared") else ""
        click.echo(
            f"  {name:<11}{s['total']:>7} calls: {s['cached']} cached, {s['sent']} sent{shared}, "
            f"{s['failed']} failed, {s['retries']} retries, ${s['spend_usd']:.4f}"
        )
        if s.get("server_waits"):
            click.echo(
                f"      {s['server_waits']} retries waited {s['waited_s']:.1f} s in all, as the server asked (Retry-After)"
            )
        for err, n in s["errors"].items():
            click.echo(f"      {err}: {n}")
    for model, urls in getattr(summary, "endpoints", {}).items():
        click.echo(f"  endpoints of {model}:")
        for url, c in urls.items():
            click.echo(
                f"      {url}  {c['requests']} requests, {c['answered']} answered, {c['failed']} failed, "
                f"{c['failed_over']} moved to another endpoint"
            )
    click.echo("  judgments  " + (", ".join(f"{k} {v}" for k, v in sorted(summary.judgments.items())) or "none"))
    if summary.generation_failures:
        click.echo(prevented_line(len(summary.generation_failures), summary.prevented))
    if summary.perplexity:
        click.echo("  perplexity scores  " + ", ".join(f"{k} {v}" for k, v in sorted(summary.perplexity["scores"].items())))
    for task, counts in summary.grading.items():
        click.echo(f"  graded     {task}: " + ", ".join(f"{k.replace('_', ' ')} {v}" for k, v in counts.items()))
    jury = getattr(summary, "reference", {})
    if jury.get("no_rubric_verdicts"):
        click.echo(f"  jury       no rubric verdict of {', '.join(jury['no_rubric_verdicts'])}: no reference made")
    elif jury:
        c = jury["counts"]
        click.echo(
            f"  jury       {', '.join(jury['jury'])}: {jury['rows']} rubric items decided, "
            f"{c.get('vote-tie', 0)} even votes and {c.get('no_votes', 0)} without a vote left out; "
            + (
                f"{c.get('excluded_verdicts', 0)} verdicts of jurors related to the answer's model excluded"
                if jury["exclude_related"]
                else "every juror votes on every answer (paper 002)"
            )
        )
    for protocol, file in summary.exports.items():
        click.echo(f"  wrote {file} ({protocol})")
