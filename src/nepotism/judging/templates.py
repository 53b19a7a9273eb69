"""Judging prompt templates: package data, loaded once, each with an id and a content hash.

Each ``templates/<id>.toml`` holds ``id``, ``protocol``, ``description`` and ``template`` (a Jinja2
text). ``templates/_macros.j2`` holds the pieces every template imports (how a conversation is
laid out, the optional impartiality note). A template's hash is the SHA-256 of its TOML file's
bytes followed by the macros file's bytes, so editing either changes the id stored on every
judgment: ``"<id>@<first 12 hex digits>"``. Rendering uses strict undefined variables, so a
template that names a value the caller did not pass fails loudly instead of printing nothing.

What a task's options add to that id (``pairwise-3way-cot@...``) is decided in `nepotism.judging.render`.

A user's own template (paper 000 D.3, prompt sensitivity) is a TOML file of the same shape named by
a task's ``template`` option (an absolute path; an experiment file resolves it against its folder):
`check_user_template` reads it and checks its placeholders against what its slot renders with
(`PLACEHOLDERS`: an unknown placeholder, or a required one never used, is an `InputError` naming
the file, the line and the field) before anything is rendered. Its id is ``user-<id>`` and its hash
covers its file and the macros, like a shipped one's; the rendered prompt is part of every call's
cache key, so a changed template that changes a prompt is a new call.
"""

from __future__ import annotations

import hashlib
import os
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from pathlib import Path
from types import MappingProxyType
from typing import Any

import jinja2
from jinja2 import meta, nodes

from nepotism.errors import InputError
from nepotism.input_limits import parse_toml

__all__ = [
    "COMMON",
    "PLACEHOLDERS",
    "Template",
    "check_user_template",
    "get_template",
    "is_user_template",
    "load_templates",
    "read_templates",
    "render_text",
    "render_user",
    "template_ids",
    "template_slot",
    "user_template",
]

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
def _macros_source() -> str:
    return read_templates()[1]


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


# --------------------------------------------------------------------------- user templates
#: What each template slot renders with: (placeholders a template must use, the others it may use).
#: Every slot also has `COMMON`: ``messages`` (required: the conversation), ``impartial``, ``mode``
#: and ``reasoning``. `nepotism.judging.render` passes exactly these (a test checks it).
COMMON = (frozenset({"messages"}), frozenset({"impartial", "mode", "reasoning"}))
PLACEHOLDERS: Mapping[str, tuple[frozenset[str], frozenset[str]]] = MappingProxyType(
    {
        "pairwise": (frozenset({"first", "second"}), frozenset({"name_a", "name_b", "ways", "tie", "rubric", "reference"})),
        "pointwise": (frozenset({"answer"}), frozenset({"low", "high", "reference"})),
        "pointwise-fraction": (frozenset({"answer", "rubric"}), frozenset()),
        "rubric": (frozenset({"answer", "item"}), frozenset()),
        "rubric-all": (frozenset({"answer", "rubric"}), frozenset()),
        "recognition": (frozenset({"answer"}), frozenset({"subject"})),
        "recognition-pairwise": (frozenset({"first", "second"}), frozenset({"name_a", "name_b", "subject"})),
        "categorise": (frozenset({"categories"}), frozenset({"target", "text"})),
    }
)
_USER_KEYS = ("protocol", "template", "id", "description")
_JINJA_NAMES = frozenset(
    {"loop", "range", "dict", "lipsum", "cycler", "joiner", "namespace", "caller", "varargs", "kwargs", "self", "super"}
)


def template_slot(protocol: str, options: Mapping[str, Any]) -> str:
    """Which template a task of ``protocol`` with ``options`` renders (a fraction score has its own)."""
    if protocol == "pointwise" and options.get("kind") == "fraction":
        return "pointwise-fraction"
    return protocol


def is_user_template(name: str) -> bool:
    """Whether ``name`` (a task's ``template`` option) is a user template file, not a shipped id."""
    return name.endswith(".toml") and os.path.isabs(name)


def _environment_for(sources: Mapping[str, str]) -> jinja2.Environment:
    return jinja2.Environment(
        loader=jinja2.DictLoader(dict(sources)),
        undefined=jinja2.StrictUndefined,
        autoescape=False,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=False,
    )


def _template_line(raw: str, source: str) -> int:
    """The file line where the template text starts (its first line found after the ``template`` key)."""
    lines = raw.splitlines()
    key = next((i for i, line in enumerate(lines) if line.lstrip().startswith("template")), 0)
    first = source.splitlines()[0] if source.strip() else ""
    for i in range(key, len(lines)):
        if first and first in lines[i]:
            return i + 1
    return key + 1


