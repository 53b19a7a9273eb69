"""Read, merge and validate model registry TOML files into a `Registry`.

File format: one ``[models."<id>"]`` table per model with the keys ``family`` (required for a new
id), ``series``, ``aliases``, ``parent``, ``teachers``, ``sources``, ``provider``,
``price_input_per_mtok``, ``price_output_per_mtok`` and ``notes``. Nothing else is allowed at the top
level or inside a model table, so that typos fail loudly.

Two more top-level tables name models without describing them, so that a user can take the names
of a data file as they are spelled instead of renaming the data:

* ``[aliases]``: ``"GPT 4" = "gpt-4"`` makes a name another alias of a model any file defines (the
  target is any name of it, resolved by `Registry.resolve`, ids and aliases alike);
* ``[families]``: ``"Anthropic" = ["Claude 2", "Claude Instant"]`` gives a family to names the
  registry does not know, each becoming a model of that family (no series, no lineage). The family
  is matched to a registered family case-insensitively (``"Claude"`` is ``claude``), else to the one
  family of a provider's models (``"Anthropic"`` is ``claude``; a provider of several families, such
  as ``google``, is an error naming them), else it is a new family. A listed name the registry
  already knows must already be of that family.

Files are merged in order (the bundled registry first unless ``include_default=False``). A later
file may add models, or repeat an existing id to extend it: ``aliases`` and ``teachers`` are
unioned, ``sources`` merged, a missing scalar filled in, different ``notes`` appended. Repeating an
id with a different ``family``, ``series``, ``parent``, ``provider``, price or source note is an
error. ``[aliases]`` and ``[families]`` apply once every file's models are merged. Every error is an
`InputError` naming the file and the key (``models."<id>".<field>``, ``aliases."<name>"``,
``families."<family>"``).

Not done here: fetching registries from the network, or guessing lineage from names.
"""

from __future__ import annotations

import functools
import importlib.resources
from collections.abc import Sequence
from pathlib import Path
from types import MappingProxyType
from typing import Any

from nepotism.errors import InputError
from nepotism.input_limits import parse_toml
from nepotism.models.registry import ModelInfo, Registry

__all__ = ["BUNDLED_REGISTRY", "default_registry", "load_registry"]

BUNDLED_REGISTRY = "nepotism/models/data/registry.toml"
"""Label used for the bundled file in error messages and in `ModelInfo.files`."""

_SCALARS = ("family", "series", "parent", "provider", "price_input_per_mtok", "price_output_per_mtok")
_ALLOWED = frozenset((*_SCALARS, "aliases", "teachers", "sources", "notes"))


def _key(model_id: str, field: str | None = None) -> str:
    base = f'models."{model_id}"'
    return f"{base}.{field}" if field else base


class _Draft:
    """A model entry being merged; remembers which file set each piece, for error messages."""

    def __init__(self, model_id: str, path: str) -> None:
        self.id = model_id
        self.values: dict[str, Any] = {}
        self.origin: dict[str, str] = {}
        self.aliases: dict[str, str] = {}
        self.teachers: dict[str, str] = {}
        self.sources: dict[str, tuple[str, str]] = {}
        self.notes: list[str] = []
        self.files: list[str] = [path]


def _check_str(value: Any, path: str, field: str) -> str:
    if not isinstance(value, str) or not value.strip():
        raise InputError("expected a non-empty string", path=path, field=field)
    return value


def _check_name(value: Any, path: str, field: str) -> str:
    name = _check_str(value, path, field)
    if "@" in name or name != name.strip():
        raise InputError(f"name {name!r} must not contain '@' or surrounding spaces", path=path, field=field)
    return name


def _check_list(value: Any, path: str, field: str) -> list[str]:
    if not isinstance(value, list):
        raise InputError("expected a list of strings", path=path, field=field)
    return [_check_name(v, path, field) for v in value]


