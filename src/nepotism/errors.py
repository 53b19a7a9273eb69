"""Errors a user can act on.

`InputError` names the file, the line (1-based, counting the header as line 1 for CSV) and the field
of a malformed input, so that the CLI can print one precise sentence and exit with status 2. A
message quotes what the input held, so its text (`str`) shows every control character — a NUL, a
newline, an escape sequence, a bidirectional override, half a surrogate pair — as a Python escape
(``\\x00``, ``\\n``, ``\\u202e``): one line, readable, that cannot drive a terminal (`printable`).
Otherwise this module holds no formatting for the terminal: the CLI decides how to show the message.
"""

from __future__ import annotations

import re

__all__ = ["InputError", "NepotismError", "ValidationError", "printable"]

#: C0 and C1 controls, DEL, the line and paragraph separators, the bidirectional embeddings,
#: overrides and isolates, and lone surrogates (not text: they cannot even be written as UTF-8).
_UNPRINTABLE = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069\ud800-\udfff]")


def printable(text: str) -> str:
    """``text`` with every control character (`_UNPRINTABLE`) written as its Python escape."""
    return _UNPRINTABLE.sub(lambda found: found.group().encode("unicode_escape", "backslashreplace").decode("ascii"), text)


class NepotismError(Exception):
    """Base class of every error nepotism raises on purpose."""


class InputError(NepotismError, ValueError):
    """A user-supplied file or value is malformed.

    ``path`` is the file (or a description such as ``"<registry>"``), ``line`` the 1-based line
    when known, ``field`` the column or key at fault when known. For a file that is one JSON array,
    where a line says little, ``record`` is the 1-based position of the object in the array and
    the message says "record N" instead of "line N".
    """

    def __init__(
        self,
        message: str,
        *,
        path: str | None = None,
        line: int | None = None,
        field: str | None = None,
        record: int | None = None,
    ) -> None:
        self.message = message
        self.path = path
        self.line = line
        self.field = field
        self.record = record
        super().__init__(str(self))

    def __str__(self) -> str:
        where = []
        if self.path is not None:
            where.append(str(self.path))
        if self.line is not None:
            where.append(f"line {self.line}")
        if self.record is not None:
            where.append(f"record {self.record}")
        if self.field is not None:
            where.append(f"field '{self.field}'")
        prefix = ", ".join(where)
        return printable(f"{prefix}: {self.message}" if prefix else self.message)


class ValidationError(InputError):
    """Judgments or references that break the table formats or name a model the registry lacks.

    The same checks run on a file and on a DataFrame (`nepotism.tables.validate`): an error in a
    file names the file, line and field; an error in a frame names the ``row`` (its index label)
    and the column (``field``).
    """

    def __init__(
        self,
        message: str,
        *,
        path: str | None = None,
        line: int | None = None,
        field: str | None = None,
        record: int | None = None,
        row: object | None = None,
    ) -> None:
        self.row = row
        super().__init__(message, path=path, line=line, field=field, record=record)

    @property
    def column(self) -> str | None:
        return self.field

    def __str__(self) -> str:
        if self.row is None or self.path is not None:
            return super().__str__()
        where = [f"row {self.row!r}" if not isinstance(self.row, int) else f"row {self.row}"]
        if self.field is not None:
            where.append(f"column '{self.field}'")
        return printable(f"{', '.join(where)}: {self.message}")
