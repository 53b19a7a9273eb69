"""Turn one run of ``ifeval.toml`` into the tables ``nepotism metrics`` reads, one setup per condition.

    python examples/ifeval/derive_tables.py [--results DIR]      # default: results/ifeval here

Reads the run's store (``nepotism.db``), its pointwise and pairwise exports and the graded truth
(``rubric-reference.csv``, written by ``nepotism run`` from the ``[grading]`` table) and writes,
under ``DIR/tables/``:

* ``judgments-rubric.csv`` — single-rubric and all-rubrics verdicts in one rubric table. Both are
  stored under protocol ``rubric`` with the same keys, and the export has no column telling them
  apart, so they are split here by the judgment's template id (``rubric-all@...`` = all rubrics)
  and labelled by ``condition``: ``single-rubric`` / ``all-rubrics``;
* ``judgments-pointwise.csv`` and ``judgments-pairwise.csv`` — the exports with ``condition`` set
  to ``direct-assessment`` / ``pairwise`` so every metric record names its setup;
* ``reference-instance-scores.csv`` — a correctness-ref whose ``score`` is the share of an
  answer's instructions met (002's instance score s*), which the direct-assessment metrics need;
* ``reference-preferences.csv`` — a preference-ref per pair of answers: the one meeting the larger
  share of instructions wins, equal shares tie (002's w*), which the pairwise metrics need.

An answer with any undecided instruction gets no instance score (and no preference): a failure is
never counted as "not met". Left out: metrics (``nepotism metrics`` runs on these files).
"""

from __future__ import annotations

import argparse
import itertools
import os
from pathlib import Path

import pandas as pd

from nepotism.store import Store
from nepotism.tables import read_table

HERE = Path(__file__).resolve().parent
SETUPS = {"rubric": "single-rubric", "rubric-all": "all-rubrics", "pointwise": "direct-assessment",
          "pairwise": "pairwise"}


def _write_csv(frame: pd.DataFrame, out: Path) -> None:
    tmp = out.with_name(out.name + ".tmp")
    frame.to_csv(tmp, index=False)
    os.replace(tmp, out)


def rubric_frame(store_path: Path) -> pd.DataFrame:
    """Rubric verdicts from the store, ``condition`` = the setup (from the template id)."""
    with Store.open(store_path) as store:
        judgments = store.judgments(protocol="rubric")
    rows = []
    for j in judgments:
        all_rubrics = (j.template_id or "").startswith("rubric-all")
        met = None if j.verdict is None else j.verdict.lower() in ("yes", "true", "met", "1")
        rows.append({"instance_id": j.instance_id, "judge": j.judge, "model": j.candidates[0],
                     "rubric_id": j.rubric_id, "met": met,
                     "condition": SETUPS["rubric-all" if all_rubrics else "rubric"], "replicate": j.replicate})
    frame = pd.DataFrame(rows, columns=["instance_id", "judge", "model", "rubric_id", "met", "condition", "replicate"])
    frame["met"] = frame["met"].map({True: "true", False: "false", None: ""})
    return frame


def instance_scores(reference: pd.DataFrame) -> pd.DataFrame:
    """(instance_id, model, score): share of instructions met; no row when one is undecided."""
    ref = reference.copy()
    ref["met"] = ref["met"].map(lambda v: None if v is None or pd.isna(v) else float(bool(v)))
    grouped = ref.groupby(["instance_id", "model"], sort=True)["met"]
    scores = grouped.agg(lambda s: float("nan") if s.isna().any() else s.mean()).reset_index(name="score")
    return scores.dropna(subset=["score"])


def preferences(scores: pd.DataFrame) -> pd.DataFrame:
    """Every pair of answers to an instance: the larger share wins, an equal share ties."""
    rows = []
    for instance_id, group in scores.groupby("instance_id", sort=True):
        by_model = dict(zip(group["model"], group["score"]))
        for a, b in itertools.combinations(sorted(by_model), 2):
            winner = a if by_model[a] > by_model[b] else b if by_model[b] > by_model[a] else "tie"
            rows.append({"instance_id": instance_id, "model_a": a, "model_b": b, "winner": winner})
    return pd.DataFrame(rows, columns=["instance_id", "model_a", "model_b", "winner"])


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--results", type=Path, default=HERE / "results" / "ifeval")
    args = parser.parse_args(argv)
    results: Path = args.results
    out = results / "tables"
    out.mkdir(exist_ok=True)
    _write_csv(rubric_frame(results / "nepotism.db"), out / "judgments-rubric.csv")
    for protocol in ("pointwise", "pairwise"):
        frame = pd.read_csv(results / f"{protocol}.csv", dtype=str, keep_default_na=False)
        frame["condition"] = SETUPS[protocol]
        _write_csv(frame, out / f"judgments-{protocol}.csv")
    reference = read_table(results / "rubric-reference.csv").frame
    scores = instance_scores(reference)
    _write_csv(scores, out / "reference-instance-scores.csv")
    _write_csv(preferences(scores), out / "reference-preferences.csv")
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
