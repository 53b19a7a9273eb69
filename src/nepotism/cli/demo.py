"""``nepotism demo``: audit real recorded judgments bundled with the package, in plain words."""

from __future__ import annotations

import time

import click

from nepotism.cli._common import bootstrap_options, echo_json


@click.command("demo")
@click.option("--out", "out_dir", type=click.Path(file_okay=False), default="nepotism-demo", show_default=True,
              help="Folder for results.json, results.csv and report.html.")
@bootstrap_options
@click.option("--json", "as_json", is_flag=True, help="Print the result records as JSON instead of sentences.")
def command(out_dir, n_resamples, seed, confidence, ci_method, as_json):
    """Audit two GPT-4 judges and a Claude judge from real AlpacaEval judgments, bundled here.

    Prints each judge's preference for its own answers, its model family and models trained on
    its (or its relatives') outputs, with n and confidence intervals, next to how the same
    comparisons fare under the other judges; writes the report (HTML and Markdown) and the results
    (JSON and CSV) into --out.
    """
    from nepotism.data import ATTRIBUTION, demo_judgments
    from nepotism.report.full import write_report
    from nepotism.report.inputs import audit_judgments

    started = time.perf_counter()
    records, summary, lines = audit_judgments(demo_judgments(), n_resamples=n_resamples, seed=seed,
                                              confidence=confidence, method=ci_method)
    summary = {**summary, "source": "nepotism/data/alpaca_eval_judgments.parquet (AlpacaEval)"}
    paths = write_report(records, out_dir, summary=summary, findings=lines,
                         title="nepotism demo: AlpacaEval judges auditing their relatives", attribution=ATTRIBUTION)
    if as_json:
        echo_json({"summary": summary, "findings": lines, "results": records,
                   "files": {k: str(v) for k, v in paths.items()}})
        return
    click.echo(f"nepotism demo — {summary['rows']:,} recorded AlpacaEval judgments, "
               f"{summary['comparisons']:,} comparisons over {summary['instances']:,} prompts.")
    click.echo(ATTRIBUTION)
    click.echo("")
    for line in lines:
        click.echo(line)
    click.echo("")
    click.echo("How to read this: a judge that writes better answers should win more of its own comparisons, so "
               "raw self-preference mixes bias with quality. The 'same items, other judge' lines compare two "
               "judges on identical prompts and pairs; a positive gap for a judge's own answer is favouritism "
               "beyond what the other judge sees.")
    click.echo(f"AlpacaEval shows each pair in one order only ({summary['single_order_comparisons']:,} single-order "
               "comparisons), so position bias is not averaged out here.")
    click.echo("")
    click.echo(f"Wrote {', '.join(str(p) for p in paths.values())} in {time.perf_counter() - started:.1f} s.")
