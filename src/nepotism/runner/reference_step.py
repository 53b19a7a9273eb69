"""The jury step of a run: a rubric reference from the experiment's ``[reference] jury`` (paper 002 §4).

After judging, `jury_step` takes the rubric judgments (the exported ``rubric`` table, else the
store's), lets the jurors vote with `nepotism.grading.rubric_reference.jury_reference` — each
juror's majority per (prompt, answer, rubric item), then the jury's majority, through
`nepotism.votes`; every juror votes on every answer, as paper 002 §2.4's reference does, unless
``exclude_related`` (the variant: a juror related to the answer's author by the registry's one scope
rule does not vote on it) — adds the decided items to the store as rubric references
(source ``jury:<jurors>``) and writes ``rubric-reference.<fmt>`` (with the ``jurors`` who voted on
each item) to the output folder, with the instances' rubric items (``rubric-items.<fmt>``: text
and points, for the positive / negative split). Items with an even vote or no vote are left out and counted.
`nepotism metrics RUN_DIR` then meta-evaluates every judge against it (precision, recall, F1).
Like grading, the step calls no model: a rerun votes again on the stored verdicts.
"""

from __future__ import annotations

import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from nepotism.experiment import Experiment
from nepotism.records import Instance, Reference

__all__ = ["jury_step"]


def _rubric_judgments(store: Any, tables: Mapping[str, str]) -> Any:
    from nepotism.tables import read_table

    if "rubric" in tables:
        return read_table(tables["rubric"], kind="rubric").frame
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "rubric.parquet"
        if store.export("judgments", out, fmt="parquet", protocol="rubric") == 0:
            return None
        return read_table(out, kind="rubric").frame


def _items(instances: Sequence[Instance]) -> Any:
    import pandas as pd

    rows = [
        {"instance_id": i.id, "rubric_id": item.id, "text": item.text, "points": item.points, "category": item.category}
        for i in instances
        for item in i.rubric
    ]
    return pd.DataFrame(rows, columns=["instance_id", "rubric_id", "text", "points", "category"])


def jury_step(
    experiment: Experiment, store: Any, registry: Any, tables: Mapping[str, str], instances: Sequence[Instance] = ()
) -> tuple[dict[str, Any], dict[str, str]]:
    """Vote, store and write the jury's rubric reference (and the ``rubric-items`` of ``instances``, so
    that the meta-evaluation splits positive and negative items); return (counts, files by kind)."""
    config = experiment.reference
    if config is None:
        return {}, {}
    from nepotism.grading.jury import registry_related
    from nepotism.grading.rubric_reference import jury_reference, reference_frame

    frame = _rubric_judgments(store, tables)
    voted = set() if frame is None else set(frame["judge"].astype(str))
    silent = [j for j in config.jury if j not in voted]
    if silent:  # a juror whose every rubric call failed still counts as a juror with no vote
        return {"jury": list(config.jury), "no_rubric_verdicts": silent, "rows": 0}, {}
    result = jury_reference(frame, config.jury, exclude_related=config.exclude_related, related=registry_related(registry))
    reference = reference_frame(result)
    source = "jury:" + ",".join(config.jury)
    store.add_references(
        [
            Reference(str(r.instance_id), "rubric", (str(r.model),), rubric_id=str(r.rubric_id), met=bool(r.met), source=source)
            for r in reference.itertuples(index=False)
        ]
    )
    counts = {
        "jury": list(config.jury),
        "exclude_related": config.exclude_related,
        "rows": len(reference),
        "counts": dict(result.counts),
    }
    written: dict[str, str] = {}
    if experiment.output_dir is not None:
        from nepotism.tables import write_table

        out = Path(experiment.output_dir)
        items = _items(instances)
        for kind, name, frame in (("rubric-ref", "rubric-reference", reference), ("rubric-items", "rubric-items", items)):
            if len(frame):
                target = out / f"{name}.{experiment.output_format}"
                write_table(frame, target)
                written[kind] = str(target)
    return counts, written
