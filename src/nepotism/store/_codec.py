"""Turning records into table rows and back (internal to the store).

Column orders here match the ``INSERT`` and ``SELECT`` statements in `nepotism.store.database`.
JSON columns are compact UTF-8 JSON with sorted keys; dataclasses nested in metadata become dicts.
`dumps` writes exactly what ``json.dumps(value, default=..., sort_keys=True, separators=(",",
":"), ensure_ascii=False)`` writes, through one encoder made once (``json.dumps`` with options
builds a new encoder object for every value: a third of the cost of encoding a small column, and
a stored call or judgment has four or five JSON columns).

orjson writes a dict column when it provably writes those same bytes (`dumps`): it spells
every float as Python's ``repr`` does except those with 1e-10 <= |x| < 1e-4 (``1e-7`` for
``1e-07``, ``0.00001`` for ``1e-05``), which are re-spelled; it writes NaN and infinities as
``null`` and writes some types the standard library refuses (enums, UUIDs), so the bytes are
decoded again and must give back a value equal to the one stored, or the standard library
writes the column. A stored label answer (20 top log-probabilities, 40 floats): 27 -> 13 µs on
the store writer's thread, holding the interpreter.
"""

from __future__ import annotations

import json
import json.encoder
import re
from collections.abc import Callable, Iterable
from dataclasses import asdict, is_dataclass
from json.encoder import encode_basestring
from datetime import UTC, datetime
from typing import Any

import orjson

from nepotism.records import Instance, Judgment, Message, Reference, Response, RubricItem


def now() -> str:
    return datetime.now(UTC).isoformat(timespec="microseconds")


def _default(value: Any) -> Any:
    if is_dataclass(value) and not isinstance(value, type):
        return asdict(value)
    if isinstance(value, (set, frozenset)):
        return sorted(value, key=str)
    if hasattr(value, "tolist"):  # numpy arrays and scalars (a scalar's tolist is its value)
        return value.tolist()
    if hasattr(value, "item"):
        return value.item()
    raise TypeError(f"cannot store a value of type {type(value).__name__} as JSON")


_ENCODER = json.JSONEncoder(default=_default, sort_keys=True, separators=(",", ":"), ensure_ascii=False, check_circular=False)
# the C encoder that ``_ENCODER.encode`` would build for every value, built once (None without
# CPython's _json; json.encoder does not declare it, so the type stubs leave it out)
_c_make_encoder: Callable[..., Callable[[Any, int], Iterable[str]]] | None = vars(json.encoder).get("c_make_encoder")
_ITERENCODE = (
    None if _c_make_encoder is None else _c_make_encoder(None, _default, encode_basestring, None, ":", ",", True, False, True)
)


#: dataclasses, dates and subclasses of str/int/dict/list go to the standard library (orjson
#: would write some of them otherwise than ``_default`` asks)
_ORJSON_OPTIONS = (
    orjson.OPT_SORT_KEYS | orjson.OPT_PASSTHROUGH_DATACLASS | orjson.OPT_PASSTHROUGH_DATETIME | orjson.OPT_PASSTHROUGH_SUBCLASS
)
#: the floats orjson spells otherwise than ``repr``: 1e-10 <= |x| < 1e-4 (``0.0000…`` for an
#: exponent of -5, a one-digit exponent ``e-6`` … ``e-9`` below), where a value stands in compact
#: JSON: after ``:``, ``,`` or ``[`` and before ``,``, ``]`` or ``}``
_ORJSON_ONLY_FLOAT = re.compile(rb"(?<=[:,\[])-?(?:0\.0000[0-9]+|[0-9](?:\.[0-9]+)?e-[1-9])(?=[,\]}])")


def _python_float(match: re.Match[bytes]) -> bytes:
    return repr(float(match.group())).encode()


def _orjson_dumps(value: Any) -> str | None:
    """``value`` as `dumps` writes it, by orjson, or None where that is not proven the same."""
    try:
        out = orjson.dumps(value, option=_ORJSON_OPTIONS)
    except TypeError:  # (orjson.JSONEncodeError) a set, numpy, a big integer, a lone surrogate, ...
        return None
    if b"e-" in out or b"0.0000" in out:
        out = _ORJSON_ONLY_FLOAT.sub(_python_float, out)
    # NaN or an infinity (written null), an enum or a UUID (which ``_default`` refuses), or a
    # re-spelling that landed inside a string all decode to another value
    if orjson.loads(out) != value:
        return None
    return out.decode()


def dumps(value: Any) -> str | None:
    """``value`` as compact JSON with sorted keys and unescaped non-ASCII text (None stays None).

    Byte for byte ``json.dumps(value, default=_default, sort_keys=True, separators=(",", ":"),
    ensure_ascii=False)``; NaN and infinities are written ``NaN``/``Infinity`` as there. A dict
    is written by orjson when it writes those bytes (see the module docstring), else by
    the standard library's encoder. No check for circular containers (what is stored comes from
    JSON or records): one would raise RecursionError instead of ValueError.
    """
    if value is None:
        return None
    kind = type(value)
    if kind is str:
        return encode_basestring(value)
    if kind is dict:  # (a short list of names is written faster by the standard library)
        text = _orjson_dumps(value)
        if text is not None:
            return text
    if _ITERENCODE is None:  # pragma: no cover
        return _ENCODER.encode(value)
    return "".join(_ITERENCODE(value, 0))


