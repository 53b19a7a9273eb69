"""``nepotism plan``: how many prompts an audit needs to detect a self-preference, its calls and cost."""

from __future__ import annotations

import click

from nepotism.cli._common import Finite, echo_json, finite_value, format_option, models_option, print_table

_SCOPES = ("self", "family", "student", "family-student")


def _names(value: str, option: str) -> list[str]:
    from nepotism.errors import InputError

    names = [p.strip() for p in value.split(",") if p.strip()]
    if not names:
        raise InputError(f"expected comma-separated model names, got '{value}'", field=option)
    return names


def _effects(values: tuple[str, ...]) -> dict[str, float]:
    from nepotism.errors import InputError

    effects = {}
    for value in values or ("self=0.05",):
        scope, sep, size = value.partition("=")
        scope = scope.strip()
        try:
            effects[scope] = finite_value(size if sep else "", "--effect")
        except InputError as err:
            raise InputError(f"expected SCOPE=SIZE (e.g. self=0.05), got '{value}': {err.message}", field="--effect") from None
        if scope not in _SCOPES:
            raise InputError(f"unknown scope '{scope}'; scopes are {', '.join(_SCOPES)}", field="--effect")
    return effects


#: An effect below this (half a point of win rate) is below what any audit of judges detects.
_SMALLEST_EFFECT = 0.005
#: More prompts than this is more than any benchmark holds.
_MOST_PROMPTS = 1_000_000


def _absurd(effects: dict[str, float], prompts: int) -> list[str]:
    """Warnings for a plan no one can run: a vanishing effect, or more prompts than exist."""
    out = [
        f"--effect {scope}={size:g} is a win-rate shift of {size * 100:.2g} points; audits detect shifts of a "
        "few points (0.02 to 0.10: self=0.05 is 5 points)"
        for scope, size in effects.items()
        if abs(size) < _SMALLEST_EFFECT
    ]
    if prompts > _MOST_PROMPTS:
        out.append(
            f"{prompts:,} prompts is more than any benchmark holds: plan for a larger effect, more generators "
            "or judges, or measure the ties and correlation with --pilot"
        )
    return out


