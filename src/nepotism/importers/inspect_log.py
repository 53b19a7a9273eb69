"""Import Inspect AI eval logs: every model-graded score becomes a pointwise judgment.

Upstream: UKGovernmentBEIS/inspect_ai, read through its own log API (``inspect_ai.log``:
``read_eval_log`` for the header, ``read_eval_log_samples`` for the samples one at a time, so a large
log is never held whole). Both log formats are read: ``.eval`` (a zip, the default since 0.3.46)
and ``.json``. Needs the ``inspect`` extra (``pip install 'nepotism[inspect]'``, inspect_ai pinned).
``nepotism.audit`` and ``nepotism metrics`` / ``report`` take a log path directly as well.

One row per sample, epoch and model-graded score:

==================  ================================================================================
Inspect             becomes
==================  ================================================================================
``eval.task``,      ``instance_id`` = ``<task>/<sample id>`` (``--benchmark`` replaces the task name), so
``sample.id``       the logs of several evaluated models of one task share their instances
``eval.model``      ``model``: the evaluated model, as Inspect names it (``openai/gpt-4o``; the model
                    registry reads the part after the last ``/`` when the whole name is unknown)
the grader          ``judge``: the model the scorer called, from the sample's recorded model events
                    inside that scorer's span (``span_begin`` of type ``scorer``). A log without events
                    falls back to the scorer's ``model`` argument (``eval.scorers``), and for
                    ``model_graded_qa`` / ``model_graded_fact`` without one to the model bound to the
                    ``grader`` role, else the evaluated model itself (Inspect's own default: then the
                    model grades itself)
the scorer          ``condition``: the scorer's name (``model_graded_qa``; two scorers of one name whose
                    arguments differ beyond the grader keep Inspect's numbered names,
                    ``model_graded_qa1``); a scorer returning a dict gives one condition per key,
                    ``<scorer>/<key>``
``score.value``     ``score``: ``C`` (correct) 1, ``P`` (partial) 0.5, ``I`` (incorrect) 0, ``N`` (no answer) 0,
                    as Inspect's ``value_to_float`` counts them; ``yes``/``true`` 1, ``no``/``false`` 0;
                    a number or a numeric string as it is; a boolean 1 / 0
unscored            a NaN value (``Score.unscored``) is a row with an empty score: ``status`` unparsed
                    and ``reason`` = the score's own reason (``grader_failed`` ...; ``unscored`` when it
                    gives none), or failed for ``scoring_failed``. Never 0
a value of no kind  any other text: unparsed, ``reason`` = ``unknown_value`` (the text is counted)
``sample.epoch``    ``replicate`` = epoch - 1 (epochs are repeated gradings of one answer)
==================  ================================================================================

Left out, and counted: scores of scorers that called no model (``match``, ``includes``...: they are
not judgments); scores a panel of graders gave together (``model=[...]`` with a reducer: no single
model's verdict; give each grader its own scorer to import each one); list values. A sample that
ended in an error keeps whatever scores it has (counted as ``samples_with_error``). ``--texts-out``
writes the sample's input and the evaluated model's final answer. Not read: the grader's
explanation, token usage, metadata, the reduced (epoch-averaged) results.
"""

from __future__ import annotations

import json
import math
from collections import Counter, defaultdict
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pandas as pd

from nepotism.errors import InputError
from nepotism.importers._common import Format, Imported, RecordNo, fail, provenance, status_counts

__all__ = ["FORMATS", "import_inspect_log", "is_inspect_log"]

#: Inspect's letter grades (``inspect_ai.scorer``: CORRECT, PARTIAL, INCORRECT, NOANSWER) and the
#: boolean words its ``value_to_float`` reads, as numbers.
_WORDS = {"c": 1.0, "p": 0.5, "i": 0.0, "n": 0.0, "yes": 1.0, "true": 1.0, "no": 0.0, "false": 0.0}
#: Scorers of inspect_ai that grade with a model and default to the ``grader`` role, then to the
#: evaluated model, when given no ``model``.
_MODEL_GRADED = ("model_graded_qa", "model_graded_fact")
_FAILED = ("scoring_failed",)


def is_inspect_log(path: str | Path) -> bool:
    """Whether ``path`` looks like an Inspect AI log: a ``.eval`` file, or a ``.json`` file whose
    first bytes are an object starting with Inspect's ``"version"`` and ``"status"`` keys."""
    path = Path(path)
    name = path.name.lower()
    if name.endswith(".eval"):
        return path.is_file()
    if not name.endswith(".json") or not path.is_file():
        return False
    with open(path, "rb") as handle:
        head = handle.read(256).decode("utf-8", "replace").lstrip("\ufeff \t\r\n")
    return head.startswith("{") and '"version"' in head and '"status"' in head


def _unreadable(path: Path, err: BaseException) -> InputError:
    detail = " ".join(str(err).split())[:200] or type(err).__name__
    return InputError(f"not readable as an Inspect AI log (.eval or .json): {detail}", path=str(path))


