"""``nepotism report``: the full report (HTML, Markdown, CSV, JSON and judge cards) from results or judgments."""

from __future__ import annotations

from typing import TYPE_CHECKING

import click

from nepotism.cli._common import bootstrap_options, echo_json, models_option

if TYPE_CHECKING:
    from nepotism.metrics import Bootstrap


@click.command("report")
@click.argument("source", type=click.Path())
@click.option(
    "--out",
    "out_dir",
    type=click.Path(file_okay=False),
    required=True,
    help="Folder for report.html, report.md, results.csv and results.json.",
)
@click.option(
    "--reference",
    multiple=True,
    type=click.Path(dir_okay=False),
    help="Reference table (preference-ref, correctness-ref, rubric-ref, rubric-items) when SOURCE is judgments; repeatable.",
)
@click.option("--kind", type=click.Choice(["pairwise", "pointwise", "rubric"]), help="Table kind, when the columns do not tell.")
@click.option(
    "--rule",
    type=click.Choice(["consistent", "strict"]),
    default="consistent",
    show_default=True,
    help="How to combine the two presentation orders.",
)
@click.option("--protocol", help="Which judgments to export when SOURCE is a store holding several protocols.")
@click.option(
    "--thresholds",
    "thresholds_file",
    type=click.Path(dir_okay=False),
    help="Thresholds TOML (or an experiment file with a [card] table) for the judge cards.",
)
@click.option("--title", default="nepotism report", show_default=True, help="Title of the page.")
@click.option(
    "--texts",
    type=click.Path(),
    metavar="FILE",
    help="The answers' texts for the cases section (JSON Lines: instance_id, model, text, optional prompt, "
    "as `nepotism import --texts-out` writes them, or the store of `nepotism run`); SOURCE must be "
    "judgments.",
)
@click.option(
    "--cases",
    "n_cases",
    type=click.IntRange(0, 100),
    default=5,
    show_default=True,
    help="Cases shown behind each verdict, in each direction (0: no cases section).",
)
@models_option
@bootstrap_options
@click.option("--json", "as_json", is_flag=True, help="Print the written paths and the card status as JSON.")
def command(
    source: str,
    out_dir: str,
    reference: tuple[str, ...],
    kind: str | None,
    rule: str,
    protocol: str | None,
    thresholds_file: str | None,
    title: str,
    texts: str | None,
    n_cases: int,
    models_files: tuple[str, ...],
    bootstrap: Bootstrap,
    as_json: bool,
) -> None:
    """Write the full report for SOURCE into --out.

    SOURCE is a results document (from `nepotism demo`, `nepotism metrics --json`, `nepotism mitigate
    --json` or its mitigations.json, `nepotism leakage run`'s results.json, `nepotism leakage audit
    --json`, or an earlier `nepotism report`; also `nepotism annotate agreement --json`), the output folder
    of `nepotism run` or `nepotism mitigate` (every table it lists, with the run's references and models,
    and the mitigation effects its run.json lists), a recorded judgment table (CSV, JSONL or Parquet; audited here with every
    metric whose inputs are present, plus --reference tables and --models registries) or a store
    (its judgments are exported and audited). The page is self-contained (plots embedded, no
    network when viewed) and opens with each judge's self, family and student bonus in plain
    words; judge cards show pass/fail against --thresholds (see `nepotism card --help`). When
    SOURCE is judgments, a section shows the cases behind each verdict (as `nepotism explain`
    prints them), with the prompt and both answers side by side from --texts.
    """
    from nepotism._malloc import reuse_freed_memory
    from nepotism.report.card import load_thresholds
    from nepotism.report.full import write_report
    from nepotism.errors import InputError
    from nepotism.report.inputs import report_records, results_source

    reuse_freed_memory()  # large tables: temporaries reuse freed pages instead of faulting in new ones
    thresholds = load_thresholds(thresholds_file) if thresholds_file else None
    judged = results_source(source) is None  # judgments have cases; results have none
    if texts is not None and not judged:
        raise InputError(
            "--texts shows the answers behind the cases, which are read from judgments; SOURCE is a "
            "results file (no judgments): give the judgment tables, store or run folder instead",
            field="--texts",
        )
    records, summary, findings = report_records(
        source, references=reference, models=models_files, kind=kind, rule=rule, protocol=protocol, bootstrap=bootstrap
    )
    verdicts = cases = None
    if judged and n_cases:
        from nepotism.analyses.verdicts import MIN_PROMPTS, judge_verdicts
        from nepotism.api import explain_verdicts

        verdicts = judge_verdicts(
            records, summary.get("relations") or (), min_prompts=int(summary.get("min_prompts") or MIN_PROMPTS)
        )
        cases = explain_verdicts(
            source,
            verdicts,
            records,
            references=reference,
            models=models_files,
            kind=kind,
            rule=rule,
            protocol=protocol,
            texts=texts,
            limit=n_cases,
        )
    paths = write_report(
        records, out_dir, summary=summary, findings=findings, thresholds=thresholds, title=title, verdicts=verdicts, cases=cases
    )
    import json

    status = json.loads(paths["results.json"].read_text())["summary"]["cards"]["status"]
    if as_json:
        echo_json({"files": {k: str(v) for k, v in paths.items()}, "card_status": status, "results": len(records)})
        return
    click.echo(f"{len(records)} results; judge cards: {status}.")
    click.echo(f"Wrote {', '.join(str(p) for p in paths.values())}")
