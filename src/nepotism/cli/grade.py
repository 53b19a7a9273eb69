"""``nepotism grade``: build a ground-truth reference table by grading responses programmatically."""

from __future__ import annotations

import click

from nepotism.cli._common import echo_json


@click.command("grade")
@click.argument("responses", type=click.Path(dir_okay=False))
@click.option("--task", required=True, type=click.Choice(["math", "mc", "code", "ifeval"]),
              help="How to grade: math final answers, multiple-choice letters, code run against its tests "
                   "(in the sandbox), or IFEval instructions.")
@click.option("--out", "out", required=True, type=click.Path(dir_okay=False),
              help="Reference table to write (.csv, .jsonl or .parquet): correctness-ref, or rubric-ref for ifeval.")
@click.option("--instances", type=click.Path(dir_okay=False),
              help="ifeval only: file of instances (instance_id or key, instruction_id_list, kwargs).")
@click.option("--timeout", type=click.FloatRange(0.1, 600), default=10.0, show_default=True,
              help="code only: seconds allowed per program.")
@click.option("--against", type=click.Path(dir_okay=False),
              help="math/mc/code: a recorded correctness reference to compare with (agreement rate with a "
                   "bootstrap interval over instances, and the 2x2 table).")
@click.option("--seed", type=click.IntRange(0), default=0, show_default=True, help="Seed of the --against bootstrap.")
@click.option("--json", "as_json", is_flag=True, help="Print the counts and the ungradable rows as JSON.")
def command(responses, task, out, instances, timeout, against, seed, as_json):
    """Grade RESPONSES (instance_id, model, text + the task's truth columns) into a reference table.

    Truth columns: math and mc need `answer`; code needs `tests` (assert lines, a JSON list of
    them, or a HumanEval check function) and optionally `entry_point` and `prompt`; ifeval needs
    `instruction_id_list` and `kwargs`, or --instances. The reference is written atomically.
    Responses that cannot be graded (no answer found, sandbox error) are counted and left out of
    the reference (a reference row must say true or false); --json lists them.
    """
    from nepotism.errors import InputError
    from nepotism.grading.batch import grade_file
    from nepotism.tables import read_table, write_table

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
        from nepotism.metrics import Bootstrap

        agreement = correctness_agreement(result.frame, recorded, bootstrap=Bootstrap(seed=seed))
    if as_json:
        echo_json({"kind": result.kind, "out": out, "rows": len(result.frame), "counts": result.counts,
                   "ungradable": result.ungradable} | ({"agreement": agreement} if agreement else {}))
        return
    counts = result.counts
    if task == "ifeval":
        click.echo(f"{counts['prompts']} responses, {counts['prompts_all_met']} following every instruction; "
                   f"instructions: {counts['met']} met, {counts['not_met']} not met, {counts['ungradable']} ungradable")
    else:
        click.echo(f"{counts['correct']} correct, {counts['incorrect']} incorrect, {counts['ungradable']} ungradable "
                   f"(left out of the reference)")
    click.echo(f"wrote {len(result.frame)} {result.kind} rows to {out}")
    if agreement is not None:
        c = agreement["counts"]
        click.echo(f"agreement with {against}: {agreement['value']:.3f} (95% CI {agreement['ci_low']:.3f}-"
                   f"{agreement['ci_high']:.3f}; n={agreement['n']} responses, {agreement['n_clusters']} instances); "
                   f"we say correct / they say incorrect: {c['ours_correct_recorded_incorrect']}, the reverse: "
                   f"{c['ours_incorrect_recorded_correct']}; decided by one side only: {c['only_ours']} ours, "
                   f"{c['only_recorded']} theirs")