def _model_name(value: Any) -> str | None:
    """The model an ``eval.scorers`` option names: a string, or a serialised Model (``{"model": ...}``)."""
    if isinstance(value, str) and value.strip():
        return value.strip()
    if isinstance(value, dict) and isinstance(value.get("model"), str):
        return value["model"].strip() or None
    return None


class _Scorers:
    """The scorers of a log's header: each sample-score key (Inspect's unique name, e.g.
    ``model_graded_qa1``) → its registered name, its arguments and the condition it is imported as."""

    def __init__(self, header: Any) -> None:
        self.base: dict[str, str] = {}
        self.options: dict[str, dict[str, Any]] = {}
        for scorer in header.eval.scorers or []:
            unique, count = scorer.name, 1
            while unique in self.base:  # inspect_ai.scorer._scorer.unique_scorer_name's rule
                unique, count = f"{scorer.name}{count}", count + 1
            self.base[unique] = scorer.name
            self.options[unique] = dict(scorer.options or {})
        shapes: dict[str, set[str]] = defaultdict(set)
        for unique, base in self.base.items():
            rest = {k: v for k, v in self.options[unique].items() if k != "model"}
            shapes[base].add(json.dumps(rest, sort_keys=True, default=str))
        self._ambiguous = {base for base, seen in shapes.items() if len(seen) > 1}
        roles = getattr(header.eval, "model_roles", None) or {}
        role = roles.get("grader")
        self.grader_role = getattr(role, "model", None)

    def name(self, key: str) -> str:
        """The registered name of a sample-score key (the key itself when the header lacks it)."""
        return self.base.get(key, key)

    def conditions(self, frame: pd.DataFrame) -> pd.Series:
        """Each row's condition: its scorer's registered name, or Inspect's numbered name where
        that name would join two scorers whose arguments differ beyond the grader, or two scorers
        that had the same grader grade the same answer."""
        base = frame["scorer"].map(self.name)
        twice = (
            frame.assign(_base=base)
            .groupby(["_base", "judge", "instance_id", "replicate", "part"], dropna=False)["scorer"]
            .nunique()
        )
        ambiguous = self._ambiguous | set(twice[twice > 1].index.get_level_values("_base"))
        name = base.where(~base.isin(ambiguous), frame["scorer"])
        return name + frame["part"].map(lambda p: "" if p is None else f"/{p}")

    def declared_graders(self, key: str, evaluated: str) -> set[str]:
        """The grader(s) a scorer's arguments name (a log without events); empty when none is known."""
        option = self.options.get(key, {}).get("model")
        if isinstance(option, list):
            return {n for n in map(_model_name, option) if n}
        name = _model_name(option)
        if name:
            return {name}
        if self.base.get(key) in _MODEL_GRADED:
            return {self.grader_role or evaluated}
        return set()


def _event_graders(events: list[Any]) -> dict[str, set[str]]:
    """Sample-score key → the models called inside that scorer's span (nested spans included)."""
    spans: dict[str, tuple[str | None, str | None, str]] = {}
    found: dict[str, set[str]] = defaultdict(set)
    for event in events:
        kind = getattr(event, "event", None)
        if kind == "span_begin":
            spans[event.id] = (event.parent_id, event.type, event.name)
        elif kind == "model":
            span = getattr(event, "span_id", None)
            while span is not None and span in spans:
                parent, span_type, name = spans[span]
                if span_type == "scorer":
                    found[name].add(event.model)
                    break
                span = parent
    return found


def _value(value: Any) -> tuple[float | None, str | None]:
    """(score, reason): a number for a grade, or None and why there is none."""
    if isinstance(value, bool):
        return float(value), None
    if isinstance(value, int | float):
        return (None, "unscored") if not math.isfinite(value) else (float(value), None)
    if isinstance(value, str):
        word = value.strip().lower()
        if word in _WORDS:
            return _WORDS[word], None
        try:
            number = float(word)
        except ValueError:
            return None, "unknown_value"
        return (number, None) if math.isfinite(number) else (None, "unknown_value")
    return None, "unknown_value"


def _read_header(path: Path) -> Any:
    from nepotism.extras import require

    require("inspect", purpose="reading an Inspect AI log")
    from inspect_ai.log import read_eval_log

    try:
        header = read_eval_log(str(path), header_only=True)
    except FileNotFoundError:
        raise InputError("no such file", path=str(path)) from None
    except Exception as err:  # inspect_ai raises ValueError, pydantic's errors, zipfile's
        raise _unreadable(path, err) from None
    if header.eval is None or not getattr(header.eval, "model", None):
        raise InputError("the log names no evaluated model (eval.model)", path=str(path))
    return header


def _samples(path: Path) -> Iterator[Any]:
    from inspect_ai.log import read_eval_log_samples

    try:
        yield from read_eval_log_samples(str(path), all_samples_required=False)
    except InputError:
        raise
    except Exception as err:
        raise _unreadable(path, err) from None


