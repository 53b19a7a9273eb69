"""``nepotism leakage``: preference-leakage experiments (paper 000) and the leaderboard audit.

``nepotism leakage EXPERIMENT.toml`` is short for ``nepotism leakage run EXPERIMENT.toml``.
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

import click

from nepotism.cli._common import (echo_json, exit_if_calls_failed, experiment_store, max_failure_rate_option, run_live,
                                  store_path_of)

__all__ = ["command"]


class _Group(click.Group):
    """A group whose first argument may be an experiment file (then the verb is ``run``)."""

    def resolve_command(self, ctx: click.Context, args: list[str]):
        if args and args[0] not in self.commands and args[0].endswith(".toml"):
            args = ["run", *args]
        return super().resolve_command(ctx, args)


@click.group("leakage", cls=_Group)
def command() -> None:
    """Preference leakage: students of data generators judged by related judges (paper 000)."""


@command.command("run")
@click.argument("experiment_file", type=click.Path(path_type=Path, dir_okay=False))
@click.option("--dry-run", is_flag=True, help="Check the file and pools, list the students and count the calls (no file is written).")
@click.option("--store", "store_path", type=click.Path(path_type=Path, dir_okay=False), default=None,
              help="Store file (default: the experiment's store, else $NEPOTISM_STORE, else ./nepotism.db).")
@click.option("--json", "as_json", is_flag=True, help="Print the result as JSON.")
@click.option("--progress/--no-progress", default=None,
              help="Show the progress bar (default: when stderr is a terminal).")
@max_failure_rate_option("the calls (synthetic data, students' answers, rewrites, judging)")
def run(experiment_file: Path, dry_run: bool, store_path: Path | None, as_json: bool, progress: bool | None,
        max_failure_rate: float) -> None:
    """Generate synthetic data, make students, judge every student pair, and compute PLS and the analyses.

    Results go to the experiment's output directory: results.json / results.csv (standard
    records), students.toml (the students' lineage, a registry file), synthetic/ (the
    generators' data in trainer formats) and students/ (trained adapters and manifests).
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
        path = (existing if existing.exists() else Path(scratch) / "plan.db") if dry_run else \
            experiment_store(store_path, cfg.experiment)
        with Store(path) as store:
            result = run_live(lambda view: run_leakage(cfg, store, dry_run=dry_run, view=view),
                              progress=False if dry_run else progress, as_json=as_json)
    if as_json:
        echo_json(result)
        if not dry_run:
            exit_if_calls_failed(result["calls"], max_failure_rate)
        return
    if dry_run:
        click.echo(f"{result['experiment']}: {result['train_instructions']} training and "
                   f"{result['eval_instructions']} evaluation instructions, {len(result['students'])} students, "
                   f"~{result['generation_calls']} generation"
                   + (f", {result['rewrite_calls']} rewrite" if result["rewrite_calls"] else "")
                   + f" and {result['judge_calls']} pairwise judge calls")
        for s in result["students"]:
            click.echo(f"  {s['id']}  ({s['method']}, group {s['group']})")
        return
    click.echo(pls_table(result["records"]))
    extra = analyses_table(result["records"])
    if extra:
        click.echo("")
        click.echo(extra)
    for note in result["notes"]:
        click.echo(f"note: {note}")
    click.echo(f"timings: {json.dumps(result['timings'])}")
    click.echo(f"written: {', '.join(result['files'].values())}")
    exit_if_calls_failed(result["calls"], max_failure_rate)


@command.command("audit")
@click.argument("table", required=False, type=click.Path(path_type=Path, dir_okay=False))
@click.option("--demo", is_flag=True, help="Audit the bundled AlpacaEval judgments.")
@click.option("--judge", "judges", multiple=True,
              help="Judge to audit (default: every judge that ranks two or more entries).")
@click.option("--registry", "registry_files", multiple=True, type=click.Path(path_type=Path, dir_okay=False),
              help="Extra registry TOML files (lineage of the entries).")
@click.option("--reference-judge", default=None, help="An unrelated judge to estimate the bonus against.")
@click.option("--reference-leaderboard", type=click.Path(path_type=Path, dir_okay=False), default=None,
              help="CSV model,score (e.g. a human-vote leaderboard) for the ranking difference of §5.4.")
@click.option("--top", type=click.IntRange(1), default=None, help="Print only the first N rows of each leaderboard.")
@click.option("--resamples", type=click.IntRange(0, 100_000), default=1000, show_default=True)
@click.option("--json", "as_json", is_flag=True, help="Print the audit as JSON.")
def audit(table: Path | None, demo: bool, judges: tuple[str, ...], registry_files: tuple[Path, ...],
          reference_judge: str | None, reference_leaderboard: Path | None, top: int | None, resamples: int,
          as_json: bool) -> None:
    """Flag leaderboard entries related to the judge, estimate their bonus, re-rank without it (with rank CIs).

    TABLE is a recorded pairwise table (every entry compared with one baseline per judge) or a
    pointwise table (every entry graded alone, e.g. imported MT-Bench or arena-bench grades). With no
    unrelated judge on the same entries, the related entries are flagged from the registry alone.
    """
    from nepotism.analyses.suite import read_leaderboard
    from nepotism.errors import InputError
    from nepotism.leakage.audit import audit_leaderboard, format_audit
    from nepotism.metrics import Bootstrap
    from nepotism.models import load_registry
    from nepotism.tables import read_table

    if demo == (table is not None):
        raise InputError("give a TABLE or --demo (not both)")
    if demo:
        from nepotism.data import demo_judgments

        table = demo_judgments()
    frame = read_table(table).frame
    registry = load_registry([str(p) for p in registry_files])
    reference = read_leaderboard(reference_leaderboard) if reference_leaderboard else None
    pointwise = "model" in frame
    entries = ["model"] if pointwise else ["model_a", "model_b"]
    least = 2 if pointwise else 3  # a pairwise leaderboard's models include its baseline
    chosen = list(judges) or sorted(j for j, g in frame.groupby("judge")
                                     if len(set().union(*(set(g[c]) for c in entries))) >= least)
    if not chosen:
        what = "models graded" if pointwise else "models besides a baseline"
        raise InputError(f"no judge ranks two or more entries ({what}): nothing to audit", path=str(table),
                         field="judge")
    results = []
    for judge in chosen:
        try:
            results.append(audit_leaderboard(frame, registry, judge, reference_judge=reference_judge,
                                             reference_leaderboard=reference,
                                             bootstrap=Bootstrap(n_resamples=resamples)))
        except ValueError as err:
            raise InputError(str(err), path=str(table), field="judge") from None
    if as_json:
        echo_json(results)
        return
    click.echo("\n\n".join(format_audit(r, top=top) for r in results))
