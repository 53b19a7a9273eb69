"""Import AlpacaEval annotations: the compact CSV of this project's data and AlpacaEval's own JSON.

AlpacaEval judges each instruction once per pair. Its pairwise annotators randomise which output
the judge sees first (``is_randomize_output_order``, on by default, seeded by the instruction) and
undo the switch before storing ``preference``, so the stored preference is always relative to
``output_1`` (the baseline, ``generator_1`` → ``model_a``) whatever the judge saw. The order the
judge saw is not recorded: every row gets ``presentation = unknown`` and no position metric is
computed from it (checked against ``alpaca_eval/annotators/pairwise_evaluator.py``: the
``RandomSwitchTwoColumnsProcessor`` and ``shuffle_pairwise_preferences`` in ``_postprocess``).

``preference`` encoding, from AlpacaEval's ``src/alpaca_eval/metrics/helpers.py`` (tatsu-lab/
alpaca_eval, ``BaseScoringRule.describe_head2head``): values are in [1, 2], ``1`` = output_1 better,
``2`` = output_2 better, ``1.5`` = draw and ``0`` = draw (legacy, mapped to 1.5); a fractional value
from a ``weighted_*`` annotator is ``1 + P(output_2 better)``. AlpacaEval counts ``n_wins`` as
``p - 1 > 0.5``, ``n_wins_base`` as ``p - 1 < 0.5``, ``n_draws`` as ``p in {0, 1.5}`` and drops
non-preferences (NaN). We map ``p < 1.5`` to verdict A, ``p > 1.5`` to B, a draw to tie, and keep
``prob_a = 2 - p``, ``prob_b = p - 1`` for weighted annotators. A missing preference is an
unparsed judgment (empty verdict, ``status`` unparsed, ``reason`` ``no_verdict``), never a
tie. These rules reproduce the ``n_wins``,
``n_wins_base`` and ``n_draws`` columns of AlpacaEval's leaderboards (tested).

Mapping: judge = the model behind the row's ``annotator`` (`ANNOTATOR_JUDGES`), condition = the
annotator config name, instance_id = ``alpaca_eval/<instruction_id>``, category = ``dataset``.
Generator names are kept as AlpacaEval spells them. Rows that compare a generator with itself get
``@output_1`` / ``@output_2`` tags (the table forbids model_a == model_b). Exact duplicate rows
(several upstream result folders hold the same annotations) are dropped and counted; repeated
judgments of one key with different preferences become replicates 0, 1, ...

In ``annotations.json`` an empty output (``""`` or null) is a recorded empty answer: the row and
its preference stand, the text is ``""`` and the count ``empty_outputs`` says how many; errors in
that file name the record ("record 12": the file is one JSON array).

Left out: the compact file has no texts (use ``alpaca-eval`` on an ``annotations.json`` for
``--texts-out``); length-controlled win rates are not computed here.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from nepotism.errors import InputError
from nepotism.importers._common import (
    Format,
    Imported,
    fail,
    is_missing,
    open_text,
    provenance,
    read_json_list,
    require,
)

__all__ = ["ANNOTATOR_JUDGES", "FORMATS", "decode_preferences", "import_alpaca_eval", "import_alpaca_eval_compact"]

#: AlpacaEval annotator config -> the judge model, in AlpacaEval's generator spelling (the model
#: registry knows these names as aliases).
ANNOTATOR_JUDGES: dict[str, str] = {
    # alpaca_eval_gpt4 (AlpacaEval 1.0 default) ran on GPT-4 as of spring 2023, i.e. gpt-4-0314;
    # alpaca-eval 0.6.x later split it into evaluators_configs/alpaca_eval_gpt4_0314 and
    # .../alpaca_eval_gpt4_0613 (file list of the alpaca-eval 0.6.1 sdist), and the annotator
    # name alpaca_eval_gpt4_0613 appears separately in the data, so plain alpaca_eval_gpt4 is 0314.
    "alpaca_eval_gpt4": "gpt4_0314",
    "alpaca_eval_gpt4_0314": "gpt4_0314",
    "alpaca_eval_gpt4_0613": "gpt4_0613",
    # evaluators_configs/alpaca_eval_cot_gpt4_turbo_fn/configs.yaml: model_name "gpt-4-1106-preview".
    "alpaca_eval_cot_gpt4_turbo_fn": "gpt4_1106_preview",
    # evaluators_configs/{weighted_alpaca_eval_gpt4_turbo,alpaca_eval_gpt4_turbo_fn}/configs.yaml:
    # model_name "gpt-4-turbo" at the time of these annotations = gpt-4-1106-preview (AlpacaEval 2.0,
    # whose baseline gpt4_1106_preview is the same model).
    "weighted_alpaca_eval_gpt4_turbo": "gpt4_1106_preview",
    "alpaca_eval_gpt4_turbo_fn": "gpt4_1106_preview",
    # bedrock_claude: Claude 2 served through AWS Bedrock (community-contributed annotator).
    "bedrock_claude": "claude-2",
}

_DRAW = 1.5


_ORDER_NOTE = (
    "AlpacaEval judges each pair once and randomises which answer is shown first; the preference is "
    "stored against the baseline (generator_1 = model_a), the order seen is unknown (presentation = unknown)"
)


def decode_preferences(pref: np.ndarray, weighted: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Decode AlpacaEval preferences: return (verdict, prob_a, prob_b, bad) arrays.

    ``bad`` marks values that are no AlpacaEval preference (outside {0} ∪ [1, 2]).
    """
    pref = np.asarray(pref, dtype=float)
    missing = np.isnan(pref)
    draw = (pref == 0) | (pref == _DRAW)
    p = np.where(pref == 0, _DRAW, pref)
    bad = ~missing & ~((p >= 1) & (p <= 2))
    verdict = np.where(missing | bad, np.array(None, dtype=object), np.where(draw, "tie", np.where(p < _DRAW, "A", "B"))).astype(
        object
    )
    keep = np.asarray(weighted, dtype=bool) & ~missing & ~bad & (pref != 0)
    prob_b = np.where(keep, p - 1, np.nan)
    prob_a = np.where(keep, 2 - p, np.nan)
    return verdict, prob_a, prob_b, bad


