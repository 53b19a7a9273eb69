"""The recorded-judgment table formats: reading, kind detection and every error path."""

import gzip
import json

import pandas as pd
import pytest

from nepotism.errors import InputError, ValidationError
from nepotism.tables import KINDS, detect_kind, read_table, validate, write_table

PAIRWISE = "instance_id,judge,model_a,model_b,verdict\n"


def write(tmp_path, name, text):
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


@pytest.mark.parametrize(
    "columns, kind",
    [
        (["instance_id", "judge", "model_a", "model_b", "verdict"], "pairwise"),
        (["instance_id", "judge", "model", "score"], "pointwise"),
        (["instance_id", "judge", "model", "rubric_id", "met"], "rubric"),
        (["instance_id", "model_a", "model_b", "winner"], "preference-ref"),
        (["instance_id", "model", "correct"], "correctness-ref"),
        (["instance_id", "model", "score"], "correctness-ref"),
        (["instance_id", "model", "rubric_id", "met"], "rubric-ref"),
        (["instance_id", "rubric_id", "text", "points", "category"], "rubric-items"),
        (["instance_id", "scorer", "model", "perplexity"], "perplexity"),
        (["instance_id", "something"], None),
    ],
)
def test_detect_kind(columns, kind):
    assert detect_kind(columns) == kind


def test_every_kind_is_detectable():
    assert set(KINDS) == {
        "pairwise",
        "pointwise",
        "rubric",
        "preference-ref",
        "correctness-ref",
        "rubric-ref",
        "rubric-items",
        "rubric-labels",
        "recognition",
        "recognition-pairwise",
        "perplexity",
    }


def test_perplexity_table_checks_values_and_statuses(tmp_path):
    head = "instance_id,scorer,model,perplexity,status,reason\n"
    table = read_table(write(tmp_path, "p.csv", head + "1,j,x,2.5,ok,\n1,j,y,,failed,timeout\n"))
    assert table.kind == "perplexity" and table.frame["status"].tolist() == ["ok", "failed"]
    for body, line, field in (
        ("1,j,x,0.5,ok,\n", 2, "perplexity"),
        ("1,j,x,,ok,\n", 2, "perplexity"),
        ("1,j,x,2,,\n1,j,y,3,maybe,\n", 3, "status"),
        ("1,j,x,2,,\n1,j,x,3,,\n", 3, None),
    ):
        with pytest.raises(InputError) as err:
            read_table(write(tmp_path, "bad.csv", head + body))
        assert err.value.line == line and (field is None or err.value.field == field)


def test_pairwise_csv_normalises(tmp_path):
    path = write(tmp_path, "j.csv", PAIRWISE + "1,gpt-4,x,y,a\n1,gpt-4,y,x,TIE\n2,gpt-4,x,y,\n")
    table = read_table(path)
    assert table.kind == "pairwise"
    assert table.frame["verdict"].tolist() == ["A", "tie", None]
    assert table.frame["condition"].tolist() == ["default"] * 3
    assert table.frame["replicate"].tolist() == [0, 0, 0]
    assert table.frame["_line"].tolist() == [2, 3, 4]


def test_csv_line_numbers_follow_multiline_cells(tmp_path):
    text = PAIRWISE.replace("verdict", "verdict,category") + '1,j,x,y,A,"two\nlines"\n2,j,x,y,Q,c\n'
    with pytest.raises(InputError) as err:
        read_table(write(tmp_path, "m.csv", text))
    assert err.value.line == 4 and err.value.field == "verdict"


@pytest.mark.parametrize(
    "body, line, field, words",
    [
        ("1,j,x,y,maybe\n", 2, "verdict", "unknown verdict"),
        ("1,j,x,x,A\n", 2, "model_b", "same as model_a"),
        ("1,,x,y,A\n", 2, "judge", "empty value"),
        ("1,j,x,y,A\n1,j,x,y,B\n", 3, None, "duplicate row"),
        ("1,j,x,y\n", 2, None, "fields where the header has"),
    ],
)
def test_pairwise_errors_name_file_line_field(tmp_path, body, line, field, words):
    path = write(tmp_path, "bad.csv", PAIRWISE + body)
    with pytest.raises(InputError) as err:
        read_table(path)
    assert err.value.path == str(path)
    assert err.value.line == line
    if field:
        assert err.value.field == field
    assert words in str(err.value)


