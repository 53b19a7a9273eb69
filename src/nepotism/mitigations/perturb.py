"""Apply one perturbation kind to the self-evaluation pairs of an experiment.

A *pair* is (judge, instance, own response, opponent response): the judge's own answer and the
competitor it was compared with. `perturb_pairs` returns, per pair, the two texts the judge will see
under the mitigation (either may be unchanged) or the reason the perturbation failed. Model calls
go through ``text_model(calls) -> [text or None]`` with ``calls`` a list of (model id, messages,
max_tokens), so the store's cache and the runner's limits apply and tests can inject a fake. Texts
are perturbed once per response (or per judge for judge paraphrase) and shared by every pair and
by the third-party control. Left out: perturbing pointwise or rubric candidates.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

from nepotism.mitigations.code_style import code_of, read_restyle, restyle_prompt, restyle_response, verify_equivalent
from nepotism.mitigations.rewrite import (
    ablation_prompt,
    cross_reason,
    cross_reason_prompt,
    judge_paraphrase_prompt,
    option_texts,
    paraphrase_prompt,
    read_reason,
    read_rewrite,
    rewrite_budget,
    split_label,
)
from nepotism.mitigations.spelling import misspell
from nepotism.mitigations.synonyms import Perturbation, apply_replacements, parse_choice, synonym_prompt, wordnet_choice
from nepotism.records import Instance, Message, Response

__all__ = ["Pair", "PairTexts", "TextModel", "perturb_pairs", "question_text"]

TextModel = Callable[[Sequence[tuple[str, tuple[Message, ...], int]]], Awaitable[list[str | None]]]


@dataclass(frozen=True)
class Pair:
    judge: str
    instance: Instance
    own: Response
    opponent: Response


@dataclass(frozen=True)
class PairTexts:
    own: str | None
    opponent: str | None
    reason: str | None = None
    detail: dict[str, Any] = field(default_factory=dict, compare=False)

    @property
    def ok(self) -> bool:
        return self.own is not None and self.opponent is not None


def question_text(instance: Instance) -> str:
    """The instance's prompt as plain text (user turns joined)."""
    if isinstance(instance.prompt, str):
        return instance.prompt
    return "\n".join(m.content for m in instance.prompt if m.role == "user")


_Key = TypeVar("_Key", bound=Hashable)
#: a text to rewrite: (model id, prompt, the text)
_Ask = tuple[str, tuple[Message, ...], str]


def _required(rewriter: str | None, kind: str) -> str:
    """The rewriter, which the ``kind`` perturbation asks (config requires one; a plan made in Python may not)."""
    if rewriter is None:
        raise ValueError(f"the {kind!r} perturbation asks a model to rewrite texts; give a rewriter")
    return rewriter


async def _rewrite_each(
    texts: Mapping[_Key, _Ask], text_model: TextModel, *, method: str, keep_label: bool
) -> dict[_Key, Perturbation]:
    keys = list(texts)
    outputs = await text_model([(texts[k][0], texts[k][1], rewrite_budget(texts[k][2])) for k in keys])
    return {k: read_rewrite(texts[k][2], out, method=method, keep_label=keep_label) for k, out in zip(keys, outputs)}


async def _synonyms(
    pairs: Sequence[Pair], params: Mapping[str, Any], text_model: TextModel, rewriter: str | None
) -> dict[str, Perturbation]:
    k = int(params.get("k", 2))
    unique = {p.own.id: p for p in pairs}
    out: dict[str, Perturbation] = {}
    if params.get("chooser", "wordnet") == "model":
        chooser = _required(rewriter, "synonym")
        asked = {
            rid: (chooser, synonym_prompt(question_text(p.instance), p.own.text, k=k), p.own.text) for rid, p in unique.items()
        }
        keys = list(asked)
        answers = await text_model([(asked[r][0], asked[r][1], 96) for r in keys])
        for rid, text in zip(keys, answers):
            p = unique[rid]
            choice = parse_choice(text)
            result = (
                apply_replacements(p.own.text, question_text(p.instance), choice, k=k, method="model")
                if choice is not None
                else Perturbation(None, False, reason="unreadable choice", method="model")
            )
            if not result.ok and params.get("fallback", False):
                fallback = apply_replacements(
                    p.own.text,
                    question_text(p.instance),
                    wordnet_choice(p.own.text, question_text(p.instance), k=k),
                    k=k,
                    method="wordnet-fallback",
                )
                result = fallback if fallback.ok else result
            out[rid] = result
        return out
    for rid, p in unique.items():
        q = question_text(p.instance)
        out[rid] = apply_replacements(p.own.text, q, wordnet_choice(p.own.text, q, k=k), k=k, method="wordnet")
    return out