def _judge_of(annotators: pd.Series, positions: list[int], path: Path, judge: str | None) -> pd.Series:
    if judge is not None:
        return pd.Series(judge, index=annotators.index, dtype=object)
    unknown = ~annotators.isin(list(ANNOTATOR_JUDGES))
    if unknown.any():
        i = int(np.argmax(unknown.to_numpy()))
        raise fail(
            f"unknown annotator '{annotators.iloc[i]}' (known: {', '.join(ANNOTATOR_JUDGES)}); "
            "pass --judge to name the judge model",
            path,
            positions[i],
            "annotator",
        )
    return annotators.map(ANNOTATOR_JUDGES)


def _build(raw: pd.DataFrame, positions: list[int], path: Path, judge: str | None) -> tuple[pd.DataFrame, dict[str, int]]:
    """raw columns: instance_id, annotator, generator_1, generator_2, preference, category.

    ``positions``: the source line (or `RecordNo`) of each raw row, for errors and provenance."""
    pref = pd.to_numeric(raw["preference"], errors="coerce")
    nonnum = pref.isna() & raw["preference"].map(lambda v: not is_missing(v))
    weighted = raw["annotator"].str.startswith("weighted_").to_numpy()
    verdict, prob_a, prob_b, bad = decode_preferences(pref.to_numpy(), weighted)
    bad = bad | nonnum.to_numpy()
    if bad.any():
        i = int(np.argmax(bad))
        raise fail(
            f"unknown preference '{raw['preference'].iloc[i]}': AlpacaEval uses 1, 2, 1.5 or 0 (draw), "
            "or a value in [1, 2] for weighted annotators",
            path,
            positions[i],
            "preference",
        )
    same = (raw["generator_1"] == raw["generator_2"]).to_numpy()
    model_a = np.where(same, raw["generator_1"] + "@output_1", raw["generator_1"])
    model_b = np.where(same, raw["generator_2"] + "@output_2", raw["generator_2"])
    frame = pd.DataFrame(
        {
            "instance_id": raw["instance_id"].to_numpy(),
            "judge": _judge_of(raw["annotator"], positions, path, judge).to_numpy(),
            "model_a": model_a,
            "model_b": model_b,
            "verdict": verdict,
            "prob_a": prob_a,
            "prob_b": prob_b,
            "condition": raw["annotator"].to_numpy(),
            "category": raw["category"].to_numpy(),
            "presentation": "unknown",
            "status": np.where(pd.isna(verdict), "unparsed", "parsed"),
            "reason": np.where(pd.isna(verdict), "no_verdict", np.array(None, dtype=object)),
            **pd.DataFrame([provenance(path, p) for p in positions]).to_dict("series"),
            "_pref": pref.to_numpy(),
        }
    )
    keys = ["instance_id", "judge", "model_a", "model_b", "condition"]
    before = len(frame)
    frame = frame[~frame.duplicated(keys + ["_pref"], keep="first")]
    dropped = before - len(frame)
    frame = frame.assign(replicate=frame.groupby(keys, sort=False).cumcount().astype("int64"))
    frame = frame.drop(columns="_pref").reset_index(drop=True)
    frame["status"] = frame["status"].astype(object)
    counts = {
        "rows_read": before,
        "duplicates_dropped": dropped,
        "self_pairs_tagged": int(same.sum()),
        "unparsed": int(frame["verdict"].isna().sum()),
        "ties": int((frame["verdict"] == "tie").sum()),
    }
    return frame, counts


