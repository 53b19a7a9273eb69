"""``nepotism leakage``: preference-leakage experiments (paper 000) and the leaderboard audit.

``nepotism leakage EXPERIMENT.toml`` is short for ``nepotism leakage run EXPERIMENT.toml``.
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING

import click

from nepotism.cli._common import (
    bootstrap_options,
    echo_json,
    exit_if_calls_failed,
    experiment_store,
    max_failure_rate_option,
    models_option,
    run_live,
    store_path_of,
)

if TYPE_CHECKING:
    from nepotism.metrics import Bootstrap

__all__ = ["command"]


class _Group(click.Group):
    """A group whose first argument may be an experiment file (then the verb is ``run``)."""

    def resolve_command(self, ctx: click.Context, args: list[str]) -> tuple[str | None, click.Command | None, list[str]]:
        if args and args[0] not in self.commands and args[0].endswith(".toml"):
            args = ["run", *args]
        return super().resolve_command(ctx, args)


@click.group("leakage", cls=_Group)
def command() -> None:
    """Preference leakage: students of data generators judged by related judges (paper 000)."""


@command.command("run")
@click.argument("experiment_file", type=click.Path(path_type=Path, dir_okay=False))
@click.option(
    "--dry-run", is_flag=True, help="Check the file and pools, list the students and count the calls (no file is written)."
)
@click.option(
    "--store",
    "store_path",
    type=click.Path(path_type=Path, dir_okay=False),
    default=None,
    help="Store file (default: the experiment's store, else $NEPOTISM_STORE, else ./nepotism.db).",
)
@click.option(
    "--json", "as_json", is_flag=True, help="Print the results document (results.json's; with --dry-run, the plan's counts)."
)
@click.option("--progress/--no-progress", default=None, help="Show the progress bar (default: when stderr is a terminal).")
@max_failure_rate_option("the calls (synthetic data, students' answers, rewrites, judging)")
def run(
    experiment_file: Path, dry_run: bool, store_path: Path | None, as_json: bool, progress: bool | None, max_failure_rate: float
) -> None:
    """Generate synthetic data, make students, judge every student pair, and compute PLS and the analyses.

    Results go to the experiment's output directory: results.json (the results document, as
    `nepotism metrics --json` prints it: `nepotism report` and `nepotism card` read it; --json
    prints it too), results.csv (one row per record), students.toml (the students' lineage, a
    registry file), synthetic/ (the generators' data in trainer formats) and students/ (trained
    adapters and manifests).
    """

    from nepotism.leakage.config import load_leakage
    from nepotism.leakage.pipeline import run_leakage
    from nepotism.leakage.report import analyses_table, pls_table
    from nepotism.store import Store

    cfg = load_leakage(experiment_file)
    trained = sorted({s.method for s in cfg.students} & {"sft", "dpo"})
    if trained and not dry_run:
        from nepotism.extras import require

        require("train", purpose=f"nepotism leakage run ({'/'.join(trained)} students are trained)")
    with tempfile.TemporaryDirectory(prefix="nepotism-leakage-dry-run-") as scratch:
        # a dry run plans against the store if it exists, else against a throw-away one: no file is left
        existing = store_path_of(store_path, cfg.experiment)
        path = (
            (existing if existing.exists() else Path(scratch) / "plan.db")
            if dry_run
            else experiment_store(store_path, cfg.experiment)
        )
        with Store(path) as store:
            result = run_live(
                lambda view: run_leakage(cfg, store, dry_run=dry_run, view=view),
                progress=False if dry_run else progress,
                as_json=as_json,
            )
    if isinstance(result, dict):  # a dry run: the plan's counts
        if as_json:
            echo_json(result)
            return
        click.echo(
            f"{result['experiment']}: {result['train_instructions']} training and "
            f"{result['eval_instructions']} evaluation instructions, {len(result['students'])} students, "
            f"~{result['generation_calls']} generation"
            + (f", {result['rewrite_calls']} rewrite" if result["rewrite_calls"] else "")
            + f" and {result['judge_calls']} pairwise judge calls"
        )
        for s in result["students"]:
            click.echo(f"  {s['id']}  ({s['method']}, group {s['group']})")
        return
    summary = result.summary
    if as_json:
        echo_json(result.document())
        exit_if_calls_failed(summary["calls"], max_failure_rate)
        return
    records = result.to_dicts()
    click.echo(pls_table(records))
    extra = analyses_table(records)
    if extra:
        click.echo("")
        click.echo(extra)
    for note in summary["notes"]:
        click.echo(f"note: {note}")
    click.echo(f"timings: {json.dumps(summary['timings'])}")
    click.echo(f"written: {', '.join(summary['files'].values())}")
    exit_if_calls_failed(summary["calls"], max_failure_rate)


@command.command("audit")
@click.argument("table", required=False, type=click.Path(path_type=Path))
@click.option("--demo", is_flag=True, help="Audit the bundled AlpacaEval judgments.")
@click.option("--judge", "judges", multiple=True, help="Judge to audit (default: every judge that ranks two or more entries).")
@models_option
@click.option("--reference-judge", default=None, help="An unrelated judge to estimate the bonus against.")
@click.option(
    "--reference-leaderboard",
    type=click.Path(path_type=Path, dir_okay=False),
    default=None,
    help="CSV model,score (e.g. a human-vote leaderboard) for the ranking difference of §5.4.",
)
@click.option("--top", type=click.IntRange(1), default=None, help="Print only the first N rows of each leaderboard.")
@bootstrap_options
@click.option("--json", "as_json", is_flag=True, help="Print the results document (as `nepotism metrics --json`).")
def audit(
    table: Path | None,
    demo: bool,
    judges: tuple[str, ...],
    models_files: tuple[str, ...],
    reference_judge: str | None,
    reference_leaderboard: Path | None,
    top: int | None,
    bootstrap: Bootstrap,
    as_json: bool,
) -> None:
    """Flag leaderboard entries related to the judge, estimate their bonus, re-rank without it (with rank CIs).

    TABLE is a recorded pairwise table (every entry compared with one baseline per judge) or a
    pointwise table (every entry graded alone, e.g. imported MT-Bench or arena-bench grades), or
    anything `nepotism metrics` reads that holds one (a store, a run folder, a dataset). It is
    validated as `nepotism metrics` validates it: every judge must be in the model registry
    (--models extends it). With no unrelated judge on the same entries, the related entries are
    flagged from the registry alone. --json prints the results document that `nepotism report`
    and `nepotism card` read.
    """
    from nepotism.analyses.suite import read_leaderboard
    from nepotism.api import check_registry, read_source
    from nepotism.errors import InputError
    from nepotism.leakage.audit import audit_leaderboard, format_audit
    from nepotism.models import load_registry

    if demo == (table is not None):
        raise InputError("give a TABLE or --demo (not both)")
    if demo:
        from nepotism.data import demo_judgments

        table = demo_judgments()
    ranked = [t for t in read_source(table) if t.kind in ("pairwise", "pointwise")]
    if len(ranked) != 1:
        raise InputError(
            "needs one pairwise or one pointwise table of leaderboard judgments" + (f", not {len(ranked)}" if ranked else ""),
            path=str(table),
        )
    (found,) = ranked
    registry = load_registry(list(models_files))
    check_registry(found, registry)
    reference = read_leaderboard(reference_leaderboard) if reference_leaderboard else None
    try:
        results = audit_leaderboard(
            found.frame,
            registry,
            list(judges) or None,
            reference_judge=reference_judge,
            reference_leaderboard=reference,
            bootstrap=bootstrap,
        )
    except ValueError as err:
        raise InputError(str(err), path=str(table), field="judge") from None
    results.summary["source"] = "the bundled AlpacaEval judgments (--demo)" if demo else str(table)
    if as_json:
        echo_json(results.document())
        return
    click.echo(format_audit(results, top=top))
