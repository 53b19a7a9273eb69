"""What several commands share: options (bootstrap settings, --json, --models), the store an
experiment command opens, and running a live job under a progress bar with Ctrl-C handled."""

from __future__ import annotations

import json
import sys

import click

__all__ = ["bootstrap_options", "echo_json", "experiment_store", "models_option", "run_live"]


def bootstrap_options(function):
    """Add --bootstrap, --seed, --confidence and --ci-method."""
    function = click.option("--ci-method", type=click.Choice(["percentile", "bca"]), default="percentile",
                            show_default=True, help="Bootstrap interval method.")(function)
    function = click.option("--confidence", type=click.FloatRange(0.5, 0.999), default=0.95, show_default=True,
                            help="Confidence level of the intervals.")(function)
    function = click.option("--seed", type=int, default=0, show_default=True,
                            help="Seed of the bootstrap: the same seed gives the same numbers.")(function)
    function = click.option("--bootstrap", "n_resamples", type=click.IntRange(0, 100_000), default=1000,
                            show_default=True, help="Bootstrap resamples of prompts (0 = no intervals).")(function)
    return function


def models_option(function):
    """Add a repeatable --models FILE that extends the bundled registry."""
    return click.option("--models", "models_files", multiple=True, type=click.Path(dir_okay=False),
                        help="Extra model registry TOML file (repeatable); extends the bundled one.")(function)


def echo_json(value) -> None:
    """Print JSON (NaN-free, sorted keys) to stdout."""
    sys.stdout.write(json.dumps(value, indent=2, sort_keys=True, default=str) + "\n")


def experiment_store(store_path, experiment):
    """The store file of an experiment command, its folder created: --store, else the experiment's
    ``store``, else $NEPOTISM_STORE, else ./nepotism.db."""
    from pathlib import Path

    from nepotism.store import default_store_path

    path = Path(store_path) if store_path else (Path(experiment.store) if experiment.store else default_store_path())
    path.parent.mkdir(parents=True, exist_ok=True)
    return path


def run_live(job, *, progress: bool | None):
    """``asyncio.run(job(view))`` under a progress view; Ctrl-C prints that every completed call is
    stored and exits 130 (the run resumes when started again)."""
    import asyncio

    from nepotism.runner import ProgressView

    view = ProgressView(enabled=progress)
    try:
        with view:
            return asyncio.run(job(view))
    except KeyboardInterrupt:
        click.echo("interrupted: every completed call is stored; run again to resume", err=True)
        sys.exit(130)
