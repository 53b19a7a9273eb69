"""Errors a user can act on.

`InputError` names the file, the line (1-based, counting the header as line 1 for CSV) and the field
of a malformed input, so that the CLI can print one precise sentence and exit with status 2. This
module deliberately holds no formatting for the terminal: the CLI decides how to show the message.
"""

from __future__ import annotations

__all__ = ["InputError", "NepotismError"]


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
        return f"{prefix}: {self.message}" if prefix else self.message
