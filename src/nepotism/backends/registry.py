"""The backends an experiment file can name, found by discovery.

Every module of this package (not starting with an underscore) that declares ``BACKEND``, a
`BackendSpec`, is a backend: its name in ``[models.ID] backend = "..."``, the options its table
takes (`Option`, read and checked by `nepotism.experiment`), the optional extra it needs (checked
with `nepotism.extras.require` before a run starts) and ``build``, which makes the backend from
the model's parsed configuration. A new backend is one module with its ``BACKEND`` and its test;
`specs` finds it, the experiment file accepts its name, the runner builds it. Options every
backend shares (concurrency, rate limits, retries, ``params``) are the experiment's, not listed
here. What this module leaves out: reading TOML (the experiment's) and sending calls (the
backends').
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import cache
from typing import Any, Literal

import nepotism.backends as _package
from nepotism.backends.base import Backend

__all__ = [
    "API_KEY_ENV",
    "MODEL_FILE",
    "THREADS",
    "TIMEOUT",
    "BackendSpec",
    "Kind",
    "Option",
    "get",
    "is_in_process",
    "names",
    "specs",
    "takes_raw_prompts",
]

#: How an option's value is read: ``text`` a string; ``path`` a file or folder relative to the
#: experiment file; ``env`` the NAME of an environment variable (never its value); ``url`` one
#: http(s) endpoint; ``urls`` one ``base_url`` or a list ``base_urls`` of them (replicas);
#: ``count`` a positive integer; ``amount`` a positive number; ``flag`` true or false.
Kind = Literal["text", "path", "env", "url", "urls", "count", "amount", "flag"]


@dataclass(frozen=True)
class Option:
    """One key of a ``[models.ID]`` table; ``name`` is also the `ModelConfig` field it fills."""

    name: str
    kind: Kind
    default: Any = None
    required: bool = False
    #: the largest value a ``count`` or ``amount`` may take (larger ones are typos)
    high: float | None = None
    unit: str = ""
    #: a ``count`` or ``amount`` that may be left unset (None: decided elsewhere)
    optional: bool = False


#: Options several backends share, spelled once: a packaged model id or a file (in-process
#: backends: exactly one, `BackendSpec.one_of`), the CPU threads of an in-process model (None: the
#: machine's setting, `nepotism.backends.model_threads`), a hosted model's key variable and timeout.
MODEL_FILE = (Option("model", "text"), Option("path", "path"))
THREADS = Option("n_threads", "count", None, high=1024, optional=True)
API_KEY_ENV = Option("api_key_env", "env")
TIMEOUT = Option("timeout", "amount", 60.0, high=86_400.0, unit="seconds")


@dataclass(frozen=True)
class BackendSpec:
    """A backend as the experiment file and the runner see it (module docstring)."""

    name: str
    #: one line for the experiment file's error messages and docs
    summary: str
    options: tuple[Option, ...]
    #: makes the backend from a parsed `nepotism.experiment.ModelConfig`
    build: Callable[[Any], Backend]
    #: the extra of pyproject.toml it needs (`nepotism.extras.EXTRAS`), None when always installed
    extra: str | None = None
    #: options of which exactly one must be given (a model id or a file)
    one_of: tuple[str, ...] = ()
    #: the model runs in this process: it takes ``n_threads``, and its weights, not a server-side name, identify what answered
    in_process: bool = False
    #: its server scores a continuation of raw text (an OpenAI-style completions endpoint), so a
    #: perplexity ``prompt="auto"`` sends the prompt as text; every other backend gets chat messages
    raw_prompts: bool = False
    #: the module declaring it (filled by discovery)
    module: str = ""


@cache
def _discovered() -> Mapping[str, BackendSpec]:
    found: dict[str, BackendSpec] = {}
    for info in sorted(pkgutil.iter_modules(_package.__path__), key=lambda m: m.name):
        if info.name.startswith("_"):
            continue
        module_name = f"{_package.__name__}.{info.name}"
        spec = getattr(importlib.import_module(module_name), "BACKEND", None)
        if spec is None:
            continue
        if not isinstance(spec, BackendSpec):
            raise TypeError(f"{module_name}.BACKEND is not a BackendSpec")
        if spec.name in found:
            raise TypeError(f"backend {spec.name!r} is declared by {found[spec.name].module} and {module_name}")
        found[spec.name] = BackendSpec(**{**spec.__dict__, "module": module_name})
    return found


def specs() -> tuple[BackendSpec, ...]:
    """Every declared backend, by name."""
    return tuple(spec for _, spec in sorted(_discovered().items()))


def names() -> tuple[str, ...]:
    """The names an experiment file may give as ``backend``, sorted."""
    return tuple(sorted(_discovered()))


def get(name: str) -> BackendSpec:
    """The backend called ``name``; `KeyError` naming the known ones otherwise."""
    try:
        return _discovered()[name]
    except KeyError:
        raise KeyError(f"unknown backend {name!r}; known: {', '.join(names())}") from None


def takes_raw_prompts(name: str) -> bool:
    """Whether the backend called ``name`` scores raw-text continuations (`BackendSpec.raw_prompts`;
    False for a name no module declares, which then gets chat messages)."""
    spec = _discovered().get(name)
    return spec is not None and spec.raw_prompts


def is_in_process(name: str) -> bool:
    """Whether the backend called ``name`` runs its model in this process (False for a name no
    module declares, such as a test's stand-in endpoint)."""
    spec = _discovered().get(name)
    return spec is not None and spec.in_process
