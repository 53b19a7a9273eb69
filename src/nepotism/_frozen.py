"""Building a frozen dataclass quickly on a hot path, still validated by its own ``__post_init__``.

The generated ``__init__`` of a frozen dataclass sets each field through ``object.__setattr__``;
for records built hundreds of thousands of times (a cached rerun) that dominates. `builder`
returns a function that fills the instance's ``__dict__`` at once and then runs
``__post_init__``, but only while the class's fields are exactly the names the caller expects and
it has no ``__slots__``; otherwise it falls back to the normal constructor. Nothing else here.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import fields
from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:
    from _typeshed import DataclassInstance

__all__ = ["builder"]

T = TypeVar("T", bound="DataclassInstance")


def builder(cls: type[T], field_names: Sequence[str]) -> Callable[[dict[str, Any]], T]:
    """A constructor taking every field in a dict (keys exactly ``field_names``)."""
    if tuple(f.name for f in fields(cls)) != tuple(field_names) or hasattr(cls, "__slots__"):
        return lambda values: cls(**values)
    new, set_ = object.__new__, object.__setattr__
    post_init = getattr(cls, "__post_init__", None)

    def build(values: dict[str, Any]) -> T:
        obj = new(cls)
        set_(obj, "__dict__", values)
        if post_init is not None:
            post_init(obj)
        return obj

    return build
