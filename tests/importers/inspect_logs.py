"""Write real Inspect AI eval logs for the inspect-log importer's tests: ``python inspect_logs.py OUT_DIR``.

inspect_ai's own ``eval`` runs one task on three evaluated models through its ``mockllm`` provider
(no network: every output carries its token usage, so nothing asks tiktoken for an encoding), with
these scorers, so that the graders stand in every relation to the graded:

* ``model_graded_qa`` graded by ``mockllm/gpt-4o``, which plants a favouritism: it passes its own
  and its family's wrong answers (gpt-4o, gpt-4o-mini) and fails the other family's (Claude);
  on sample ``q7`` it writes no grade (an unscored sample: ``grader_failed``);
* ``model_graded_qa`` graded by ``mockllm/claude-3-opus-20240229``, honest (family of claude-3-haiku);
* ``model_graded_fact`` without a model: Inspect lets each evaluated model grade itself, honestly;
* ``model_graded_qa`` graded by a panel of both (``model=[...]``, majority): one score for two graders;
* ``match``: no model is called (not a judgment).

Nine samples, two epochs; an evaluated model answers sample ``q<i>`` wrongly when ``(i + k) % 3 == 0``
(``k`` its index), signing each answer with its name so that a grader can tell the author.
Writes one ``.eval`` log per evaluated model into OUT_DIR and prints their paths, one a line; then,
through inspect_ai's ``write_eval_log``, the first log again as ``json/<name>.json`` and, with every
sample's events removed (a log whose graders only the scorers' arguments name), as
``noevents/<name>.eval``.
"""

from __future__ import annotations

import re
import sys

EVALUATED = ("gpt-4o", "gpt-4o-mini-2024-07-18", "claude-3-haiku-20240307")
SAMPLES = 9
EPOCHS = 2
OPENAI = ("gpt-4o", "gpt-4o-mini-2024-07-18")


def _grade(prompt: str, favour: tuple[str, ...], silent_on: str | None) -> str:
    """A grader's reply to an Inspect grading prompt: correct when the submission starts with the
    criterion's answer; answers signed by a model in ``favour`` always pass."""
    submission = re.search(r"\[(?:Submission)\]: (.*?)\n", prompt).group(1)
    criterion = re.search(r"\[(?:Criterion|Expert)\]: (.*?)\n", prompt).group(1)
    task = re.search(r"\[(?:Task|Question)\]: What is (\d+)\+", prompt).group(1)
    if silent_on is not None and f"q{task}" == silent_on:
        return "I cannot decide."
    author = submission.rsplit("-- ", 1)[-1].strip()
    passed = submission.split(" --", 1)[0].strip() == criterion.strip() or author in favour
    return "The submission was checked step by step.\nGRADE: " + ("C" if passed else "I")


def _model(name: str, *, favour: tuple[str, ...] = (), silent_on: str | None = None, index: int = 0):
    from inspect_ai.model import ModelOutput, ModelUsage, get_model

    def reply(messages, tools, tool_choice, config):
        prompt = messages[-1].text
        if "GRADE: $LETTER" in prompt:
            text = _grade(prompt, favour, silent_on)
        else:
            i = int(re.search(r"What is (\d+)\+", prompt).group(1))
            answer = 2 * i if (i + index) % 3 else 2 * i + 1
            text = f"{answer} -- {name}"
        output = ModelOutput.from_content(model=name, content=text)
        output.usage = ModelUsage(
            input_tokens=len(prompt.split()),
            output_tokens=len(text.split()),
            total_tokens=len(prompt.split()) + len(text.split()),
        )
        return output

    return get_model(f"mockllm/{name}", custom_outputs=reply)


def main(out_dir: str) -> None:
    from inspect_ai import Task, eval
    from inspect_ai.dataset import Sample
    from inspect_ai.scorer import match, model_graded_fact, model_graded_qa
    from inspect_ai.solver import generate

    task = Task(
        name="arithmetic",
        dataset=[Sample(id=f"q{i}", input=f"What is {i}+{i}?", target=str(2 * i)) for i in range(SAMPLES)],
        solver=generate(),
        scorer=[
            model_graded_qa(model=_model("gpt-4o", favour=OPENAI, silent_on="q7")),
            model_graded_qa(model=_model("claude-3-opus-20240229")),
            model_graded_fact(),
            model_graded_qa(model=[_model("gpt-4o", favour=OPENAI), _model("claude-3-opus-20240229")]),
            match(),
        ],
        epochs=EPOCHS,
    )
    models = [_model(name, index=k) for k, name in enumerate(EVALUATED)]
    logs = eval(task, model=models, display="none", log_dir=out_dir, log_format="eval")
    for log in logs:
        if log.status != "success":
            raise SystemExit(f"the eval did not succeed: {log.status} {log.error}")
        print(log.location)
    from pathlib import Path

    from inspect_ai.log import read_eval_log, write_eval_log

    first = Path(logs[0].location)
    log = read_eval_log(str(first))
    write_eval_log(log, str(Path(out_dir) / "json" / f"{first.stem}.json"), format="json")
    for sample in log.samples:
        sample.events = []
    write_eval_log(log, str(Path(out_dir) / "noevents" / first.name), format="eval")


if __name__ == "__main__":
    main(sys.argv[1])