def _check_price(value: Any, path: str, field: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or value < 0:
        raise InputError("expected a non-negative number (USD per million tokens)", path=path, field=field)
    return float(value)


def _parse_entry(model_id: str, table: Any, path: str) -> dict[str, Any]:
    if not isinstance(table, dict):
        raise InputError("expected a table", path=path, field=_key(model_id))
    unknown = sorted(set(table) - _ALLOWED)
    if unknown:
        raise InputError(
            f"unknown key(s) {', '.join(unknown)}; allowed: {', '.join(sorted(_ALLOWED))}",
            path=path,
            field=_key(model_id, unknown[0]),
        )
    out: dict[str, Any] = {}
    for field, value in table.items():
        where = _key(model_id, field)
        if field in ("aliases", "teachers"):
            out[field] = _check_list(value, path, where)
        elif field == "parent":
            out[field] = _check_name(value, path, where)
        elif field.startswith("price_"):
            out[field] = _check_price(value, path, where)
        elif field == "sources":
            if not isinstance(value, dict):
                raise InputError("expected a table of edge = note", path=path, field=where)
            out[field] = {}
            for edge, note in _flatten(value).items():
                out[field][edge] = _check_str(note, path, f"{where}.{edge}")
        else:
            out[field] = _check_str(value, path, where)
    return out


def _flatten(table: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    """Turn ``{"teachers": {"gpt-4": "note"}}`` (TOML dotted keys) into ``{"teachers.gpt-4": ...}``."""
    flat: dict[str, Any] = {}
    for key, value in table.items():
        name = f"{prefix}{key}"
        if isinstance(value, dict):
            flat.update(_flatten(value, f"{name}."))
        else:
            flat[name] = value
    return flat


def _merge(drafts: dict[str, _Draft], model_id: str, entry: dict[str, Any], path: str) -> None:
    draft = drafts.get(model_id)
    if draft is None:
        draft = drafts[model_id] = _Draft(model_id, path)
    elif path not in draft.files:
        draft.files.append(path)
    for field in _SCALARS:
        if field not in entry:
            continue
        old = draft.values.get(field)
        if old is not None and old != entry[field]:
            raise InputError(
                f"{entry[field]!r} contradicts {old!r} set in {draft.origin[field]}",
                path=path,
                field=_key(model_id, field),
            )
        if old is None:
            draft.values[field] = entry[field]
            draft.origin[field] = path
    for alias in entry.get("aliases", ()):
        draft.aliases.setdefault(alias, path)
    for teacher in entry.get("teachers", ()):
        draft.teachers.setdefault(teacher, path)
    for edge, note in entry.get("sources", {}).items():
        if edge in draft.sources and draft.sources[edge][0] != note:
            raise InputError(
                f"source note contradicts the one set in {draft.sources[edge][1]}",
                path=path,
                field=_key(model_id, f"sources.{edge}"),
            )
        draft.sources.setdefault(edge, (note, path))
    if "notes" in entry and entry["notes"] not in draft.notes:
        draft.notes.append(entry["notes"])


class _Links:
    """The ``[aliases]`` and ``[families]`` entries of the files read, applied once all models are merged."""

    def __init__(self) -> None:
        self.aliases: list[tuple[str, str, str]] = []  # (alias, target name, file)
        self.families: list[tuple[str, list[str], str]] = []  # (family as written, names, file)

    def read(self, data: dict[str, Any], label: str) -> None:
        aliases = data.get("aliases", {})
        if not isinstance(aliases, dict):
            raise InputError('expected an [aliases] table of "name" = "model"', path=label, field="aliases")
        for alias, target in aliases.items():
            where = f'aliases."{alias}"'
            self.aliases.append((_check_name(alias, label, where), _check_name(target, label, where), label))
        families = data.get("families", {})
        if not isinstance(families, dict):
            raise InputError('expected a [families] table of "family" = ["name", ...]', path=label, field="families")
        for family, names in families.items():
            where = f'families."{family}"'
            self.families.append((_check_str(family, label, where).strip(), _check_list(names, label, where), label))

    def apply(self, drafts: dict[str, _Draft]) -> None:
        """Add each alias to its target's model and each family's unknown names as models, through
        the merged registry's own name resolution; `InputError` naming the entry on a clash."""
        if not (self.aliases or self.families):
            return
        registry = _build(drafts)
        for alias, target, path in self.aliases:
            where = f'aliases."{alias}"'
            try:
                model_id = registry.resolve(target)
            except KeyError:
                raise InputError(
                    f"{target!r} is not a name of any model (see `nepotism models list`)", path=path, field=where
                ) from None
            if registry.knows(alias) and registry.resolve(alias) != model_id:
                raise InputError(f"{alias!r} is already a name of model {registry.resolve(alias)!r}", path=path, field=where)
            drafts[model_id].aliases.setdefault(alias, path)
            if path not in drafts[model_id].files:
                drafts[model_id].files.append(path)
        registry = _build(drafts)
        added: dict[str, tuple[str, str]] = {}  # new name -> (family, file)
        for written, names, path in self.families:
            where = f'families."{written}"'
            family = _family(registry, written, path, where)
            for name in names:
                if registry.knows(name):
                    known = registry.get(name)
                    if known.family != family:
                        raise InputError(
                            f"{name!r} is model {known.id!r} of family {known.family!r}, not {family!r}", path=path, field=where
                        )
                    continue
                if name.casefold() in added and added[name.casefold()][0] != family:
                    raise InputError(
                        f"{name!r} is given family {added[name.casefold()][0]!r} in {added[name.casefold()][1]} too",
                        path=path,
                        field=where,
                    )
                added[name.casefold()] = (family, path)
                if name not in drafts:
                    drafts[name] = _Draft(name, path)
                    drafts[name].values["family"] = family
                    drafts[name].origin["family"] = path


def _family(registry: Registry, written: str, path: str, field: str) -> str:
    """The family a ``[families]`` key names: a registered family (any case), else the one family of
    a provider's models, else the key itself as a new family."""
    families = {m.family.casefold(): m.family for m in registry}
    if written.casefold() in families:
        return families[written.casefold()]
    of_provider = sorted({m.family for m in registry if m.provider and m.provider.casefold() == written.casefold()})
    if len(of_provider) > 1:
        raise InputError(
            f"{written!r} is the provider of several families ({', '.join(of_provider)}); name the family instead",
            path=path,
            field=field,
        )
    return of_provider[0] if of_provider else written


def _read(path: Path | str, text: str | None, drafts: dict[str, _Draft], links: _Links | None = None) -> None:
    label = str(path)
    if text is None:
        try:
            text = Path(path).read_text(encoding="utf-8-sig")
        except (OSError, UnicodeDecodeError) as err:
            raise InputError(f"cannot read registry file: {err}", path=label) from err
    data = parse_toml(text, label)  # invalid, too deep or too long: an InputError naming the file
    unknown = sorted(set(data) - {"models", "aliases", "families"})
    if unknown:
        raise InputError(
            'only [models."<id>"], [aliases] and [families] tables are allowed at the top level', path=label, field=unknown[0]
        )
    if links is not None:
        links.read(data, label)
    models = data.get("models", {})
    if not isinstance(models, dict):
        raise InputError('expected [models."<id>"] tables', path=label, field="models")
    for model_id, table in models.items():
        _check_name(model_id, label, _key(model_id))
        _merge(drafts, model_id, _parse_entry(model_id, table, label), label)


def _validate(drafts: dict[str, _Draft]) -> None:
    claimed: dict[str, tuple[str, str]] = {}  # casefolded name -> (model id, file)
    for model_id, draft in drafts.items():
        if "family" not in draft.values:
            raise InputError("missing required key 'family'", path=draft.files[0], field=_key(model_id, "family"))
        names = [(model_id, draft.files[0], _key(model_id))]
        names += [(a, p, _key(model_id, "aliases")) for a, p in draft.aliases.items() if a != model_id]
        for name, path, field in names:
            owner = claimed.get(name.casefold())
            if owner is not None and owner[0] != model_id:
                raise InputError(
                    f"name {name!r} is already used by model {owner[0]!r} ({owner[1]})",
                    path=path,
                    field=field,
                )
            claimed[name.casefold()] = (model_id, path)
    for model_id, draft in drafts.items():
        parent = draft.values.get("parent")
        if parent is not None and parent not in drafts:
            raise InputError(f"unknown parent id {parent!r}", path=draft.origin["parent"], field=_key(model_id, "parent"))
        for teacher, path in draft.teachers.items():
            if teacher == model_id:
                raise InputError("a model cannot be its own teacher", path=path, field=_key(model_id, "teachers"))
            if teacher not in drafts:
                raise InputError(f"unknown teacher id {teacher!r}", path=path, field=_key(model_id, "teachers"))
        edges = {"parent"} if parent is not None else set()
        edges |= {f"teachers.{t}" for t in draft.teachers}
        for edge, (_, path) in draft.sources.items():
            if edge not in edges:
                raise InputError(
                    f"source for {edge!r}, which is not a lineage edge of this model",
                    path=path,
                    field=_key(model_id, f"sources.{edge}"),
                )
    _check_cycles(drafts)


def _check_cycles(drafts: dict[str, _Draft]) -> None:
    def edges(model_id: str) -> list[tuple[str, str, str]]:
        draft = drafts[model_id]
        out = []
        if "parent" in draft.values:
            out.append((draft.values["parent"], draft.origin["parent"], "parent"))
        out += [(t, p, "teachers") for t, p in draft.teachers.items()]
        return out

    state: dict[str, int] = {}  # 1 = on the current path, 2 = done
    for start in drafts:
        if state.get(start):
            continue
        stack: list[tuple[str, list[tuple[str, str, str]]]] = [(start, edges(start))]
        path = [start]
        state[start] = 1
        while stack:
            node, todo = stack[-1]
            if not todo:
                stack.pop()
                path.pop()
                state[node] = 2
                continue
            target, file, field = todo.pop()
            if state.get(target) == 1:
                loop = path[path.index(target) :] + [target]
                raise InputError(
                    f"cycle in parent/teacher edges: {' -> '.join(loop)}",
                    path=file,
                    field=_key(node, field),
                )
            if not state.get(target):
                state[target] = 1
                path.append(target)
                stack.append((target, edges(target)))


def _build(drafts: dict[str, _Draft]) -> Registry:
    models = {}
    for model_id, d in drafts.items():
        v = d.values
        models[model_id] = ModelInfo(
            id=model_id,
            family=v["family"],
            series=v.get("series"),
            aliases=tuple(a for a in d.aliases if a != model_id),
            parent=v.get("parent"),
            teachers=tuple(d.teachers),
            sources=MappingProxyType({edge: note for edge, (note, _) in d.sources.items()}),
            provider=v.get("provider"),
            price_input_per_mtok=v.get("price_input_per_mtok"),
            price_output_per_mtok=v.get("price_output_per_mtok"),
            notes="\n".join(d.notes) or None,
            files=tuple(d.files),
        )
    return Registry(models)


def load_registry(paths: Sequence[str | Path] = (), *, include_default: bool = True) -> Registry:
    """Load the bundled registry (unless ``include_default`` is false) followed by ``paths`` in
    order, merge and validate them; raises `InputError` naming the file and key on bad input."""
    if isinstance(paths, str | Path):
        paths = [paths]
    drafts: dict[str, _Draft] = {}
    links = _Links()
    if include_default:
        bundled = importlib.resources.files("nepotism.models").joinpath("data", "registry.toml")
        _read(BUNDLED_REGISTRY, bundled.read_text(encoding="utf-8"), drafts, links)
    for path in paths:
        _read(path, None, drafts, links)
    _validate(drafts)
    if links.aliases or links.families:
        links.apply(drafts)
        _validate(drafts)
    return _build(drafts)


@functools.cache
def default_registry() -> Registry:
    """The bundled registry alone, loaded once per process."""
    return load_registry()