async def _restyle(
    pairs: Sequence[Pair],
    sandbox_runner: Callable[..., Any] | None,
    params: Mapping[str, Any],
    text_model: TextModel,
    rewriter: str | None,
) -> dict[str, Perturbation]:
    out: dict[str, Perturbation] = {}
    unique = {p.own.id: p for p in pairs}
    with_tests = {rid: p for rid, p in unique.items() if (p.instance.metadata or {}).get("tests")}
    restyled: dict[str, Perturbation] = {}
    if params.get("restyle", "model") == "model":
        restyler = _required(rewriter, "code-restyle")
        keys = list(with_tests)
        replies = await text_model(
            [
                (restyler, restyle_prompt(code_of(with_tests[k].own.text)[0]), rewrite_budget(with_tests[k].own.text) * 2)
                for k in keys
            ]
        )
        restyled = {k: read_restyle(with_tests[k].own.text, reply) for k, reply in zip(keys, replies)}
    for p in unique.values():
        tests = (p.instance.metadata or {}).get("tests")
        if not tests:
            out[p.own.id] = Perturbation(None, False, reason="the instance has no tests", method="code-restyle")
            continue
        result = restyled.get(p.own.id) or restyle_response(p.own.text)
        if result.ok:
            same, detail = verify_equivalent(result.detail["original_code"], result.detail["code"], tests, runner=sandbox_runner)
            if not same:
                result = Perturbation(
                    None, False, reason="restyled code behaves differently on the tests", method="code-restyle", detail=detail
                )
        out[p.own.id] = result
    return out


async def perturb_pairs(
    kind: str,
    params: Mapping[str, Any],
    pairs: Sequence[Pair],
    *,
    text_model: TextModel,
    rewriter: str | None = None,
    sandbox_runner: Callable[..., Any] | None = None,
    seed: int = 0,
    callable_models: set[str] | None = None,
) -> list[PairTexts]:
    """The texts each pair is judged on under the mitigation (same order as ``pairs``); ``seed``
    seeds the offline random perturbations (spelling errors); ``callable_models`` are the models
    a text can be asked of (None: any), so that a recorded answer's author is not called."""
    if kind == "spelling":
        done = {
            p.own.id: misspell(
                p.own.text, question_text(p.instance), rate=float(params.get("rate", 0.1)), seed=seed, key=p.own.id
            )
            for p in pairs
        }
        return [_own(p, done[p.own.id]) for p in pairs]
    if kind == "synonym":
        done = await _synonyms(pairs, params, text_model, rewriter)
        return [_own(p, done[p.own.id]) for p in pairs]
    if kind == "code-restyle":
        done = await _restyle(pairs, sandbox_runner, params, text_model, rewriter)
        return [_own(p, done[p.own.id]) for p in pairs]
    if kind in ("paraphrase", "ablate"):
        both = kind == "paraphrase" and params.get("target") == "both"
        writer = _required(rewriter, kind)
        prompt: Callable[[str], tuple[Message, ...]] = (
            paraphrase_prompt if kind == "paraphrase" else (lambda t: ablation_prompt(t, params["feature"]))
        )
        texts: dict[str, _Ask] = {}
        for p in pairs:
            for r in (p.own, p.opponent) if both else (p.own,):
                texts[r.id] = (writer, prompt(r.text), r.text)
        done = await _rewrite_each(texts, text_model, method=kind, keep_label=True)
        out: list[PairTexts] = []
        for p in pairs:
            own = done[p.own.id]
            opp = done[p.opponent.id] if both else Perturbation(p.opponent.text, True)
            reason = own.reason or opp.reason
            out.append(PairTexts(own.text if own.ok and opp.ok else None, opp.text if own.ok and opp.ok else None, reason))
        return out
    if kind == "judge-paraphrase":
        per_judge: dict[tuple[str, str], _Ask] = {
            (p.judge, p.opponent.id): (p.judge, judge_paraphrase_prompt(p.opponent.text), p.opponent.text) for p in pairs
        }
        rephrased = await _rewrite_each(per_judge, text_model, method=kind, keep_label=True)
        out = []
        for p in pairs:
            opp = rephrased[(p.judge, p.opponent.id)]
            out.append(PairTexts(p.own.text, opp.text, None) if opp.ok else PairTexts(None, None, opp.reason))
        return out
    if kind == "cross-reason" and params.get("cross_reason", "model") == "model":
        return await _cross_reason_model(pairs, params, text_model, rewriter, callable_models)
    if kind == "cross-reason":
        out = []
        for p in pairs:
            own, opp = cross_reason(p.own.text, p.opponent.text), cross_reason(p.opponent.text, p.own.text)
            ok = own.ok and opp.ok
            out.append(PairTexts(own.text if ok else None, opp.text if ok else None, own.reason or opp.reason))
        return out
    raise ValueError(f"{kind!r} is not a perturbation")


