"""``nepotism grade``: build a ground-truth reference table by grading responses programmatically."""

from __future__ import annotations

from typing import TYPE_CHECKING

import click

from nepotism.cli._common import Finite, bootstrap_options, echo_json, models_option

if TYPE_CHECKING:
    from nepotism.metrics import Bootstrap


@click.command("grade")
@click.argument("responses", type=click.Path(dir_okay=False))
@click.option(
    "--task",
    type=click.Choice(["math", "mc", "code", "ifeval"]),
    help="How to grade: math final answers, multiple-choice letters, code run against its tests "
    "(in the sandbox), or IFEval instructions. Not with --jury.",
)
@click.option(
    "--jury",
    help="Instead of grading: a rubric reference from the majority of these judges "
    "(comma-separated) over RESPONSES, a rubric judgments table (paper 002); every judge "
    "of the table is then meta-evaluated against it (precision, recall, F1 of 'met').",
)
@click.option(
    "--rubrics",
    type=click.Path(dir_okay=False),
    help="--jury: the rubric-items table (points), to meta-evaluate positive and negative items apart.",
)
@click.option(
    "--exclude-related",
    is_flag=True,
    help="--jury: a juror does not vote on answers of models related to it (itself, its family, "
    "students, teachers by the registry). A variant: paper 002's reference is a plain majority of "
    "every juror (§2.4), the default.",
)
@models_option
@bootstrap_options
@click.option(
    "--out",
    "out",
    required=True,
    type=click.Path(dir_okay=False),
    help="Reference table to write (.csv, .jsonl or .parquet): correctness-ref, or rubric-ref for ifeval.",
)
@click.option(
    "--instances",
    type=click.Path(dir_okay=False),
    help="ifeval only: file of instances (instance_id or key, instruction_id_list, kwargs).",
)
@click.option("--timeout", type=Finite(0.1, 600), default=10.0, show_default=True, help="code only: seconds allowed per program.")
@click.option(
    "--against",
    type=click.Path(dir_okay=False),
    help="math/mc/code: a recorded correctness reference to compare with (agreement rate with a "
    "bootstrap interval over instances, and the 2x2 table).",
)
@click.option("--json", "as_json", is_flag=True, help="Print the counts and the ungradable rows as JSON.")
def command(
    responses: str,
    task: str | None,
    jury: str | None,
    rubrics: str | None,
    exclude_related: bool,
    models_files: tuple[str, ...],
    bootstrap: Bootstrap,
    out: str,
    instances: str | None,
    timeout: float,
    against: str | None,
    as_json: bool,
) -> None:
    """Grade RESPONSES (instance_id, model, text + the task's truth columns) into a reference table,
    or, with --jury, build a rubric reference from a jury of judges' verdicts (RESPONSES is then a
    rubric judgments table, e.g. `nepotism import FILE --format healthbench`) and meta-evaluate
    every judge against it.

    Truth columns: math and mc need `answer`; code needs `tests` (assert lines, a JSON list of
    them, or a HumanEval check function) and optionally `entry_point` and `prompt`; ifeval needs
    `instruction_id_list` and `kwargs`, or --instances. The reference is written atomically.
    Responses that cannot be graded (no answer found, sandbox error) are counted and left out of
    the reference (a reference row must say true or false); --json lists them.
    """
    from nepotism.errors import InputError
    from nepotism.grading.batch import grade_file
    from nepotism.tables import read_table, write_table

    if jury is not None:
        if task is not None or instances is not None or against is not None:
            raise InputError(
                "--jury builds a rubric reference from judgments: not with --task, --instances or --against", field="--jury"
            )
        _jury(responses, jury, rubrics, exclude_related, models_files, bootstrap, out, as_json)
        return
    if task is None:
        raise InputError("give --task (grade responses) or --jury (a rubric reference from judges)", field="--task")
    if instances is not None and task != "ifeval":
        raise InputError("--instances is only for --task ifeval", field="--instances")
    if against is not None and task == "ifeval":
        raise InputError("--against compares correctness references: not for --task ifeval", field="--against")
    recorded = read_table(against, kind="correctness-ref").frame if against is not None else None
    result = grade_file(responses, task, instances=instances, timeout=timeout)
    write_table(result.frame, out)
    agreement = None
    if recorded is not None:
        from nepotism.grading.agreement import correctness_agreement

        agreement = correctness_agreement(result.frame, recorded, bootstrap=bootstrap)
    if as_json:
        echo_json(
            {"kind": result.kind, "out": out, "rows": len(result.frame), "counts": result.counts, "ungradable": result.ungradable}
            | ({"agreement": agreement} if agreement else {})
        )
        return
    counts = result.counts
    if task == "ifeval":
        click.echo(
            f"{counts['prompts']} responses, {counts['prompts_all_met']} following every instruction; "
            f"instructions: {counts['met']} met, {counts['not_met']} not met, {counts['ungradable']} ungradable"
        )
    else:
        click.echo(
            f"{counts['correct']} correct, {counts['incorrect']} incorrect, {counts['ungradable']} ungradable "
            f"(left out of the reference)"
        )
    click.echo(f"wrote {len(result.frame)} {result.kind} rows to {out}")
    if agreement is not None:
        c = agreement["counts"]
        click.echo(
            f"agreement with {against}: {agreement['value']:.3f} (95% CI {agreement['ci_low']:.3f}-"
            f"{agreement['ci_high']:.3f}; n={agreement['n']} responses, {agreement['n_clusters']} instances); "
            f"we say correct / they say incorrect: {c['ours_correct_recorded_incorrect']}, the reverse: "
            f"{c['ours_incorrect_recorded_correct']}; decided by one side only: {c['only_ours']} ours, "
            f"{c['only_recorded']} theirs"
        )


