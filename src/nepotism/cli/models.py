"""``nepotism models``: list, show and relate the models of the registry.

This module only parses arguments and prints; all logic lives in `nepotism.models`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import click

from nepotism.cli._common import echo_json, models_option, print_table

if TYPE_CHECKING:
    from nepotism.models import Registry

__all__ = ["command"]

_JSON_OPTION = click.option("--json", "as_json", is_flag=True, help="Print JSON instead of a table.")


def _load(models_files: tuple[str, ...]) -> Registry:
    from nepotism.models import default_registry, load_registry

    return load_registry(models_files) if models_files else default_registry()


def _print_list(registry: Registry, as_json: bool) -> None:
    if as_json:
        echo_json([info.to_dict() for info in registry])
        return
    print_table(
        f"{len(registry)} models",
        ["id", "family", "series", "parent", "teachers"],
        [[info.id, info.family, info.series or "", info.parent or "", ", ".join(info.teachers)] for info in registry],
    )


@click.group("models", invoke_without_command=True)
@models_option
@_JSON_OPTION
@click.pass_context
def command(ctx: click.Context, models_files: tuple[str, ...], as_json: bool) -> None:
    """The model registry: families, lineage and judge/model relations.

    Without a verb, behaves like `list`.
    """
    ctx.ensure_object(dict)
    ctx.obj["models_files"] = models_files
    ctx.obj["as_json"] = as_json
    if ctx.invoked_subcommand is None:
        _print_list(_load(models_files), as_json)


def _merged(ctx: click.Context, models_files: tuple[str, ...], as_json: bool) -> tuple[tuple[str, ...], bool]:
    obj = ctx.obj or {}
    return tuple(obj.get("models_files", ())) + models_files, as_json or obj.get("as_json", False)


@command.command("list")
@models_option
@_JSON_OPTION
@click.pass_context
def list_models(ctx: click.Context, models_files: tuple[str, ...], as_json: bool) -> None:
    """List every model: id, family, series, parent and teachers."""
    files, as_json = _merged(ctx, models_files, as_json)
    _print_list(_load(files), as_json)


@command.command("show")
@click.argument("name")
@models_option
@_JSON_OPTION
@click.pass_context
def show(ctx: click.Context, name: str, models_files: tuple[str, ...], as_json: bool) -> None:
    """Show every field of one model (NAME may be an id or an alias), with lineage sources."""
    from nepotism.errors import InputError

    files, as_json = _merged(ctx, models_files, as_json)
    registry = _load(files)
    if not registry.knows(name):
        raise InputError(f"unknown model name {name!r}", field="NAME")
    info = registry.get(name)
    if as_json:
        echo_json(info.to_dict())
        return
    rows = []
    for key, value in info.to_dict().items():
        if key == "sources":
            continue
        if isinstance(value, list):
            value = ", ".join(value)
        rows.append([key, "" if value is None else str(value)])
    rows += [[f"source: {edge}", note] for edge, note in info.sources.items()]
    print_table(info.id, ["field", "value"], rows)


@command.command("relation")
@click.argument("judge")
@click.argument("model")
@models_option
@_JSON_OPTION
@click.pass_context
def relation(ctx: click.Context, judge: str, model: str, models_files: tuple[str, ...], as_json: bool) -> None:
    """Print how JUDGE is related to MODEL (self, lineage, student, teacher, ..., unknown)."""
    from nepotism.models import SCOPES

    files, as_json = _merged(ctx, models_files, as_json)
    registry = _load(files)
    rel = registry.relation(judge, model)
    known = registry.knows(judge) and registry.knows(model)
    if as_json:
        payload = {
            "judge": judge,
            "judge_id": registry.resolve(judge) if registry.knows(judge) else None,
            "model": model,
            "model_id": registry.resolve(model) if registry.knows(model) else None,
            "relation": rel.value,
            "scopes": {s: registry.related(judge, model, s) for s in SCOPES} if known else None,
        }
        echo_json(payload)
        return
    left = registry.resolve(judge) if registry.knows(judge) else f"{judge} (unknown)"
    right = registry.resolve(model) if registry.knows(model) else f"{model} (unknown)"
    click.echo(f"{left} -> {right}: {rel.value}")