def check_user_template(path: str | Path, slot: str) -> Template:
    """Read and check a user's judge template file for ``slot`` (a `PLACEHOLDERS` key).

    The file is TOML: ``protocol`` (the slot's protocol) and ``template`` (Jinja2, may import
    ``_macros.j2``), optionally ``id`` (default: the file name) and ``description``. Every
    placeholder must be one the slot renders with, and the slot's required ones must all be used;
    otherwise `InputError` naming the file, the line and the field (nothing is rendered).
    """
    path = Path(path)
    where = str(path)
    try:
        data = path.read_bytes()
        raw = data.decode("utf-8-sig")
    except FileNotFoundError:
        raise InputError("judge template file not found", path=where) from None
    except (OSError, UnicodeDecodeError) as err:
        raise InputError(f"cannot read the judge template ({err})", path=where) from None
    doc = parse_toml(raw, where)

    def key_line(key: str) -> int | None:
        return next((i + 1 for i, line in enumerate(raw.splitlines()) if line.lstrip().startswith(key)), None)

    for key in doc:
        if key not in _USER_KEYS:
            raise InputError(f"unknown key; expected one of {list(_USER_KEYS)}", path=where, line=key_line(key), field=key)
    for key in ("protocol", "template"):
        if not isinstance(doc.get(key), str) or not doc[key].strip():
            raise InputError("is required (a string)", path=where, line=key_line(key), field=key)
    for key in ("id", "description"):
        if key in doc and (not isinstance(doc[key], str) or not doc[key].strip()):
            raise InputError("must be a non-empty string", path=where, line=key_line(key), field=key)
    if slot not in PLACEHOLDERS:
        raise ValueError(f"unknown template slot {slot!r}; known: {sorted(PLACEHOLDERS)}")
    protocol = slot.removesuffix("-fraction")
    if doc["protocol"] != protocol:
        raise InputError(
            f"is {doc['protocol']!r}, but the template is used for protocol {protocol!r}",
            path=where,
            line=key_line("protocol"),
            field="protocol",
        )
    source = doc["template"].lstrip("\n")
    start = _template_line(raw, source)
    macros = _macros_source()
    env = _environment_for({_MACROS: macros})
    try:
        tree = env.parse(source)
    except jinja2.TemplateSyntaxError as err:
        raise InputError(
            f"not a valid Jinja2 template ({err.message})", path=where, line=start + (err.lineno or 1) - 1, field="template"
        ) from None
    required, optional = PLACEHOLDERS[slot]
    known = required | optional | COMMON[0] | COMMON[1]
    used = meta.find_undeclared_variables(tree) - _JINJA_NAMES
    for name in sorted(used - known):
        node = next(n for n in tree.find_all(nodes.Name) if n.name == name)
        raise InputError(
            f"unknown placeholder {{{{ {name} }}}}; a {slot} template has {', '.join(sorted(known))}",
            path=where,
            line=start + node.lineno - 1,
            field="template",
        )
    missing = sorted((required | COMMON[0]) - used)
    if missing:
        raise InputError(
            f"the template never shows {', '.join(missing)} (a {slot} template must use "
            f"{', '.join(sorted(required | COMMON[0]))})",
            path=where,
            line=start,
            field="template",
        )
    name = doc.get("id", path.stem)
    return Template(
        id=f"user-{name}",
        protocol=protocol,
        description=doc.get("description", f"user template {path.name}"),
        source=source,
        sha256=hashlib.sha256(data + macros.encode("utf-8")).hexdigest(),
    )


@lru_cache(maxsize=64)
def _user(path: str, slot: str, stamp: tuple[int, int]) -> tuple[Template, jinja2.Environment]:
    del stamp  # part of the cache key only: an edited file is read (and checked) again
    template = check_user_template(path, slot)
    return template, _environment_for({_MACROS: _macros_source(), path: template.source})


def _stamp(path: str) -> tuple[int, int]:
    try:
        info = os.stat(path)
    except OSError:
        return (0, 0)  # check_user_template names the file
    return (info.st_mtime_ns, info.st_size)


def user_template(path: str, slot: str) -> Template:
    """The user template file ``path`` checked for ``slot`` (read again when the file changes)."""
    return _user(path, slot, _stamp(path))[0]


def render_user(path: str, slot: str, variables: dict[str, Any]) -> str:
    """Render the user template ``path`` (as `render_text` renders a shipped one)."""
    env = _user(path, slot, _stamp(path))[1]
    return env.get_template(path).render(**variables).strip() + "\n"