@click.command("plan")
@click.option("--judges", required=True, metavar="J1,J2", help="Judges of the audit (comma-separated).")
@click.option(
    "--generators",
    required=True,
    metavar="G1,G2,...",
    help="Generators whose answers every judge compares, all pairs (comma-separated).",
)
@click.option(
    "--effect",
    "effects",
    multiple=True,
    metavar="SCOPE=SIZE",
    help="Win-rate shift to detect in a scope (self, family, student, family-student), e.g. self=0.05 "
    "for a 5-point self-bonus; repeatable.  [default: self=0.05]",
)
@click.option("--alpha", type=Finite(0.0001, 0.5), default=0.05, show_default=True, help="Two-sided significance level.")
@click.option(
    "--power",
    type=Finite(0.5, 0.999),
    default=0.8,
    show_default=True,
    help="Probability of detecting the effect when it is there.",
)
@click.option(
    "--baseline",
    type=Finite(0.01, 0.99),
    default=0.5,
    show_default=True,
    help="Win rate without the effect (0.5: no preference).",
)
@click.option(
    "--icc",
    type=Finite(0.0, 1.0),
    default=0.1,
    show_default=True,
    help="Assumed correlation of the comparisons of one prompt (replaced by the pilot's).",
)
@click.option(
    "--tie-rate",
    type=Finite(0.0, 0.99),
    default=0.0,
    show_default=True,
    help="Assumed share of ties after combining both orders (replaced by the pilot's).",
)
@click.option(
    "--pilot",
    type=click.Path(dir_okay=False),
    help="Pilot pairwise judgments: their tie share and within-prompt correlation, per judge and scope.",
)
@click.option("--orders", type=click.IntRange(1, 2), default=2, show_default=True, help="Presentation orders judged per pair.")
@click.option(
    "--generate/--no-generation",
    default=True,
    show_default=True,
    help="Count the calls generating the answers (off when they exist already).",
)
@click.option("--prompt-tokens", type=click.IntRange(0), default=200, show_default=True, help="Tokens per prompt.")
@click.option("--answer-tokens", type=click.IntRange(0), default=400, show_default=True, help="Tokens per answer.")
@click.option("--verdict-tokens", type=click.IntRange(0), default=100, show_default=True, help="Tokens per judge reply.")
@click.option(
    "--template-tokens",
    type=click.IntRange(0),
    default=250,
    show_default=True,
    help="Tokens of the judge template around the prompt and answers.",
)
@click.option(
    "--price-input-per-mtok",
    "price_input",
    type=Finite(0.0),
    default=0.0,
    show_default=True,
    help="USD per million input tokens, for the models the registry does not price.",
)
@click.option(
    "--price-output-per-mtok",
    "price_output",
    type=Finite(0.0),
    default=0.0,
    show_default=True,
    help="USD per million output tokens, for the models the registry does not price.",
)
@models_option
@click.option("--json", "as_json", is_flag=True, help="Print the plan as JSON.")
@format_option
def command(
    judges: str,
    generators: str,
    effects: tuple[str, ...],
    alpha: float,
    power: float,
    baseline: float,
    icc: float,
    tie_rate: float,
    pilot: str | None,
    orders: int,
    generate: bool,
    prompt_tokens: int,
    answer_tokens: int,
    verdict_tokens: int,
    template_tokens: int,
    price_input: float,
    price_output: float,
    models_files: tuple[str, ...],
    as_json: bool,
    output_format: str,
) -> None:
    """Plan an audit before paying for it: the prompts needed to detect a self-preference of a given
    size in each scope, at a significance level and power, and the calls, tokens and cost.

    The design is every judge comparing all pairs of the generators on every prompt; scopes follow
    the registry (--models). The formula is the standard two-sided test of a proportion from
    clustered data with a design effect (docs/planning.md); --pilot replaces
    the assumed tie share and within-prompt correlation by those of pilot judgments. A plan no one
    can run (an effect under half a point, more than a million prompts) is printed with a warning
    on stderr (and under "warnings" with --json).
    """
    from nepotism.analyses.comparisons import build_comparisons
    from nepotism.analyses.power import Costs, plan_audit
    from nepotism.errors import InputError
    from nepotism.models import load_registry
    from nepotism.tables import read_table

    registry = load_registry(list(models_files))
    comparisons = None
    if pilot:
        comparisons = build_comparisons(read_table(pilot, kind="pairwise").frame).frame
    costs = Costs(
        prompt_tokens=prompt_tokens,
        answer_tokens=answer_tokens,
        verdict_tokens=verdict_tokens,
        template_tokens=template_tokens,
        price_input_per_mtok=price_input,
        price_output_per_mtok=price_output,
    )
    try:
        plan = plan_audit(
            _names(judges, "--judges"),
            _names(generators, "--generators"),
            registry,
            effects=_effects(effects),
            alpha=alpha,
            power=power,
            baseline=baseline,
            icc=icc,
            tie_rate=tie_rate,
            orders=orders,
            generate=generate,
            costs=costs,
            pilot=comparisons,
        )
    except ValueError as err:
        raise InputError(str(err)) from None
    warnings = _absurd(_effects(effects), plan.prompts)
    for warning in warnings:
        click.echo(f"warning: {warning}", err=True)
    if as_json:
        echo_json(plan.as_dict() | ({"warnings": warnings} if warnings else {}))
        return
    rows = [
        [
            s.judge,
            s.scope,
            f"{s.effect:+g}",
            str(s.per_prompt),
            "-" if s.design_effect is None else f"{s.design_effect:.2f}",
            f"{s.icc:.3f}",
            f"{s.tie_rate:.3f}",
            s.source,
            "-" if s.prompts is None else f"{s.prompts:,}",
            s.note or "",
        ]
        for s in plan.scopes
    ]
    print_table(
        f"Prompts needed (alpha {alpha:g}, power {power:g}, two-sided)",
        ["judge", "scope", "effect", "comparisons/prompt", "design effect", "icc", "ties", "from", "prompts", "note"],
        rows,
        output_format=output_format,
    )
    click.echo(f"prompts: {plan.prompts:,}")
    click.echo(
        f"judge calls: {plan.judge_calls:,} ({len(plan.settings['judges'])} judges x "
        f"{len(plan.settings['generators']) * (len(plan.settings['generators']) - 1) // 2} pairs x "
        f"{orders} orders x {plan.prompts:,} prompts)"
    )
    click.echo(f"answers to generate: {plan.generation_calls:,}")
    click.echo(f"tokens: {plan.input_tokens:,} in, {plan.output_tokens:,} out")
    priced = ", ".join(f"{m} {c:,.2f}" for m, c in plan.model_costs.items() if c is not None)
    if plan.cost is not None:
        click.echo(f"estimated cost: USD {plan.cost:,.2f} ({priced})")
    else:
        click.echo(
            f"estimated cost: not priced: no price for {', '.join(plan.unpriced)} in the registry (--models) "
            "or from --price-input-per-mtok / --price-output-per-mtok" + (f"; priced: {priced}" if priced else "")
        )
