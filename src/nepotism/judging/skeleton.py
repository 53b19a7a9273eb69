"""Render many judge prompts of the same shape fast: one Jinja2 render per shape, then substitution.

Most prompts of a run differ only in free texts (the request's messages, the candidates' answers,
the reference answer, the rubric items' wording). `Skeleton.from_rendered` takes the output of
rendering a template once with every free text replaced by a numbered sentinel (a private-use
character pair around the text's index), and `Skeleton.fill` puts the real texts back by plain
list joining, so a text is never scanned or escaped. Because `templates.render_text` strips the
rendered prompt, a filled skeleton is stripped again only when a substituted text reaches either
end; the result is the same string the full render gives.

What decides a shape (and therefore whether a skeleton can be reused) is the caller's business
(`nepotism.judging.render`); so is checking a new skeleton against one full render before trusting
it. This module knows no template.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

__all__ = ["Skeleton", "sentinel"]

_OPEN, _CLOSE, _PAD = "\ue000", "\ue001", "\ue002"
_SENTINEL = re.compile(f"{_OPEN}(\\d+){_PAD}*{_CLOSE}")


def sentinel(index: int, variant: int = 0) -> str:
    """The placeholder standing for free text number ``index`` while a skeleton is rendered.

    Variant 1 is longer (padded by a length that depends on the index): a template that looks at
    a text instead of only printing it renders the two variants differently, which the caller
    can detect by comparing the two skeletons."""
    pad = _PAD * (7 + 3 * index) if variant else ""
    return f"{_OPEN}{index}{pad}{_CLOSE}"


class Skeleton:
    """A rendered prompt with holes: literal pieces and the text index that fills each hole."""

    __slots__ = ("_holes", "_parts", "slots")

    def __init__(self, parts: Sequence[str | None], holes: Sequence[tuple[int, int]]) -> None:
        #: the literal pieces, a hole's place held by "" until `fill` puts its text there
        self._parts: list[str] = ["" if p is None else p for p in parts]
        self._holes = tuple(holes)
        #: the text indices the skeleton uses (a text may fill several holes)
        self.slots = frozenset(i for _, i in self._holes)

    @classmethod
    def from_rendered(cls, text: str) -> Skeleton:
        """Split a prompt rendered with `sentinel` placeholders into pieces and holes."""
        parts: list[str | None] = []
        holes: list[tuple[int, int]] = []
        pos = 0
        for match in _SENTINEL.finditer(text):
            parts.append(text[pos : match.start()])
            holes.append((len(parts), int(match.group(1))))
            parts.append(None)
            pos = match.end()
        parts.append(text[pos:])
        if any(_OPEN in p or _CLOSE in p or _PAD in p for p in parts if p is not None):
            raise ValueError("a sentinel character is left in the rendered skeleton")
        return cls(parts, holes)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Skeleton):
            return NotImplemented
        return self._parts == other._parts and self._holes == other._holes

    __hash__ = None  # type: ignore[assignment]

    def fill(self, texts: Sequence[str]) -> str:
        """The prompt with hole ``i`` replaced by ``texts[i]`` (stripped like a full render)."""
        parts = self._parts.copy()
        for at, index in self._holes:
            parts[at] = texts[index]
        out = "".join(parts)
        if out[:1].isspace() or out[-2:-1].isspace():
            out = out.strip() + "\n"
        return out
