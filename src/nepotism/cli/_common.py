"""Options shared by several commands (bootstrap settings, --json, --models)."""

from __future__ import annotations

import json
import sys

import click

__all__ = ["bootstrap_options", "echo_json", "models_option"]


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
