"""Judging prompt templates: package data, loaded once, each with an id and a content hash.

Each ``templates/<id>.toml`` holds ``id``, ``protocol``, ``description`` and ``template`` (a Jinja2
text). ``templates/_macros.j2`` holds the pieces every template imports (how a conversation is
laid out, the optional impartiality note). A template's hash is the SHA-256 of its TOML file's
bytes followed by the macros file's bytes, so editing either changes the id stored on every
judgment: ``"<id>@<first 12 hex digits>"``. Rendering uses strict undefined variables, so a
template that names a value the caller did not pass fails loudly instead of printing nothing.

What a task's options add to that id (``pairwise-3way-cot@...``) is decided in `nepotism.judging.render`.
"""

from __future__ import annotations

import hashlib
import tomllib
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from typing import Any

import jinja2

__all__ = ["Template", "get_template", "load_templates", "read_templates", "render_text", "template_ids"]

_MACROS = "_macros.j2"
_HASH_LENGTH = 12


@dataclass(frozen=True)
class Template:
    """One prompt template: its id, the task protocol it serves, its Jinja2 source and hash."""

    id: str
    protocol: str
    description: str
    source: str
    sha256: str

    @property
    def template_id(self) -> str:
        """``"<id>@<12 hex>"``: the id and the start of the hash."""
        return f"{self.id}@{self.sha256[:_HASH_LENGTH]}"


def read_templates(folder: Any = None) -> tuple[dict[str, Template], str]:
    """Read every template (and the macros source) from ``folder``, the package's by default."""
    if folder is None:
        folder = resources.files("nepotism.judging").joinpath("templates")
    macros = folder.joinpath(_MACROS).read_bytes()
    out: dict[str, Template] = {}
    for entry in sorted(folder.iterdir(), key=lambda e: e.name):
        if not entry.name.endswith(".toml") or entry.name.startswith("_"):
            continue
        data = entry.read_bytes()
        doc = tomllib.loads(data.decode("utf-8"))
        missing = {"id", "protocol", "description", "template"} - set(doc)
        if missing:
            raise RuntimeError(f"judging template {entry.name} lacks {sorted(missing)}")
        if doc["id"] + ".toml" != entry.name:
            raise RuntimeError(f"judging template {entry.name} must have id {entry.name[:-5]!r}")
        out[doc["id"]] = Template(
            id=doc["id"],
            protocol=doc["protocol"],
            description=doc["description"],
            source=doc["template"].lstrip("\n"),
            sha256=hashlib.sha256(data + macros).hexdigest(),
        )
    return out, macros.decode("utf-8")


@lru_cache(maxsize=1)
def _environment() -> tuple[dict[str, Template], jinja2.Environment]:
    templates, macros = read_templates()
    sources = {tid: t.source for tid, t in templates.items()} | {_MACROS: macros}
    env = jinja2.Environment(
        loader=jinja2.DictLoader(sources),
        undefined=jinja2.StrictUndefined,
        autoescape=False,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=False,
    )
    return templates, env


def load_templates() -> dict[str, Template]:
    """Every template by id (loaded once per process)."""
    return dict(_environment()[0])


def get_template(template: str) -> Template:
    """The template named ``template``; `KeyError` naming the known ids if there is none."""
    templates = _environment()[0]
    try:
        return templates[template]
    except KeyError:
        raise KeyError(f"no judging template {template!r}; known: {sorted(templates)}") from None


def template_ids() -> dict[str, str]:
    """``{template id: "<id>@<12 hex>"}`` for every template."""
    return {tid: t.template_id for tid, t in _environment()[0].items()}


def render_text(template: str, variables: dict[str, Any]) -> str:
    """Render template ``template`` with ``variables``; surrounding blank lines are removed."""
    get_template(template)
    text = _environment()[1].get_template(template).render(**variables)
    return text.strip() + "\n"