def test_duplicate_message_points_at_first_occurrence(tmp_path):
    path = write(tmp_path, "dup.csv", PAIRWISE + "1,j,x,y,A\n2,j,x,y,A\n1,j,x,y,B\n")
    with pytest.raises(InputError, match="as line 2"):
        read_table(path)


def test_missing_column(tmp_path):
    path = write(tmp_path, "m.csv", "instance_id,judge,model_a,model_b,verdict\n1,j,x,y,A\n")
    with pytest.raises(InputError) as err:
        read_table(path, kind="pointwise")
    assert err.value.field == "model" and err.value.line == 1


def test_probability_out_of_range(tmp_path):
    path = write(tmp_path, "p.csv", "instance_id,judge,model_a,model_b,verdict,prob_a\n1,j,x,y,A,1.5\n")
    with pytest.raises(InputError) as err:
        read_table(path)
    assert err.value.field == "prob_a" and "outside" in str(err.value)


def test_non_numeric_score(tmp_path):
    path = write(tmp_path, "s.csv", "instance_id,judge,model,score\n1,j,x,7\n2,j,x,seven\n")
    with pytest.raises(InputError) as err:
        read_table(path)
    assert (err.value.line, err.value.field) == (3, "score")


def test_pointwise_empty_score_is_unparsed_not_zero(tmp_path):
    table = read_table(write(tmp_path, "s.csv", "instance_id,judge,model,score\n1,j,x,\n"))
    assert table.frame["score"].isna().all()


def test_rubric_met_values(tmp_path):
    table = read_table(write(tmp_path, "r.csv", "instance_id,judge,model,rubric_id,met\n1,j,x,r1,true\n1,j,x,r2,0\n1,j,x,r3,\n"))
    assert table.frame["met"].tolist() == [True, False, None]
    with pytest.raises(InputError) as err:
        read_table(write(tmp_path, "r2.csv", "instance_id,judge,model,rubric_id,met\n1,j,x,r1,sometimes\n"))
    assert err.value.field == "met"


def test_rubric_setup_column(tmp_path):
    head = "instance_id,judge,model,rubric_id,met,setup\n"
    table = read_table(write(tmp_path, "s.csv", head + "1,j,x,r1,true,single-rubric\n1,j,x,r1,false,all-rubrics\n"))
    assert table.frame["setup"].tolist() == ["single-rubric", "all-rubrics"]  # same key, two setups: allowed
    with pytest.raises(InputError) as err:
        read_table(write(tmp_path, "d.csv", head + "1,j,x,r1,true,all-rubrics\n1,j,x,r1,false,all-rubrics\n"))
    assert err.value.line == 3 and "duplicate" in err.value.message
    with pytest.raises(InputError) as err:
        read_table(write(tmp_path, "b.csv", head + "1,j,x,r1,true,every-rubric\n"))
    assert err.value.field == "setup" and err.value.line == 2


def test_mixed_kinds_in_columns(tmp_path):
    path = write(tmp_path, "mix.csv", "instance_id,judge,model_a,model_b,verdict,model,score\n1,j,x,y,A,x,3\n")
    with pytest.raises(InputError, match="several kinds"):
        read_table(path)


def test_mixed_kinds_in_jsonl_rows(tmp_path):
    rows = [
        {"instance_id": "1", "judge": "j", "model_a": "x", "model_b": "y", "verdict": "A"},
        {"instance_id": "1", "judge": "j", "model": "x", "score": 3},
    ]
    path = write(tmp_path, "mix.jsonl", "\n".join(json.dumps(r) for r in rows) + "\n")
    with pytest.raises(InputError) as err:
        read_table(path)
    assert err.value.line == 2 and "one file holds one kind" in str(err.value)


def test_bad_json_line(tmp_path):
    path = write(tmp_path, "b.jsonl", '{"instance_id": 1}\n{oops\n')
    with pytest.raises(InputError) as err:
        read_table(path)
    assert err.value.line == 2