def _jury(
    judgments_file: str,
    jury: str,
    rubrics: str | None,
    exclude_related: bool,
    models_files: tuple[str, ...],
    bootstrap: Bootstrap,
    out: str,
    as_json: bool,
) -> None:
    """``--jury``: the rubric reference and the judges' meta-evaluation (library: grading.rubric_reference)."""
    from nepotism.errors import InputError
    from nepotism.grading.jury import registry_related
    from nepotism.grading.rubric_reference import jury_reference, meta_evaluation, reference_frame
    from nepotism.models import load_registry
    from nepotism.tables import read_table, write_table

    members = [j.strip() for j in jury.split(",") if j.strip()]
    if len(members) < 2 or len(set(members)) != len(members):
        raise InputError("name at least two distinct judges, comma-separated", field="--jury")
    judgments = read_table(judgments_file, kind="rubric").frame
    items = read_table(rubrics, kind="rubric-items").frame if rubrics else None
    registry = load_registry(list(models_files))
    unknown = [m for m in members if not registry.knows(m)]
    if unknown and exclude_related:
        raise InputError(
            f"jury member(s) {', '.join(unknown)} not in the model registry: their relatives cannot be "
            "told (add them with --models, or drop --exclude-related)",
            field="--jury",
        )
    try:
        result = jury_reference(judgments, members, exclude_related=exclude_related, related=registry_related(registry))
    except ValueError as err:
        raise InputError(str(err), path=str(judgments_file), field="--jury") from None
    reference = reference_frame(result)
    write_table(reference, out)
    name = f"jury of {len(members)}" + (", relatives excluded" if exclude_related else "")
    records = meta_evaluation(judgments, result.frame, items=items, jury=members, reference_name=name, bootstrap=bootstrap)
    if as_json:
        echo_json(
            {
                "kind": "rubric-ref",
                "out": out,
                "rows": len(reference),
                "jury": members,
                "exclude_related": exclude_related,
                "counts": result.counts,
                "records": records,
            }
        )
        return
    c = result.counts
    how = (
        " (a juror does not vote on answers of models related to it)"
        if exclude_related
        else " (every juror votes on every answer, paper 002)"
    )
    click.echo(
        f"jury {', '.join(members)}{how}: "
        f"{c.get('majority', 0)} items decided, {c.get('vote-tie', 0)} even votes and {c.get('no_votes', 0)} "
        f"without a vote left out; {c.get('excluded_verdicts', 0)} related verdicts excluded, "
        f"{c.get('unparsed_verdicts', 0)} unparsed"
    )
    click.echo(f"wrote {len(reference)} rubric-ref rows to {out}")
    click.echo(f"{'judge':<32}{'polarity':<10}{'metric':<18}{'value':>7}  {'CI':<16}{'n':>5}  juror")
    for r in records:
        value = "   n/a" if r["value"] is None else f"{r['value']:.3f}"
        ci = "" if r["ci_low"] is None else f"[{r['ci_low']:.2f}, {r['ci_high']:.2f}]"
        click.echo(
            f"{r['judge']:<32}{r['variant']['polarity']:<10}{r['metric']:<18}{value:>7}  {ci:<16}{r['n']:>5}  "
            f"{'yes' if r['in_jury'] else 'no'}"
        )
