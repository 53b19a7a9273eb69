"""``nepotism demo``: audit real recorded judgments bundled with the package, in plain words;
``--live`` runs a small real self-preference experiment on the packaged local models first."""

from __future__ import annotations

import sys
import time
from typing import TYPE_CHECKING

import click

from nepotism.cli._answer import print_answer
from nepotism.cli._common import bootstrap_options, echo_json

if TYPE_CHECKING:
    from nepotism.metrics import Bootstrap


@click.command("demo")
@click.option(
    "--out",
    "out_dir",
    type=click.Path(file_okay=False),
    default="nepotism-demo",
    show_default=True,
    help="Folder for results.json, results.csv and report.html.",
)
@bootstrap_options
@click.option("--json", "as_json", is_flag=True, help="Print the result records as JSON instead of sentences.")
@click.option(
    "--live",
    is_flag=True,
    help="Run a real self-preference experiment offline with the local GGUF models (the `local` "
    "extra) and audit it, instead of the recorded AlpacaEval judgments. Resumes if stopped.",
)
@click.option(
    "--items",
    type=click.IntRange(1, 12),
    default=None,
    help="With --live: use only the first N of the twelve bundled items (a quicker check).",
)
def command(out_dir: str, bootstrap: Bootstrap, as_json: bool, live: bool, items: int | None) -> None:
    """Audit two GPT-4 judges and a Claude judge from real AlpacaEval judgments, bundled here.

    Prints each judge's preference for its own answers, its model family and models trained on
    its (or its relatives') outputs, with n and confidence intervals, next to how the same
    comparisons fare under the other judges; writes the report (HTML and Markdown) and the results
    (JSON and CSV) into --out.

    With --live: two tiny local models (SmolLM2-135M, Qwen2.5-Coder-0.5B) answer twelve bundled
    items and judge their own answers against each other's in both orders; every call is stored
    in --out, so a second run repeats no call. Tiny judges are weak; the output says how weak.
    """
    if live:
        from nepotism.extras import require

        require("local", purpose="nepotism demo --live (two packaged GGUF models)")
        _live(out_dir, bootstrap=bootstrap, as_json=as_json, items=items)
        return
    from nepotism.data import ATTRIBUTION, demo_judgments
    from nepotism.report.full import write_report
    from nepotism.api import audit

    started = time.perf_counter()
    results = audit(demo_judgments(), bootstrap=bootstrap)
    results.summary["source"] = "nepotism/data/alpaca_eval_judgments.parquet (AlpacaEval)"
    summary = results.summary
    paths = write_report(
        results.to_dicts(),
        out_dir,
        summary=summary,
        findings=results.findings,
        verdicts=results.verdicts,
        title="nepotism demo: AlpacaEval judges auditing their relatives",
        attribution=ATTRIBUTION,
    )
    if as_json:
        summary["files"] = {k: str(v) for k, v in paths.items()}
        echo_json(results.document())
        return
    click.echo(
        f"nepotism demo — {summary['rows']:,} recorded AlpacaEval judgments, "
        f"{summary['comparisons']:,} comparisons over {summary['instances']:,} prompts."
    )
    click.echo(ATTRIBUTION)
    click.echo("")
    print_answer(results, "nepotism demo", output_format="auto")
    click.echo("")
    click.echo(
        "About this data: AlpacaEval compares every generator with one baseline (text-davinci-003 in 1.0, "
        "GPT-4-Turbo in 2.0) and no judge unrelated to both candidates saw the same pairs, so the judges' "
        "preferences for their own answers cannot be told apart from better answers here. It judged each "
        f"pair once ({summary['single_order_comparisons']:,} single-order comparisons) in a random order it "
        "did not record, so no position metric is computed."
    )
    click.echo("")
    click.echo(f"Wrote {', '.join(str(p) for p in paths.values())} in {time.perf_counter() - started:.1f} s.")


def _live(out_dir: str, *, bootstrap: Bootstrap, as_json: bool, items: int | None) -> None:
    import dataclasses
    from pathlib import Path

    from nepotism._loop import run as run_loop
    from nepotism.data import live_experiment
    from nepotism.experiment import load_experiment
    from nepotism.report.full import write_report
    from nepotism.api import audit
    from nepotism.runner import ProgressView
    from nepotism.runner.experiment_run import run_experiment
    from nepotism.store import Store

    started = time.perf_counter()
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    experiment = load_experiment(live_experiment())
    experiment = dataclasses.replace(
        experiment, output_dir=str(out / "judgments"), dataset=dataclasses.replace(experiment.dataset, limit=items)
    )
    if not sys.stderr.isatty():  # piped: the progress bar is off, so say what is happening and for how long
        click.echo(
            f"Running {items or 12} items through two local models (generation, then judging in both orders); "
            "a first run takes a few minutes on 2 cores, a rerun reads every call from the store.",
            err=True,
        )
    with Store(out / "nepotism.db") as store, ProgressView(enabled=None) as view:
        run = run_loop(run_experiment(experiment, store, view=view))
    results = audit(Path(run.exports["pairwise"]), bootstrap=bootstrap)
    results.summary["source"] = "nepotism demo --live (local GGUF models)"
    records, summary = results.to_dicts(), results.summary
    paths = write_report(
        records,
        out,
        summary=summary,
        findings=results.findings,
        verdicts=results.verdicts,
        title="nepotism live demo: two tiny local models judging themselves",
    )
    consistency = [r for r in records if r["metric"] == "position-consistency" and r["value"] is not None]
    if as_json:
        summary["run"] = run.as_dict()
        summary["files"] = {k: str(v) for k, v in paths.items()}
        echo_json(results.document())
        return
    g, j = run.generation, run.judging
    counts = ", ".join(f"{n:,} {status}" for status, n in sorted(run.judgments.items()))
    click.echo(
        f"live demo: {run.instances} items; generation {g['total']} calls ({g['cached']} cached), "
        f"judging {j['total']} calls ({j['cached']} cached, {j['failed']} failed); judgments: {counts}."
    )
    click.echo("")
    print_answer(results, "nepotism demo --live", output_format="auto")
    click.echo("")
    for r in consistency:
        what = (
            "of pairs get the same verdict in both orders"
            if r["variant"].get("share") == "two orders agree"
            else "of decisive verdicts pick the answer shown first"
        )
        click.echo(f"Position check, {r['judge']}: {100 * r['value']:.0f}% {what} (n={r['n']}).")
    click.echo(
        "How weak tiny judges are: models of 135M and 0.5B parameters mostly pick by position, not by "
        "content. When the two orders disagree, paper 004's rule makes the pair a tie, so verdict-based "
        "numbers sit near 'no preference' for lack of signal, not for lack of bias. Use these models to "
        "check a pipeline, not to rank models."
    )
    click.echo("")
    click.echo(f"Wrote {', '.join(str(p) for p in paths.values())} in {time.perf_counter() - started:.1f} s.")