def test_unknown_extension_and_missing_file(tmp_path):
    with pytest.raises(InputError, match="unknown file type"):
        read_table(write(tmp_path, "x.txt", "a"))
    with pytest.raises(InputError, match="no such file"):
        read_table(tmp_path / "nope.csv")


def test_unknown_columns_cannot_be_classified(tmp_path):
    with pytest.raises(InputError, match="cannot tell the table kind"):
        read_table(write(tmp_path, "u.csv", "a,b\n1,2\n"))


def test_preference_reference_winner_must_be_a_candidate(tmp_path):
    good = read_table(write(tmp_path, "p.csv", "instance_id,model_a,model_b,winner\n1,x,y,TIE\n2,x,y,y\n"))
    assert good.frame["winner"].tolist() == ["tie", "y"]
    with pytest.raises(InputError) as err:
        read_table(write(tmp_path, "q.csv", "instance_id,model_a,model_b,winner\n1,x,y,z\n"))
    assert err.value.field == "winner"


def test_correctness_reference_needs_a_value(tmp_path):
    with pytest.raises(InputError) as err:
        read_table(write(tmp_path, "c.csv", "instance_id,model,correct\n1,x,\n"))
    assert err.value.field == "correct"


@pytest.mark.parametrize("suffix", [".csv", ".jsonl", ".parquet", ".csv.gz", ".jsonl.gz"])
def test_round_trip_every_format(tmp_path, suffix):
    frame = pd.DataFrame(
        {
            "instance_id": ["1", "1"],
            "judge": ["j", "j"],
            "model_a": ["x", "y"],
            "model_b": ["y", "x"],
            "verdict": ["A", None],
            "prob_a": [0.7, None],
        }
    )
    path = write_table(frame, tmp_path / f"out{suffix}")
    table = read_table(path)
    assert table.frame["verdict"].tolist() == ["A", None]
    assert table.frame["prob_a"].iloc[0] == pytest.approx(0.7)


def test_write_is_atomic_on_failure(tmp_path):
    class Exploding(pd.DataFrame):
        def to_csv(self, *args, **kwargs):
            raise RuntimeError("disk full")

    target = tmp_path / "out.csv"
    with pytest.raises(RuntimeError):
        write_table(Exploding({"a": [1]}), target)
    assert list(tmp_path.iterdir()) == []


def test_gzip_csv(tmp_path):
    path = tmp_path / "j.csv.gz"
    with gzip.open(path, "wt") as handle:
        handle.write(PAIRWISE + "1,j,x,y,B\n")
    assert read_table(path).frame["verdict"].tolist() == ["B"]


def test_recognition_kinds(tmp_path):
    pointwise = read_table(write(tmp_path, "r.csv", "instance_id,judge,model,claimed\n1,j,j,yes\n1,j,x,\n"))
    assert pointwise.kind == "recognition" and pointwise.frame["claimed"].tolist() == [True, None]
    pairwise = read_table(write(tmp_path, "p.csv", "instance_id,judge,model_a,model_b,choice\n1,j,j,x,b\n"))
    assert pairwise.kind == "recognition-pairwise" and pairwise.frame["choice"].tolist() == ["B"]
    with pytest.raises(InputError) as err:
        read_table(write(tmp_path, "q.csv", "instance_id,judge,model_a,model_b,choice\n1,j,j,x,C\n"))
    assert err.value.field == "choice"


def test_perplexity_columns_must_be_at_least_one(tmp_path):
    path = write(tmp_path, "pp.csv", PAIRWISE.replace("verdict", "verdict,perplexity_a") + "1,j,x,y,A,0.5\n")
    with pytest.raises(InputError) as err:
        read_table(path)
    assert err.value.field == "perplexity_a"


def test_key_columns_are_public_and_checked():
    from nepotism.tables import key_columns

    assert key_columns("pointwise") == ("instance_id", "judge", "model", "condition", "replicate")
    assert key_columns("preference-ref") == ("instance_id", "model_a", "model_b", "annotator")
    with pytest.raises(InputError):
        key_columns("nope")


