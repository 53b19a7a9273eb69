"""A run's output folder describes itself: ``run.json`` lists its tables, references and models.

``nepotism run`` writes the judgment tables and graded references into the experiment's output
folder; `write_manifest` adds copies of the experiment's registry files (``models/``) and
``run.json``, so that ``nepotism metrics RUN_DIR`` and ``nepotism report RUN_DIR`` need no other
flag. ``results`` lists files of result records the tables cannot give back (``nepotism
mitigate``'s ``mitigations.json`` under ``mitigation-effects``), which ``nepotism report RUN_DIR``
adds to its audit. `read_manifest` turns a folder back into paths, checking that each file is there.
`check_output_dir` says, before a run pays for a call, whether its output folder can be written.
Every file goes in by an atomic rename (`nepotism._files`): a symbolic link at a file's name is
replaced, never written through. What a manifest leaves out: the store (it can be anywhere and large) and the experiment file itself
(its relative paths would not resolve from the folder).
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from nepotism._files import atomic_write_bytes, parse_json_line
from nepotism.errors import InputError

__all__ = ["MANIFEST", "RunFolder", "check_output_dir", "is_run_folder", "read_manifest", "write_manifest"]

MANIFEST = "run.json"
_VERSION = 1


@dataclass(frozen=True)
class RunFolder:
    """The files of a run's output folder: judgment tables by kind, references, registry files."""

    path: Path
    tables: Mapping[str, Path]
    references: Mapping[str, Path]
    models: tuple[Path, ...]
    experiment: str
    results: Mapping[str, Path] = field(default_factory=dict)  # result-record files by kind


def write_manifest(
    out_dir: str | Path,
    *,
    experiment: str,
    run_id: str,
    tables: Mapping[str, str],
    references: Mapping[str, str],
    registry_files: Sequence[str],
    results: Mapping[str, str] | None = None,
) -> Path:
    """Copy the registry files into ``out_dir/models/`` and write ``run.json`` (atomically); every
    file listed (tables, references, results) must be inside ``out_dir``."""
    out = Path(out_dir)
    models = []
    for i, source in enumerate(registry_files):
        target = out / "models" / f"{i:02d}-{Path(source).name}"
        # (a copy by rename: a link left at the name is replaced, its target never written)
        atomic_write_bytes(target, Path(source).read_bytes())
        models.append(target.relative_to(out).as_posix())

    def relative(files: Mapping[str, str]) -> dict[str, str]:
        return {kind: Path(p).resolve().relative_to(out.resolve()).as_posix() for kind, p in sorted(files.items())}

    document = {
        "schema_version": _VERSION,
        "experiment": experiment,
        "run_id": run_id,
        "tables": relative(tables),
        "references": relative(references),
        "models": models,
    }
    if results:
        document["results"] = relative(results)
    return atomic_write_bytes(out / MANIFEST, (json.dumps(document, indent=2, sort_keys=True) + "\n").encode())


def check_output_dir(out_dir: str | Path) -> None:
    """An `InputError` naming ``out_dir`` unless a run can write its outputs there: a symbolic
    link to nothing (a dangling link), a file, a folder (or the first existing folder above it)
    where a file cannot be created. Nothing is left behind: a probe file is made and removed in the
    folder, or in the first existing folder above a missing one (where the run will create it), so
    that a read-only mount or a missing permission is met before any call is paid for, not at the
    exports, and a run refused later (bad input) leaves no empty folder."""
    out = Path(out_dir)
    if out.is_symlink() and not out.exists():
        raise InputError(
            f"the output folder is a symbolic link to {os.readlink(out)}, which does not exist; "
            "create that folder or point output.dir elsewhere",
            path=str(out),
            field="output.dir",
        )
    if out.exists() and not out.is_dir():
        raise InputError("the output folder's name is taken by a file", path=str(out), field="output.dir")
    existing = out.absolute()
    while not existing.exists() and existing != existing.parent:
        existing = existing.parent
    if not existing.is_dir():
        raise InputError(f"the output folder cannot be created: {existing} is a file", path=str(out), field="output.dir")
    try:
        fd, probe = tempfile.mkstemp(prefix=".nepotism-write-check.", dir=existing)
        os.close(fd)
        os.unlink(probe)
    except OSError as err:
        raise InputError(
            f"the output folder cannot be written ({err.strerror or err})", path=str(out), field="output.dir"
        ) from None


def is_run_folder(path: str | Path) -> bool:
    return Path(path).is_dir() and (Path(path) / MANIFEST).is_file()


def read_manifest(path: str | Path) -> RunFolder:
    """The folder's files; an `InputError` names the folder and what is wrong."""
    folder = Path(path)
    manifest = folder / MANIFEST
    if not manifest.is_file():
        raise InputError(
            f"a folder given as input must be a run's output folder with {MANIFEST}; pass the table files instead",
            path=str(folder),
        )
    try:
        document = parse_json_line(manifest.read_text(encoding="utf-8-sig"), str(manifest), None)
    except (OSError, UnicodeDecodeError) as err:
        raise InputError(f"not readable ({err})", path=str(manifest)) from None
    if not isinstance(document, dict) or document.get("schema_version") != _VERSION:
        raise InputError(
            f"unknown manifest version (this nepotism reads version {_VERSION})", path=str(manifest), field="schema_version"
        )

    def files(field: str) -> dict[str, Path]:
        entries = document.get(field, {})
        if not isinstance(entries, dict):
            raise InputError("expected an object of kind → file", path=str(manifest), field=field)
        out = {}
        for kind, name in entries.items():
            target = folder / str(name)
            if not target.is_file():
                raise InputError(f"{MANIFEST} lists {name}, which is missing", path=str(manifest), field=f"{field}.{kind}")
            out[str(kind)] = target
        return out

    models = document.get("models", [])
    if not isinstance(models, list) or not all((folder / str(m)).is_file() for m in models):
        raise InputError("a listed registry file is missing", path=str(manifest), field="models")
    return RunFolder(
        path=folder,
        tables=files("tables"),
        references=files("references"),
        models=tuple(folder / str(m) for m in models),
        experiment=str(document.get("experiment", "")),
        results=files("results"),
    )