async def _cross_reason_model(
    pairs: Sequence[Pair],
    params: Mapping[str, Any],
    text_model: TextModel,
    rewriter: str | None,
    callable_models: set[str] | None,
) -> list[PairTexts]:
    """Paper 003's cross-reason: the judge's option with a reason written by the competitor (or the
    rewriter), the competitor's option with a reason written by the judge (or the rewriter)."""
    third = params.get("writer", "competitor") == "rewriter"
    writer = _required(rewriter, "cross-reason") if third else ""
    asks: dict[tuple[str, str, str], tuple[str, tuple[Message, ...], int]] = {}
    # per pair: why it is left out, or (the options, the two (writer, instance, option) keys)
    plan: list[str | tuple[dict[str, str], tuple[str, str, str], tuple[str, str, str]]] = []
    for p in pairs:
        own_label, opp_label = split_label(p.own.text)[0], split_label(p.opponent.text)[0]
        if own_label is None or opp_label is None:
            plan.append("an answer has no 'Answer: X' line")
            continue
        own_writer = writer if third else p.opponent.generator
        opp_writer = writer if third else p.judge
        if callable_models is not None and not {own_writer, opp_writer} <= callable_models:
            plan.append("the reason's writer is not a model the experiment can call")
            continue
        question = question_text(p.instance)
        own_key, opp_key = (own_writer, p.instance.id, own_label), (opp_writer, p.instance.id, opp_label)
        for key in (own_key, opp_key):
            asks.setdefault(key, (key[0], cross_reason_prompt(question, key[2]), 256))
        plan.append((option_texts(question), own_key, opp_key))
    keys = list(asks)
    replies = dict(zip(keys, await text_model([asks[k] for k in keys]))) if keys else {}
    out = []
    for planned in plan:
        if isinstance(planned, str):
            out.append(PairTexts(None, None, planned))
            continue
        options, own_key, opp_key = planned
        own = read_reason(replies[own_key], own_key[2], options=options)
        opp = read_reason(replies[opp_key], opp_key[2], options=options)
        ok = own.ok and opp.ok
        out.append(
            PairTexts(
                own.text if ok else None,
                opp.text if ok else None,
                own.reason or opp.reason,
                {"writers": [own_key[0], opp_key[0]]},
            )
        )
    return out


def _own(pair: Pair, result: Perturbation) -> PairTexts:
    if not result.ok:
        return PairTexts(None, None, result.reason, result.detail)
    return PairTexts(result.text, pair.opponent.text, None, {"changed": list(result.changed)})