def test_preference_reference_annotators(tmp_path):
    """Several annotators of one pair are rows of their own; the same annotator twice is a duplicate."""
    path = tmp_path / "ref.csv"
    path.write_text("instance_id,model_a,model_b,winner,annotator\n1,x,y,x,expert_1\n1,x,y,tie,expert_2\n1,x,y,y,\n")
    frame = read_table(path).frame
    assert frame["annotator"].tolist()[:2] == ["expert_1", "expert_2"] and pd.isna(frame["annotator"].iloc[2])
    path.write_text("instance_id,model_a,model_b,winner,annotator\n1,x,y,x,expert_1\n1,x,y,y,expert_1\n")
    with pytest.raises(InputError) as err:
        read_table(path)
    assert err.value.line == 3 and "line 2" in err.value.message
    path.write_text("instance_id,model_a,model_b,winner,annotator\n1,x,y,x,\n1,x,y,y,\n")
    with pytest.raises(InputError) as err:  # two votes without annotator ids cannot be told apart
        read_table(path)
    assert err.value.line == 3 and "line 2" in err.value.message


def test_presentation_defaults_to_a_first_and_rejects_other_values(tmp_path):
    path = write(tmp_path, "o.csv", "instance_id,judge,model_a,model_b,verdict,presentation\n1,j,x,y,A,unknown\n2,j,x,y,B,\n")
    assert read_table(path).frame["presentation"].tolist() == ["unknown", "a-first"]
    bad = write(tmp_path, "b.csv", "instance_id,judge,model_a,model_b,verdict,presentation\n1,j,x,y,A,random\n")
    with pytest.raises(InputError) as err:
        read_table(bad)
    assert err.value.line == 2 and err.value.field == "presentation" and "a-first, unknown" in str(err.value)


def test_tsv_is_read_and_a_semicolon_or_tab_csv_is_hinted(tmp_path):
    tsv = write(tmp_path, "t.tsv", "instance_id\tjudge\tmodel_a\tmodel_b\tverdict\n1\tj\tx\ty\tA\n")
    assert read_table(tsv).frame["verdict"].tolist() == ["A"]
    for name, sep, word in (("semi.csv", ";", "semicolon"), ("tab.csv", "\t", "tab")):
        path = write(
            tmp_path,
            name,
            sep.join(["instance_id", "judge", "model_a", "model_b", "verdict"])
            + "\n"
            + sep.join(["1", "j", "x", "y", "A"])
            + "\n",
        )
        with pytest.raises(InputError) as err:
            read_table(path)
        assert err.value.line == 1 and f"{word}-separated" in str(err.value)


@pytest.mark.parametrize("name, text", [("h.csv", PAIRWISE), ("e.jsonl", "")])
def test_a_table_with_no_rows_is_an_error(tmp_path, name, text):
    path = write(tmp_path, name, text)
    with pytest.raises(InputError) as err:
        read_table(path, kind="pairwise")
    assert "no rows" in str(err.value) or "empty" in str(err.value)


def test_duplicates_are_found_on_the_cleaned_values_of_every_key_column():
    """Keys compare after stripping (" x" is x); another replicate, condition or order is no duplicate."""
    base = {
        "instance_id": "q1",
        "judge": "j",
        "model_a": "x",
        "model_b": "y",
        "verdict": "A",
        "condition": "default",
        "replicate": 0,
    }
    rows = [base, {**base, "replicate": 1}, {**base, "condition": "swap"}, {**base, "model_a": "y", "model_b": "x"}]
    assert len(validate(pd.DataFrame(rows), "pairwise").frame) == 4
    for other in (
        {**base, "model_a": " x "},
        {**base, "instance_id": "q1\t", "verdict": "B"},
        {**base, "condition": " default", "verdict": "tie"},
    ):
        with pytest.raises(ValidationError) as err:
            validate(
                pd.DataFrame([base, {"instance_id": "q0", **{k: v for k, v in base.items() if k != "instance_id"}}, other]),
                "pairwise",
            )
        assert err.value.row == 2 and "duplicate row" in err.value.message and "row 0" in err.value.message


# --------------------------------------------------------------------- limits and naming the column