def import_inspect_log(path: str | Path, *, benchmark: str | None = None, **_: Any) -> Imported:
    """Import one Inspect AI log (``.eval`` or ``.json``; see the module docstring for the mapping)."""
    path = Path(path)
    header = _read_header(path)
    scorers = _Scorers(header)
    evaluated = str(header.eval.model).strip()
    task = (benchmark or str(header.eval.task)).strip()
    rows: list[dict[str, Any]] = []
    texts: list[dict[str, Any]] = []
    counts: Counter[str] = Counter()
    skipped: dict[str, set[str]] = defaultdict(set)
    unknown_values: Counter[str] = Counter()
    for number, sample in enumerate(_samples(path), start=1):
        position = RecordNo(number)
        counts["samples"] += 1
        if sample.id is None or str(sample.id).strip() == "":
            raise fail("a sample without an id", path, position, "id")
        instance = f"{task}/{sample.id}"
        epoch = int(sample.epoch or 1)
        counts["samples_with_error"] += sample.error is not None
        events = _event_graders(sample.events) if sample.events else None
        for key, score in (sample.scores or {}).items():
            counts["scores"] += 1
            graders = events.get(key, set()) if events is not None else scorers.declared_graders(key, evaluated)
            if not graders:
                skipped["not_model_graded"].add(key)
                counts["scores_not_model_graded"] += 1
                continue
            if len(graders) > 1:
                skipped["panel"].add(key)
                counts["panel_scores"] += 1
                continue
            if isinstance(score.value, list):
                counts["list_values"] += 1
                continue
            judge = next(iter(graders)).strip()
            values = score.value.items() if isinstance(score.value, dict) else [(None, score.value)]
            for part, value in values:
                result, reason = _value(value)
                if reason == "unscored" and getattr(score, "reason", None):
                    reason = str(score.reason)
                if reason == "unknown_value":
                    unknown_values[str(value)[:40]] += 1
                status = "parsed" if result is not None else ("failed" if reason in _FAILED else "unparsed")
                rows.append(
                    {
                        "instance_id": instance,
                        "judge": judge,
                        "model": evaluated,
                        "score": result,
                        "scorer": key,
                        "part": None if part is None else str(part),
                        "replicate": epoch - 1,
                        "status": status,
                        "reason": reason,
                        "sample_id": str(sample.id),
                        "epoch": epoch,
                        **provenance(path, position),
                    }
                )
        if sample.output is not None and sample.output.completion is not None:
            texts.append(
                {
                    "instance_id": instance,
                    "prompt": _input_text(sample.input),
                    "tests": None,
                    "model": evaluated,
                    "text": sample.output.completion,
                }
            )
    if not counts["samples"]:
        raise InputError("the log holds no samples (was it written with --no-log-samples?)", path=str(path))
    if not rows:
        raise InputError(
            f"no model-graded scores in the log (scorers: {', '.join(scorers.base) or 'none'}; "
            "a scorer that calls no model is not a judgment)",
            path=str(path),
        )
    frame = pd.DataFrame(rows)
    frame["score"] = frame["score"].astype(float)
    frame.insert(4, "condition", scorers.conditions(frame))
    frame = frame.drop(columns="part")
    out = {"samples": counts["samples"], "judgments": len(frame), **status_counts(frame)}
    out.update(
        {k: counts[k] for k in ("scores_not_model_graded", "panel_scores", "list_values", "samples_with_error") if counts[k]}
    )
    graders = frame.groupby("condition")["judge"].unique()
    notes = [f"{evaluated}: {condition} graded by {', '.join(sorted(judges))}" for condition, judges in graders.items()]
    if skipped["not_model_graded"]:
        notes.append(f"left out, no model called: {', '.join(sorted(skipped['not_model_graded']))}")
    if skipped["panel"]:
        notes.append(f"left out, graded by a panel (one score for several graders): {', '.join(sorted(skipped['panel']))}")
    if unknown_values:
        notes.append("unparsed, values that are no grade: " + ", ".join(f"{v!r} {n}" for v, n in unknown_values.most_common(5)))
    frame_texts = pd.DataFrame(texts).drop_duplicates(["instance_id", "model"]) if texts else None
    return Imported(tables={"pointwise": frame}, main="pointwise", texts=frame_texts, counts=out, notes=notes, source=str(path))


def _input_text(value: Any) -> str:
    """A sample's input as text: a string, or its chat messages' text joined."""
    if isinstance(value, str):
        return value
    return "\n\n".join(getattr(m, "text", str(m)) for m in value or [])


FORMATS = (
    Format(
        name="inspect-log",
        summary="Inspect AI eval logs (.eval, .json): every model-graded score, evaluated model and grader named",
        read=import_inspect_log,
        tables=("pointwise",),
        upstream="UKGovernmentBEIS/inspect_ai inspect_ai.log (read_eval_log, read_eval_log_samples: "
        "EvalSample.scores, span and model events)",
        options=("benchmark",),
    ),
)
