"""AlpacaEval importers: preference decoding, fixtures, and the leaderboard reproduction."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from nepotism.errors import InputError
from nepotism.importers import alpaca_eval
from nepotism.importers.alpaca_eval import (
    decode_preferences,
    import_alpaca_eval,
    import_alpaca_eval_compact,
)

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "importers"
SHARED = Path(__file__).resolve().parents[2] / ".." / "shared" / "data" / "alpaca_eval"
needs_shared = pytest.mark.skipif(not SHARED.exists(), reason="../shared/data/alpaca_eval is not present beside the repo")


def test_all_is_public_api():
    assert set(alpaca_eval.__all__) == {
        "ANNOTATOR_JUDGES",
        "FORMATS",
        "decode_preferences",
        "import_alpaca_eval",
        "import_alpaca_eval_compact",
    }
    for name in alpaca_eval.__all__:
        assert hasattr(alpaca_eval, name)


def test_decode_preferences_encoding():
    pref = np.array([1.0, 2.0, 1.5, 0.0, np.nan, 1.25, 1.75, 3.0, 0.5])
    weighted = np.array([False, False, False, False, False, True, True, False, False])
    verdict, prob_a, prob_b, bad = decode_preferences(pref, weighted)
    assert list(verdict[:7]) == ["A", "B", "tie", "tie", None, "A", "B"]
    assert list(bad) == [False] * 7 + [True, True]
    assert prob_b[5] == pytest.approx(0.25) and prob_a[5] == pytest.approx(0.75)
    assert prob_b[6] == pytest.approx(0.75)
    assert np.isnan(prob_a[:5]).all()  # discrete annotators carry no probabilities


def test_missing_preference_is_unparsed_not_tie():
    verdict, prob_a, _, _ = decode_preferences(np.array([np.nan]), np.array([True]))
    assert verdict[0] is None and np.isnan(prob_a[0])


def test_compact_fixture():
    result = import_alpaca_eval_compact(FIXTURES / "annotations_compact_sample.csv.gz")
    frame = result.tables["pairwise"]
    assert result.main == "pairwise"
    assert result.counts["rows_read"] == 24
    assert result.counts["duplicates_dropped"] == 1
    assert result.counts["unparsed"] == 2
    assert frame["instance_id"].str.startswith("alpaca_eval/").all()
    assert (frame["model_a"] != frame["model_b"]).all()
    tagged = frame[frame["model_a"].str.endswith("@output_1")]
    assert len(tagged) == 2 and tagged["model_b"].str.endswith("@output_2").all()
    gpt4 = frame[frame["condition"] == "alpaca_eval_gpt4"]
    assert set(gpt4["judge"]) == {"gpt4_0314"}
    assert set(frame.loc[frame["condition"] == "alpaca_eval_gpt4_0613", "judge"]) == {"gpt4_0613"}
    assert set(frame.loc[frame["condition"] == "bedrock_claude", "judge"]) == {"claude-2"}
    weighted = frame[frame["condition"] == "weighted_alpaca_eval_gpt4_turbo"]
    assert set(weighted["judge"]) == {"gpt4_1106_preview"}
    assert weighted["prob_b"].notna().all()
    assert np.allclose(weighted["prob_a"] + weighted["prob_b"], 1.0)
    assert gpt4["prob_a"].isna().all()
    assert set(frame["category"]) <= {"helpful_base", "selfinstruct", "oasst", "koala", "vicuna"}


def test_compact_rows_validate_as_pairwise_table(tmp_path):
    from nepotism.tables import read_table, write_table

    frame = import_alpaca_eval_compact(FIXTURES / "annotations_compact_sample.csv.gz").tables["pairwise"]
    write_table(frame, tmp_path / "t.csv")
    table = read_table(tmp_path / "t.csv")
    assert table.kind == "pairwise" and len(table) == len(frame)
    # AlpacaEval randomised the order the judge saw and stored the preference against output_1
    assert set(table.frame["presentation"]) == {"unknown"}


def _write_csv(tmp_path, rows, header="annotator_config,annotator,instruction_id,dataset,generator_1,generator_2,preference"):
    path = tmp_path / "bad.csv"
    path.write_text(header + "\n" + "\n".join(rows) + "\n")
    return path


def test_compact_unknown_preference_names_line_and_field(tmp_path):
    path = _write_csv(
        tmp_path, ["alpaca_eval_gpt4,alpaca_eval_gpt4,0,koala,a,b,1", "alpaca_eval_gpt4,alpaca_eval_gpt4,1,koala,a,b,7"]
    )
    with pytest.raises(InputError) as err:
        import_alpaca_eval_compact(path)
    assert err.value.line == 3 and err.value.field == "preference" and err.value.path == str(path)


def test_compact_unknown_annotator_and_judge_override(tmp_path):
    path = _write_csv(tmp_path, ["x,mystery_judge,0,koala,a,b,1"])
    with pytest.raises(InputError) as err:
        import_alpaca_eval_compact(path)
    assert err.value.field == "annotator" and err.value.line == 2
    frame = import_alpaca_eval_compact(path, judge="some-model").tables["pairwise"]
    assert frame["judge"].tolist() == ["some-model"] and frame["condition"].tolist() == ["mystery_judge"]


def test_compact_missing_column(tmp_path):
    path = _write_csv(
        tmp_path,
        ["a,alpaca_eval_gpt4,0,koala,a,b"],
        header="annotator_config,annotator,instruction_id,dataset,generator_1,generator_2",
    )
    with pytest.raises(InputError) as err:
        import_alpaca_eval_compact(path)
    assert err.value.field == "preference"


def test_compact_repeated_key_with_other_preference_becomes_replicate(tmp_path):
    path = _write_csv(
        tmp_path, ["c,alpaca_eval_gpt4,0,koala,a,b,1", "c,alpaca_eval_gpt4,0,koala,a,b,2", "c,alpaca_eval_gpt4,0,koala,a,b,2"]
    )
    result = import_alpaca_eval_compact(path)
    frame = result.tables["pairwise"]
    assert frame["replicate"].tolist() == [0, 1] and frame["verdict"].tolist() == ["A", "B"]
    assert result.counts["duplicates_dropped"] == 1


def test_annotations_json_fixture_with_instruction_ids():
    result = import_alpaca_eval(
        FIXTURES / "alpaca_eval_annotations.json", instructions=FIXTURES / "alpaca_eval_instructions.json"
    )
    frame = result.tables["pairwise"]
    raw = json.loads((FIXTURES / "alpaca_eval_annotations.json").read_text())
    assert len(frame) == len(raw)
    assert frame["verdict"].isna().sum() == 1
    compact = import_alpaca_eval_compact(FIXTURES / "annotations_compact_sample.csv.gz").tables["pairwise"]
    ids = set(frame["instance_id"])
    assert ids <= {f"alpaca_eval/{i}" for i in range(805)}
    # the same judgments as the compact file for the rows both hold
    both = frame.merge(compact, on=["instance_id", "judge", "model_a", "model_b", "condition"], suffixes=("", "_c"))
    both = both[both["verdict"].notna()]
    assert len(both) >= 4 and (both["verdict"] == both["verdict_c"]).all()
    texts = result.texts
    assert set(texts.columns) == {"instance_id", "prompt", "tests", "model", "text"}
    assert len(texts) == texts[["instance_id", "model"]].drop_duplicates().shape[0]
    assert set(texts["model"]) == {"gpt4_1106_preview", "claude-2", "text_davinci_003"}


def test_annotations_json_without_instructions_uses_hash_ids():
    frame = import_alpaca_eval(FIXTURES / "alpaca_eval_annotations.json").tables["pairwise"]
    assert frame["instance_id"].str.match(r"^alpaca_eval/sha:[0-9a-f]{12}$").all()


def test_annotations_json_missing_field(tmp_path):
    raw = json.loads((FIXTURES / "alpaca_eval_annotations.json").read_text())
    del raw[1]["output_2"]
    path = tmp_path / "annotations.json"
    path.write_text(json.dumps(raw))
    with pytest.raises(InputError) as err:
        import_alpaca_eval(path)
    assert (err.value.record, err.value.field) == (2, "output_2") and "record 2" in str(err.value)


def test_annotations_json_bad_preference_type(tmp_path):
    raw = json.loads((FIXTURES / "alpaca_eval_annotations.json").read_text())
    raw[0]["preference"] = "first"
    path = tmp_path / "annotations.json"
    path.write_text(json.dumps(raw))
    with pytest.raises(InputError) as err:
        import_alpaca_eval(path)
    assert (err.value.record, err.value.field) == (1, "preference") and "record 1" in str(err.value)


@pytest.fixture(scope="module")
def real_compact():
    return import_alpaca_eval_compact(SHARED / "annotations_compact.csv.gz")


@needs_shared
@pytest.mark.parametrize(
    ("condition", "leaderboard", "generators"),
    [
        (
            "alpaca_eval_gpt4",
            "alpaca_eval_gpt4_leaderboard.csv",
            ["claude-2", "gpt4", "Yi-34B-Chat", "llama-2-70b-chat-hf", "phi-2", "vicuna-13b", "gpt35_turbo_instruct"],
        ),
        (
            "weighted_alpaca_eval_gpt4_turbo",
            "weighted_alpaca_eval_gpt4_turbo_leaderboard.csv",
            [
                "claude-2",
                "claude-2.1_concise",
                "gpt-3.5-turbo-1106",
                "vicuna-13b-v1.5",
                "gpt4_1106_preview@output_2",
                "NullModel",
            ],
        ),
    ],
)
def test_decoding_reproduces_alpaca_eval_leaderboard(real_compact, condition, leaderboard, generators):
    frame = real_compact.tables["pairwise"]
    board = pd.read_csv(SHARED / leaderboard, index_col=0)
    rows = frame[frame["condition"] == condition]
    checked = 0
    for generator in generators:
        mine = rows[rows["model_b"] == generator]
        name = generator.split("@")[0]
        if name == "NullModel":  # its results folder holds the generator called "example"
            mine = rows[rows["model_b"] == "example"]
        expected = board.loc[name, ["n_wins", "n_wins_base", "n_draws", "n_total"]].astype(int).tolist()
        got = [
            int((mine["verdict"] == "B").sum()),
            int((mine["verdict"] == "A").sum()),
            int((mine["verdict"] == "tie").sum()),
            int(mine["verdict"].notna().sum()),
        ]
        assert got == expected, generator
        checked += 1
    assert checked == len(generators)


@needs_shared
def test_real_compact_file_counts(real_compact):
    result = real_compact
    frame = result.tables["pairwise"]
    assert result.counts["rows_read"] == 108665
    assert int(frame["verdict"].isna().sum()) == 64  # the 64 NaN preferences stay unparsed
    assert set(frame["judge"]) == {"gpt4_0314", "gpt4_0613", "gpt4_1106_preview", "claude-2"}


def test_annotations_json_empty_output_is_a_recorded_empty(tmp_path):
    """One empty output does not reject the file: it is an answer (empty), and its judgment stands."""
    raw = json.loads((FIXTURES / "alpaca_eval_annotations.json").read_text())
    raw[1]["output_2"] = ""
    raw[2]["output_1"] = None
    path = tmp_path / "annotations.json"
    path.write_text(json.dumps(raw))
    result = import_alpaca_eval(path)
    assert result.counts["empty_outputs"] == 2 and any("empty" in n for n in result.notes)
    assert len(result.tables["pairwise"]) == len(import_alpaca_eval(FIXTURES / "alpaca_eval_annotations.json").tables["pairwise"])
    texts = result.texts.set_index(["instance_id", "model"])
    instance = result.tables["pairwise"]["instance_id"].iloc[1]
    assert texts.loc[(instance, raw[1]["generator_2"]), "text"] == ""
    assert list(result.tables["pairwise"]["source_record"][:3]) == [1, 2, 3]


def test_annotations_json_output_must_be_text(tmp_path):
    raw = json.loads((FIXTURES / "alpaca_eval_annotations.json").read_text())
    raw[2]["output_1"] = {"text": "x"}
    path = tmp_path / "annotations.json"
    path.write_text(json.dumps(raw))
    with pytest.raises(InputError) as err:
        import_alpaca_eval(path)
    assert (err.value.record, err.value.field) == (3, "output_1") and "record 3" in str(err.value)
