"""``nepotism explain``: the verdict for one judge and relation, then the cases behind it.

Parsing and printing only: the audit and the verdict are `nepotism.audit`'s, the cases
`nepotism.analyses.cases`' (through `nepotism.api.explain`). Texts from the data are untrusted:
control characters (terminal escapes, bidirectional overrides) are printed as visible escapes.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import click

from nepotism.cli._common import bootstrap_options, echo_json, models_option, named_as_typed

if TYPE_CHECKING:
    from nepotism.analyses.cases import Case, Explanation
    from nepotism.metrics import Bootstrap

#: How many characters of a prompt or an answer are printed unless --full (``--json`` holds them whole).
_CHARS = 1200
_SCOPES = ("self", "family", "student", "family-student")
_ARGUMENT = {"source": "SOURCE", "limit": "--limit"}


@click.command("explain")
@click.argument("source", nargs=-1, required=True, type=click.Path())
@click.option("--judge", required=True, help="The judge (its name in the data, or its registry id).")
@click.option(
    "--scope",
    type=click.Choice(_SCOPES),
    default="self",
    show_default=True,
    help="Which relation: its own answers, its family's, its students', its family's students'.",
)
@click.option("--condition", help="The condition, when the judge was audited under several.")
@click.option(
    "--texts",
    type=click.Path(),
    metavar="FILE",
    help="The answers' texts: JSON Lines (instance_id, model, text, optional prompt) as "
    "`nepotism import --texts-out` writes them, or the store of `nepotism run`.",
)
@click.option(
    "--limit",
    type=click.IntRange(0, 1000),
    default=5,
    show_default=True,
    help="Cases shown in each direction (the most telling first).",
)
@click.option("--full", is_flag=True, help=f"Print prompts and answers whole (else the first {_CHARS:,} characters).")
@click.option(
    "--reference",
    multiple=True,
    type=click.Path(dir_okay=False),
    help="Reference table (preference-ref, correctness-ref, rubric-ref); repeatable.",
)
@click.option(
    "--kind",
    type=click.Choice(["pairwise", "pointwise", "rubric"]),
    help="Table kind of a single SOURCE file, when the columns do not tell.",
)
@click.option(
    "--rule",
    type=click.Choice(["consistent", "strict"]),
    default="consistent",
    show_default=True,
    help="How to combine the two presentation orders (as in `nepotism metrics`).",
)
@click.option(
    "--reference-vote",
    type=click.Choice(["each", "majority"]),
    default="each",
    show_default=True,
    help="Several human labels of one pair: each label one row, or the pair's plurality label.",
)
@click.option(
    "--min-prompts",
    type=click.IntRange(1, None),
    default=30,
    show_default=True,
    help="The fewest prompts a verdict's number may rest on (docs/answer.md).",
)
@models_option
@bootstrap_options
@click.option("--json", "as_json", is_flag=True, help="Print one JSON document: the verdict and its cases.")
def command(
    source: tuple[str, ...],
    judge: str,
    scope: str,
    condition: str | None,
    texts: str | None,
    limit: int,
    full: bool,
    reference: tuple[str, ...],
    kind: str | None,
    rule: str,
    reference_vote: str,
    min_prompts: int,
    models_files: tuple[str, ...],
    bootstrap: Bootstrap,
    as_json: bool,
) -> None:
    """Show the verdict for one judge and relation, then the cases behind it.

    SOURCE is what `nepotism metrics` takes: judgment tables, a store, or the output folder of
    `nepotism run`. The verdict is the one `metrics` prints first (docs/answer.md); the cases are
    the comparisons it rests on, the most telling first: against judges unrelated to both answers,
    the prompts where this judge departs most from them; against a reference, where it sided with
    its relative although the reference prefers the other answer, and the reverse; the judge alone,
    what it decided for and against its relative (nothing then says which answer was right). Each
    case shows every judge's verdict on the same pair and the reference; with --texts, the prompt
    and both answers.
    """
    from nepotism._malloc import reuse_freed_memory
    from nepotism.api import explain
    from nepotism.cli.metrics import _refuse_results
    from nepotism.errors import InputError

    reuse_freed_memory()
    _refuse_results(source)
    if kind and len(source) > 1:
        raise InputError("--kind applies to a single SOURCE file", field="--kind")
    with named_as_typed(_ARGUMENT):  # name the command's own argument or option
        found = explain(
            list(source),
            judge=judge,
            scope=scope,
            condition=condition,
            references=list(reference),
            models=list(models_files),
            bootstrap=bootstrap,
            kind=kind,
            rule=rule,
            reference_vote=reference_vote,
            min_prompts=min_prompts,
            texts=texts,
            limit=limit,
        )
    if as_json:
        echo_json(found.to_dict())
        return
    for line in explanation_lines(found, full=full):
        click.echo(line)


def _safe(text: str) -> str:
    """``text`` with control and format characters (other than newline and tab) as visible escapes."""
    out = []
    for ch in text:
        if ch not in "\n\t" and unicodedata.category(ch) in ("Cc", "Cf", "Cs", "Co"):
            out.append(f"\\u{ord(ch):04x}" if ord(ch) > 0xFF else f"\\x{ord(ch):02x}")
        else:
            out.append(ch)
    return "".join(out)


def _block(label: str, text: str | None, *, full: bool, indent: str = "     ") -> list[str]:
    if text is None:
        return [f"{indent}{label}: (not in the texts)"]
    shown = text if full or len(text) <= _CHARS else text[:_CHARS]
    lines = [f"{indent}{label}:"] + [f"{indent}  | {line}" for line in _safe(shown).splitlines() or [""]]
    if len(shown) < len(text):
        lines.append(f"{indent}  … {len(text) - len(shown):,} more characters (--full prints them, --json holds them)")
    return lines


def explanation_lines(found: Explanation, *, full: bool = False) -> list[str]:
    """The plain text of an explanation: the verdict, how the cases were chosen, each direction's cases."""
    from nepotism.analyses.cases import compared_words, one_line, reading_words, truth_words
    from nepotism.analyses.verdicts import SCOPE_WORDS

    v = found.verdict
    lines = [
        _safe(f"nepotism explain — {v.judge}, {SCOPE_WORDS[v.scope]} (condition '{v.condition}')"),
        _safe(f"Verdict: {v.sentence}"),
    ]
    if not found.groups:
        lines.append(_safe(found.note or "no cases"))
        return lines
    left = f"; {found.excluded:,} without a verdict left out" if found.excluded else ""
    lines.append(_safe(f"Cases: {found.how}. {found.count_words}{left}."))
    if found.note:
        lines.append(_safe(f"Note: {found.note}"))
    if found.texts and found.texts.get("answers_missing"):
        lines.append(_safe(f"Texts: {found.texts['answers_missing']} of the answers shown are not in {found.texts['source']}."))
    for group in found.groups:
        lines.append("")
        shown = f"; the {len(group.cases)} shown first" if group.cases and len(group.cases) < group.n else ""
        lines.append(_safe(f"{group.title[0].upper()}{group.title[1:]}: {found.counted(group.n)}{shown}"))
        for number, case in enumerate(group.cases, 1):
            lines.append(_safe(f"  {number}. prompt {one_line(case.instance_id)}: {case.related} against {case.other}"))
            lines.append(_safe(f"     {v.judge}: {reading_words(found.kind, case, _own(case, v.judge))}"))
            compared = compared_words(found.kind, case)
            if compared:
                who = "the other judge" if found.metric == "paired-win-rate-gap" else "the unrelated judges' mean"
                lines.append(_safe(f"     {who}: {compared}"))
            others = [j for j in case.judges if j["role"] != "this judge"]
            if others:
                lines.append(
                    _safe(
                        "     every other judge: "
                        + "; ".join(
                            f"{_judge(j, v.condition)} ({j['role']}): {reading_words(found.kind, case, j)}" for j in others
                        )
                    )
                )
            truth = truth_words(case)
            if truth:
                lines.append(_safe(f"     the reference: {truth}"))
            if found.texts is not None:
                if case.prompt is not None:
                    lines += _block("prompt", case.prompt, full=full)
                lines += _block(f"answer of {case.related}", case.text_related, full=full)
                lines += _block(f"answer of {case.other}", case.text_other, full=full)
    if found.rest:
        lines += ["", _safe(f"Also: {found.rest}.")]
    return lines


def _own(case: Case, judge: str) -> Mapping[str, Any] | None:
    return next((j for j in case.judges if j["judge"] == judge and j["role"] == "this judge"), None)


def _judge(reading: Mapping[str, Any], condition: str) -> str:
    """A judge's name, with its condition when it is not the verdict's."""
    other = reading.get("condition")
    return reading["judge"] if other in (None, condition) else f"{reading['judge']} under '{other}'"
