"""Optional extras: which are installed, and one clear error when a command needs a missing one.

A command that needs an extra checks it before doing any work (`require`), so a user without it
gets one line naming the extra and the install command, exit status 2, and nothing written —
never a traceback or a half-done run. Modules are located with ``importlib.util.find_spec``,
without importing them (importing torch alone takes seconds). What each extra installs is
pinned in pyproject.toml; this module lists only the top-level modules that prove it is there.
"""

from __future__ import annotations

import importlib.util

from nepotism.errors import InputError

__all__ = ["EXTRAS", "MissingExtra", "missing", "require"]

#: extra -> top-level modules it provides (pyproject.toml [project.optional-dependencies]).
EXTRAS: dict[str, tuple[str, ...]] = {
    "local": ("llama_cpp",),  # the packaged model files are checked by backends.local_models
    "train": ("torch", "transformers", "trl", "peft", "datasets"),
    "annotate": ("starlette", "uvicorn"),
    "mitigations": ("wn",),
    "litellm": ("litellm",),
    "inspect": ("inspect_ai",),
}


class MissingExtra(InputError):
    """A command needs an optional extra that is not installed."""


def missing(extra: str) -> list[str]:
    """The modules of ``extra`` that cannot be found (empty when it is installed)."""
    if extra not in EXTRAS:
        raise ValueError(f"unknown extra {extra!r}; known: {', '.join(EXTRAS)}")
    return [module for module in EXTRAS[extra] if importlib.util.find_spec(module) is None]


def require(extra: str, *, purpose: str) -> None:
    """Raise `MissingExtra` (one line: what needs it, what is missing, the install command)."""
    absent = missing(extra)
    if absent:
        raise MissingExtra(
            f"{purpose} needs the '{extra}' extra, which is not installed (missing: "
            f"{', '.join(absent)}): pip install 'nepotism[{extra}]'"
        )
