"""docs/importers.md, generated from the format registry and each importer's docstring.

The column mappings live once, in the importer modules' docstrings; this module lays them out as
the user document, and a test checks that the committed docs/importers.md is what it produces.
Regenerate with ``python -m nepotism.importers._docs > docs/importers.md``.
"""

from __future__ import annotations

import importlib
import inspect

from nepotism.importers import formats

__all__ = ["markdown"]

_INTRO = """\
# Importers: judgments from the field

`nepotism import SOURCE... --format NAME --out TABLE` turns the files other harnesses write into
nepotism's recorded tables (see the table formats in `nepotism.tables`). `nepotism import --list`
prints this list. This page is generated from the importers' own documentation
(`python -m nepotism.importers._docs > docs/importers.md`; a test keeps it current).

What every format shares:

- **Validation.** Every table is written to a temporary file, read back through the same
  validation as any recorded table, and only then moved into place: nothing is written when
  anything fails. A malformed upstream file is an error naming the file, the line (for a file that
  is one JSON array, the record: "record 3") and the field, with exit status 2.
- **Failures are rows.** A judgment the judge gave but no verdict could be read from is kept with
  an empty verdict or score, `status` = `unparsed` and a `reason`; a call that failed is
  `status` = `failed`. Never a tie, never a zero.
- **Provenance.** Every row carries `source_file` and `source_line` (or `source_record`), so any
  number can be traced to the upstream line it came from.
- **Several files, one table.** Files of one format are merged; a judgment repeated exactly (the
  same record in two files, as arena-bench's `gpt-4_single.jsonl` repeats `gpt-3.5-turbo.jsonl`)
  is kept once and counted (`repeats_dropped`); the same key with a different value is an error
  naming both places.
- **Names.** Model and judge names are kept as the source spells them; `--canonical` writes
  registry ids instead. `nepotism metrics` resolves names through the model registry.
- **Companions.** A format that also yields reference tables (human votes, the correct answer)
  writes them with `--reference-out FILE`, repeated for each in the order listed here, or named
  (`--reference-out correctness-ref=FILE`); texts (prompt and answers) go to `--texts-out`.

Example, the arena-bench v1 files of `../shared/data` (GPT-4 grading 16 generators):

```
nepotism import ../shared/data/arena_bench_v1/model_judgment/*.jsonl.gz --format fastchat-single --out arena_bench.csv
nepotism metrics arena_bench.csv
```
"""


def markdown() -> str:
    """The whole of docs/importers.md."""
    parts = [_INTRO]
    for spec in formats().values():
        module = importlib.import_module(spec.read.__module__)
        doc = inspect.cleandoc(module.__doc__ or "")
        options = ", ".join(f"`--{o}`" for o in spec.options) or "none"
        parts.append(
            f"\n## `{spec.name}`\n\n{spec.summary}.\n\n"
            f"- tables: {', '.join(f'`{t}`' for t in spec.tables)} (the first one it yields is the main table)\n"
            f"- options: {options}\n- upstream: {spec.upstream}\n\n"
            f"```text\n{doc}\n```\n"
        )
    return "".join(parts)


if __name__ == "__main__":
    print(markdown(), end="")