def import_alpaca_eval_compact(path: str | Path, *, judge: str | None = None, **_: Any) -> Imported:
    """Import ``annotations_compact.csv(.gz)`` (one row per judged pair, no texts)."""
    path = Path(path)
    try:
        with open_text(path) as handle:
            raw = pd.read_csv(handle, dtype=str, keep_default_na=False)
    except (UnicodeDecodeError, pd.errors.ParserError, pd.errors.EmptyDataError, OSError) as err:
        raise InputError(f"not readable as CSV ({err})", path=str(path)) from None
    lines = [int(n) for n in np.arange(len(raw)) + 2]  # header is line 1; the derived file has no multi-line cells
    for column in ("annotator", "instruction_id", "dataset", "generator_1", "generator_2", "preference"):
        if column not in raw.columns:
            raise InputError("missing column", path=str(path), line=1, field=column)
    for column in ("annotator", "instruction_id", "generator_1", "generator_2"):
        empty = raw[column].str.strip() == ""
        if empty.any():
            i = int(np.argmax(empty.to_numpy()))
            raise fail("empty value where one is required", path, lines[i], column)
    raw = raw.assign(
        instance_id="alpaca_eval/" + raw["instruction_id"].str.strip(),
        category=raw["dataset"].replace({"": None}),
        preference=raw["preference"].replace({"": None}),
    )
    frame, counts = _build(raw, lines, path, judge)
    notes = [_ORDER_NOTE]
    return Imported(tables={"pairwise": frame}, main="pairwise", counts=counts, notes=notes, source=str(path))


def _instruction_ids(instructions: str | Path | None) -> dict[str, str] | None:
    if instructions is None:
        return None
    path = Path(instructions)
    mapping = {}
    for number, record in read_json_list(path):
        text = require(record, "instruction", path, number)
        ident = require(record, "instruction_id", path, number)
        mapping[str(text)] = str(ident)
    return mapping


def import_alpaca_eval(
    path: str | Path, *, judge: str | None = None, instructions: str | Path | None = None, **_: Any
) -> Imported:
    """Import AlpacaEval's ``annotations.json`` (a JSON list of judged pairs with their texts).

    ``instructions``: a JSON list of ``{instruction_id, instruction}`` (like the project's
    ``instructions.json``) to give instance ids that match the compact file; without it the id is
    ``alpaca_eval/sha:<first 12 hex of SHA-256 of the instruction>``.
    """
    path = Path(path)
    ids = _instruction_ids(instructions)
    records = read_json_list(path)
    rows, texts, lines = [], [], []
    empty = 0
    for number, record in records:
        instruction = require(record, "instruction", path, number)
        for key in ("generator_1", "generator_2", "annotator"):
            require(record, key, path, number)
        for key in ("output_1", "output_2"):  # an empty answer is a recorded answer, not a broken file
            output = require(record, key, path, number, allow_missing=True)
            if output is not None and not isinstance(output, str):
                raise fail("expected the output text (a string, possibly empty)", path, number, key)
            empty += is_missing(output)
        if "preference" not in record:
            raise fail("missing field", path, number, "preference")
        if ids is not None:
            if instruction not in ids:
                raise fail("instruction not found in the instructions file", path, number, "instruction")
            instance = f"alpaca_eval/{ids[instruction]}"
        else:
            instance = "alpaca_eval/sha:" + hashlib.sha256(instruction.encode()).hexdigest()[:12]
        preference = record["preference"]
        if isinstance(preference, bool) or not (preference is None or isinstance(preference, (int, float))):
            raise fail(f"unknown preference {json.dumps(preference)}", path, number, "preference")
        rows.append(
            {
                "instance_id": instance,
                "annotator": str(record["annotator"]),
                "generator_1": str(record["generator_1"]),
                "generator_2": str(record["generator_2"]),
                "preference": np.nan if preference is None else float(preference),
                "category": record.get("dataset"),
            }
        )
        lines.append(number)
        same = record["generator_1"] == record["generator_2"]
        for side in ("1", "2"):
            model = str(record[f"generator_{side}"]) + (f"@output_{side}" if same else "")
            output = record[f"output_{side}"]
            texts.append(
                {
                    "instance_id": instance,
                    "prompt": instruction,
                    "tests": None,
                    "model": model,
                    "text": "" if output is None else str(output),
                }
            )
    if not rows:
        raise InputError("no annotations in the file", path=str(path))
    frame, counts = _build(pd.DataFrame(rows), lines, path, judge)
    counts["empty_outputs"] = empty
    text_frame = pd.DataFrame(texts).drop_duplicates(["instance_id", "model"]).reset_index(drop=True)
    notes = [_ORDER_NOTE]
    if empty:
        notes.append(f"{empty} outputs are empty: kept as recorded empty answers (the judgment of them stands)")
    return Imported(tables={"pairwise": frame}, main="pairwise", texts=text_frame, counts=counts, notes=notes, source=str(path))


FORMATS = (
    Format(
        name="alpaca-eval-compact",
        summary="this project's AlpacaEval annotations_compact.csv.gz (one row per judged pair, no texts)",
        read=import_alpaca_eval_compact,
        tables=("pairwise",),
        upstream="tatsu-lab/alpaca_eval results/*/*/annotations.json (derived, see ../shared/data/PROVENANCE.md)",
        options=("judge",),
    ),
    Format(
        name="alpaca-eval",
        summary="AlpacaEval annotations.json (instruction, output_1/2, generator_1/2, annotator, preference)",
        read=import_alpaca_eval,
        tables=("pairwise",),
        upstream="tatsu-lab/alpaca_eval src/alpaca_eval/annotators (annotations.json), metrics/helpers.py",
        options=("judge", "instructions"),
    ),
)