def test_a_missing_column_is_named_with_the_kind_that_needs_it(tmp_path):
    from nepotism.tables import kind_unknown

    with pytest.raises(InputError) as err:
        read_table(write(tmp_path, "p.csv", "instance_id,judge,model_a,model_b,prob_a\n1,j,x,y,0.5\n"))
    assert (err.value.line, err.value.field) == (1, "verdict") and "a pairwise table needs 'verdict'" in str(err.value)
    message, column = kind_unknown(["instance_id", "judge", "model_a", "model_b"])  # two kinds fit as well
    assert column is None and "'verdict'" in message and "'choice'" in message
    message, column = kind_unknown(["instance_id", "model", "note"])
    assert column is None and "a correctness-ref table needs 'correct' or 'score'" in message
    assert kind_unknown(["a", "b"]) == ("cannot tell the table kind from its columns (a, b)", None)
    with pytest.raises(ValidationError) as err:
        validate(pd.DataFrame({"instance_id": ["1"], "judge": ["j"], "model": ["x"], "claimd": [True], "category": ["c"]}))
    assert "needs 'claimed'" in str(err.value)


def test_a_repeated_column_is_named_in_csv_and_parquet(tmp_path):
    with pytest.raises(InputError) as err:
        read_table(write(tmp_path, "d.csv", "instance_id,judge,model,score, judge\n1,j,x,7,k\n"))
    assert (err.value.line, err.value.field) == (1, "judge") and "'judge' appears twice" in str(err.value)
    import pyarrow as pa
    import pyarrow.parquet as pq

    path = tmp_path / "d.parquet"
    pq.write_table(
        pa.Table.from_arrays(
            [pa.array(["1"]), pa.array(["j"]), pa.array(["x"]), pa.array([7.0]), pa.array([8.0])],
            names=["instance_id", "judge", "model", "score", "score"],
        ),
        path,
    )
    with pytest.raises(InputError) as err:
        read_table(path)
    assert err.value.field == "score" and "appears twice" in str(err.value)


@pytest.mark.parametrize("suffix", [".csv", ".jsonl", ".parquet", ".csv.gz"])
def test_a_value_longer_than_the_cell_limit_is_refused_naming_line_and_field(tmp_path, suffix):
    from nepotism.input_limits import InputLimits, applied

    frame = pd.DataFrame(
        {"instance_id": ["1", "2"], "judge": ["j", "j"], "model": ["x", "x"], "score": [7, 8], "note": ["short", "n" * 100]}
    )
    path = write_table(frame, tmp_path / f"t{suffix}")
    with applied(InputLimits(cell=99)), pytest.raises(InputError) as err:
        read_table(path)
    assert err.value.line == 3 - (suffix in (".jsonl", ".parquet")) and "--max-cell" in str(err.value)
    assert err.value.field == ("note" if suffix != ".csv" and suffix != ".csv.gz" else None)
    with applied(InputLimits(cell=100)):
        assert read_table(path).frame["note"].tolist() == ["short", "n" * 100]


def test_a_line_longer_than_the_limit_is_refused_in_csv_and_jsonl(tmp_path):
    from nepotism.input_limits import InputLimits, applied

    csv_path = write(tmp_path, "t.csv", "instance_id,judge,model,score,note\n1,j,x,7,a\n2,j,x,8," + "b" * 200 + "\n")
    jsonl = write(tmp_path, "t.jsonl", '{"instance_id": "1", "judge": "j", "model": "x", "score": 7, "n": "' + "c" * 200 + '"}\n')
    for path, line in ((csv_path, 3), (jsonl, 1)):
        with applied(InputLimits(line=100)), pytest.raises(InputError) as err:
            read_table(path)
        assert err.value.line == line and "a line longer than 100 characters" in str(err.value)


def test_a_gzip_table_inflating_past_the_limit_is_refused(tmp_path):
    from nepotism.input_limits import InputLimits, applied

    path = tmp_path / "t.csv.gz"
    path.write_bytes(gzip.compress(("instance_id,judge,model,score\n" + "1,j,x,7\n" * 200_000).encode()))
    with applied(InputLimits(decompressed=1 << 20)), pytest.raises(InputError) as err:
        read_table(path)
    assert err.value.path == str(path) and "--max-decompressed" in str(err.value)