def loads(text: str | None) -> Any:
    return None if text is None else json.loads(text)


def _bool(value: int | None) -> bool | None:
    return None if value is None else bool(value)


INSTANCE_COLUMNS = "id, prompt, reference_answer, rubric, category, metadata"


def instance_row(inst: Instance) -> tuple[Any, ...]:
    prompt = inst.prompt if isinstance(inst.prompt, str) else [asdict(m) for m in inst.prompt]
    return (
        inst.id,
        dumps(prompt),
        inst.reference_answer,
        dumps([asdict(item) for item in inst.rubric]),
        inst.category,
        dumps(dict(inst.metadata)),
    )


def instance_from_row(row: tuple[Any, ...]) -> Instance:
    ident, prompt, reference, rubric, category, metadata = row
    prompt = json.loads(prompt)
    if not isinstance(prompt, str):
        prompt = tuple(Message(m["role"], m["content"]) for m in prompt)
    return Instance(
        id=ident,
        prompt=prompt,
        reference_answer=reference,
        rubric=tuple(RubricItem(**item) for item in json.loads(rubric)),
        category=category,
        metadata=json.loads(metadata),
    )


RESPONSE_COLUMNS = "id, instance_id, generator, text, metadata"


def response_row(resp: Response) -> tuple[Any, ...]:
    return (resp.id, resp.instance_id, resp.generator, resp.text, dumps(dict(resp.metadata)))


def response_from_row(row: tuple[Any, ...]) -> Response:
    _, instance_id, generator, text, metadata = row
    return Response(instance_id, generator, text, json.loads(metadata))


JUDGMENT_COLUMNS = (
    "id, instance_id, judge, protocol, candidates, status, verdict, score, raw_output, "
    "label_probs, rubric_id, template_id, condition, replicate, usage, latency_s, "
    "reason, label_mass, label_logprobs, label_top_k, warnings"
)


def judgment_row(j: Judgment, ident: str | None = None) -> tuple[Any, ...]:
    """``j``'s row; ``ident`` is ``j.id`` when the caller already computed it (a hash)."""
    return (
        j.id if ident is None else ident,
        j.instance_id,
        j.judge,
        j.protocol,
        dumps(list(j.candidates)),
        j.status,
        j.verdict,
        None if j.score is None else float(j.score),
        j.raw_output,
        dumps(None if j.label_probs is None else dict(j.label_probs)),
        j.rubric_id,
        j.template_id,
        j.condition,
        int(j.replicate),
        dumps(None if j.usage is None else dict(j.usage)),
        j.latency_s,
        j.reason,
        None if j.label_mass is None else float(j.label_mass),
        dumps(None if j.label_logprobs is None else dict(j.label_logprobs)),
        dumps(None if j.label_top_k is None else dict(j.label_top_k)),
        dumps(list(j.warnings)) if j.warnings else None,
    )


def judgment_from_row(row: tuple[Any, ...]) -> Judgment:
    (
        _,
        instance_id,
        judge,
        protocol,
        candidates,
        status,
        verdict,
        score,
        raw,
        probs,
        rubric_id,
        template_id,
        condition,
        replicate,
        usage,
        latency,
        reason,
        mass,
        logprobs,
        top_k,
        warnings,
    ) = row
    return Judgment(
        instance_id=instance_id,
        judge=judge,
        protocol=protocol,
        candidates=tuple(json.loads(candidates)),
        status=status,
        verdict=verdict,
        score=score,
        raw_output=raw,
        label_probs=loads(probs),
        rubric_id=rubric_id,
        template_id=template_id,
        condition=condition,
        replicate=replicate,
        usage=loads(usage),
        latency_s=latency,
        reason=reason,
        label_mass=mass,
        label_logprobs=loads(logprobs),
        label_top_k=loads(top_k),
        warnings=tuple(loads(warnings) or ()),
    )


REFERENCE_COLUMNS = "id, instance_id, kind, models, winner, correct, score, rubric_id, met, source"


def reference_row(ref: Reference) -> tuple[Any, ...]:
    return (
        ref.id,
        ref.instance_id,
        ref.kind,
        dumps(list(ref.models)),
        ref.winner,
        None if ref.correct is None else int(bool(ref.correct)),
        None if ref.score is None else float(ref.score),
        ref.rubric_id,
        None if ref.met is None else int(bool(ref.met)),
        ref.source,
    )


def reference_from_row(row: tuple[Any, ...]) -> Reference:
    _, instance_id, kind, models, winner, correct, score, rubric_id, met, source = row
    return Reference(
        instance_id=instance_id,
        kind=kind,
        models=tuple(json.loads(models)),
        winner=winner,
        correct=_bool(correct),
        score=score,
        rubric_id=rubric_id,
        met=_bool(met),
        source=source,
    )