def _boolean_per_row(values: list) -> list | str:
    """The per-row reading of a true/false column: each value, or the first bad one's message."""
    import numpy as np

    out = []
    for value in values:
        if value is None or (isinstance(value, float) and np.isnan(value)) or (isinstance(value, str) and not value.strip()):
            out.append(None)
        elif isinstance(value, (bool, np.bool_)):
            out.append(bool(value))
        elif str(value).strip().lower() in {"true", "1", "yes", "t", "y"}:
            out.append(True)
        elif str(value).strip().lower() in {"false", "0", "no", "f", "n"}:
            out.append(False)
        else:
            return f"'{value}' is not true/false"
    return out


@pytest.mark.parametrize("seed", range(40))
def test_a_true_false_column_reads_as_the_per_row_rule(seed):
    """`met` read from a bool column, a text column (once per distinct value) or a mixed one gives
    the per-row rule's values, and a bad value fails at the row and with the message the rule names."""
    import numpy as np

    rng = np.random.default_rng(seed)
    pools = {
        "bool": [True, False],
        "text": ["true", " Yes", "0", "n", "", "  ", "F", None, float("nan")],
        "bad text": ["true", "no", "maybe", "", None],
        "mixed": [True, "no", 1, None, 0.0, "t"],
        "bool and missing": [True, False, None, float("nan"), np.True_, np.False_],  # a nullable Parquet column
    }
    kind = list(pools)[seed % len(pools)]
    pool = pools[kind]
    values = [pool[i] for i in rng.integers(0, len(pool), size=int(rng.integers(1, 60)))]
    frame = pd.DataFrame({"instance_id": [f"q{i}" for i in range(len(values))], "judge": "j", "model": "m", "rubric_id": "r1"})
    frame["met"] = pd.Series(values, dtype=bool if kind == "bool" else object)
    expected = _boolean_per_row(values)
    if isinstance(expected, str):
        with pytest.raises(ValidationError) as raised:
            validate(frame, "rubric")
        bad = next(i for i, v in enumerate(values) if _boolean_per_row([v]) == expected)
        assert expected in str(raised.value) and raised.value.field == "met" and raised.value.row == bad
    else:
        got = validate(frame, "rubric").frame["met"].tolist()
        assert got == expected and [type(v) for v in got] == [type(v) for v in expected]


def test_a_nullable_boolean_column_reads_missing_cells_as_empty(tmp_path):
    """pandas' nullable "boolean" dtype and a Parquet bool column with nulls: a missing cell is an
    empty one (None), as the docstring of `Validator.boolean` says — not "'<NA>' is not true/false"."""
    frame = pd.DataFrame({"instance_id": ["q1", "q2", "q3"], "judge": "j", "model": "m", "rubric_id": "r1"})
    frame["met"] = pd.array([True, None, False], dtype="boolean")
    assert validate(frame, "rubric").frame["met"].tolist() == [True, None, False]
    path = tmp_path / "rubric.parquet"
    frame.to_parquet(path)
    got = read_table(path).frame["met"].tolist()
    assert got == [True, None, False] and [type(v) for v in got] == [bool, type(None), bool]


@pytest.mark.parametrize("seed", range(6))
def test_key_codes_follow_names(seed):
    """`name_codes` codes in the order of the names' text (shared by the columns given together);
    `group_codes` numbers what ``groupby(sort=False).ngroup()`` numbers; `first_rows` finds each group's first row."""
    import numpy as np

    from nepotism.tables import first_rows, group_codes, name_codes

    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 300))
    x = pd.Series(rng.choice(np.array(["m10", "m9", "é", "B", "a"], dtype=object), size=n), dtype=object)
    y = pd.Series(rng.choice(np.array([10, 9, "m9"], dtype=object), size=n), dtype=object)  # not all text: read as text
    (cx, cy), names = name_codes(x, y)
    assert list(names) == sorted(set(x) | {str(v) for v in y})
    assert list(names[cx]) == list(x) and list(names[cy]) == [str(v) for v in y]
    assert ((cx < cy) == (x.to_numpy(dtype=str) < y.astype(str).to_numpy(dtype=str))).all()
    group = group_codes(cx, cy)
    plain = pd.DataFrame({"x": x, "y": y.astype(str)}).groupby(["x", "y"], sort=False).ngroup().to_numpy()
    assert (group == plain).all()
    first = first_rows(group)
    assert (group[first] == np.arange(group.max() + 1)).all()
    assert all((group[: first[g]] != g).all() for g in range(len(first)))
