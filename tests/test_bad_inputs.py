"""The bad-input battery: every malformed input file, given to the installed ``nepotism``
executable under a timeout, exits 2 with one line naming the file, the line and the field where
there is one, writes nothing (no store file, no output folder), and never hangs.

Inputs: recorded tables (``nepotism metrics``, ``nepotism store load``), reference tables
(``--reference``), datasets and experiment files (``nepotism run``). A byte-order mark is
accepted in every one of them (the last tests).
"""

from __future__ import annotations

import gzip
import json
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from nepotism.testing.experiments import STANDIN_MODELS, standin_experiment
from nepotism.testing.standin import StandinConfig, standin_thread

pytestmark = pytest.mark.slow

J, A, B = "standin-alpha", "standin-beta", "standin-alpha-mini"
PT = "instance_id,judge,model,score\n"
PW = "instance_id,judge,model_a,model_b,verdict\n"
PT_OK = f"q1,{J},{A},7\nq1,{J},{B},8\n"
PW_OK = f"q1,{J},{A},{B},A\nq1,{J},{B},{A},B\n"
BOM = b"\xef\xbb\xbf"
DEEP = "[" * 100_000 + "]" * 100_000


def _jl(*rows: str) -> bytes:
    return "".join(r + "\n" for r in rows).encode()


def _pt_json(value: str, *extra: tuple[str, str]) -> str:
    """A pointwise JSON line with score ``value`` (raw JSON) and ``extra`` (key, raw JSON) pairs."""
    fields = ['"instance_id": "q2"', f'"judge": "{J}"', f'"model": "{A}"', f'"score": {value}']
    fields += [f'"{k}": {v}' for k, v in extra]
    return "{" + ", ".join(fields) + "}"


PT_JSON_OK = _pt_json("7").replace('"q2"', '"q1"')


def _parquet(**columns) -> bytes:
    """A Parquet file of ``columns`` (lists of values; a float NaN stays a NaN, None is a null)."""
    import io

    import pyarrow as pa
    import pyarrow.parquet as pq

    sink = io.BytesIO()
    pq.write_table(pa.table(columns), sink)
    return sink.getvalue()


def _pw_parquet(column: str, values: list) -> bytes:
    return _parquet(instance_id=["q1", "q1"], judge=[J, J], model_a=[A, B], model_b=[B, A], verdict=["A", "B"],
                    **{column: values})


@dataclass(frozen=True)
class Case:
    id: str
    name: str  # the bad file's name
    data: bytes
    command: str = "metrics"  # metrics | load | reference | run | toml
    line: int | None = None
    field: str | None = None
    words: str = ""  # a word the message must hold


def _table_cases() -> list[Case]:
    cases = []
    for i, bad in enumerate(["nan", "NaN", "inf", "-inf", "Infinity", "-Infinity", "1e309", "-1e999"]):
        cases.append(Case(f"csv-score-{bad}", "scores.csv", (PT + PT_OK + f"q2,{J},{A},{bad}\n").encode(),
                          line=4, field="score", words="finite"))
    for bad in ["NaN", "Infinity", "-Infinity", "1e999", '"nan"', '"inf"']:
        cases.append(Case(f"jsonl-score-{bad}", "scores.jsonl", _jl(PT_JSON_OK, _pt_json(bad)), line=2,
                          field="score", words="finite"))
    for column, value in [("prob_a", "nan"), ("prob_b", "inf"), ("label_mass", "nan"), ("prob_tie", "-inf"),
                          ("perplexity_a", "inf")]:
        head = PW.strip() + f",{column}\n"
        cases.append(Case(f"pairwise-{column}-{value}", "pairs.csv",
                          (head + f"q1,{J},{A},{B},A,1.0\nq1,{J},{B},{A},B,{value}\n").encode(),
                          line=3, field=column, words="finite"))
    cases += [
        Case("jsonl-duplicate-key", "scores.jsonl",
             _jl(PT_JSON_OK, _pt_json("7", ("score", "3"))), line=2, field="score", words="twice"),
        Case("jsonl-duplicate-judge", "scores.jsonl",
             _jl(PT_JSON_OK, _pt_json("7", ("judge", f'"{A}"'))), line=2, field="judge", words="twice"),
        Case("jsonl-duplicate-nested", "scores.jsonl",
             _jl(PT_JSON_OK, _pt_json("7", ("meta", '{"a": 1, "a": 2}'))), line=2, field="a", words="twice"),
        Case("csv-gz-not-gzip", "scores.csv.gz", (PT + PT_OK).encode(), words="gzip"),
        Case("jsonl-gz-not-gzip", "scores.jsonl.gz", _jl(PT_JSON_OK), words="gzip"),
        Case("csv-gz-truncated", "scores.csv.gz", gzip.compress((PT + PT_OK * 200).encode())[:60], words="gzip"),
        Case("jsonl-gz-truncated", "scores.jsonl.gz", gzip.compress(_jl(PT_JSON_OK) * 200)[:50], words="gzip"),
        Case("jsonl-deep-nesting", "scores.jsonl", _jl(PT_JSON_OK, DEEP), line=2, words="nested"),
        Case("jsonl-deep-nesting-in-field", "scores.jsonl",
             _jl(PT_JSON_OK, _pt_json("7", ("meta", DEEP))), line=2, words="nested"),
        Case("csv-huge-cell", "scores.csv", (PT + PT_OK + f'q2,{J},{A},"' + "x" * 2_000_000 + '"\n').encode(),
             line=4, words="cell"),
        Case("csv-unclosed-quote", "scores.csv", (PT + PT_OK + f'q2,{J},"{A},7\n' + "y" * 1_100_000).encode(),
             line=4, words="cell"),
        Case("csv-invalid-utf8", "scores.csv", (PT + PT_OK).encode() + b"q2,j,\xff\xfe,7\n", line=4, words="UTF-8"),
        Case("csv-invalid-utf8-late", "scores.csv", (PT + PT_OK * 500).encode() + b"q9,j,m\xc3,7\n",
             line=1002, words="UTF-8"),
        Case("jsonl-invalid-utf8", "scores.jsonl", _jl(PT_JSON_OK) + b'{"instance_id": "\xc0\xaf"}\n', line=2,
             words="UTF-8"),
        Case("csv-gz-invalid-utf8", "scores.csv.gz", gzip.compress((PT + PT_OK).encode() + b"q2,\xff,m,1\n"),
             line=4, words="UTF-8"),
        Case("utf16-file", "scores.csv", (PT + PT_OK).encode("utf-16"), line=1, words="UTF-8"),
        Case("jsonl-not-json", "scores.jsonl", _jl(PT_JSON_OK, "{not json"), line=2, words="JSON"),
        # valid JSON, no text: a lone surrogate was a UnicodeEncodeError traceback (pyarrow, SQLite)
        Case("jsonl-lone-surrogate", "scores.jsonl", _jl(PT_JSON_OK, _pt_json("7").replace('"q2"', '"q\\ud800"')),
             line=2, field="instance_id", words="surrogate"),
        Case("jsonl-lone-surrogate-in-key", "scores.jsonl", _jl(PT_JSON_OK, _pt_json("7", ("meta", '{"\\udfff": 1}'))),
             line=2, field="meta", words="surrogate"),
        Case("jsonl-not-object", "scores.jsonl", _jl(PT_JSON_OK, "[1, 2]"), line=2, words="object"),
        Case("jsonl-trailing-garbage", "scores.jsonl", _jl(PT_JSON_OK + " x"), line=1, words="JSON"),
        Case("csv-field-count", "scores.csv", (PT + PT_OK + f"q2,{J},{A}\n").encode(), line=4, words="fields"),
        Case("csv-empty", "scores.csv", b"", line=1, words="empty"),
        Case("csv-duplicate-column", "scores.csv", (PT.strip() + ",score\n" + f"q1,{J},{A},7,7\n").encode(),
             line=1, words="twice"),
        Case("csv-missing-column", "scores.csv", f"instance_id,judge,model_a,model_b\nq1,{J},{A},{B}\n".encode(),
             line=1, words="column"),
        Case("csv-unknown-verdict", "pairs.csv", (PW + PW_OK + f"q2,{J},{A},{B},X\n").encode(), line=4,
             field="verdict"),
        Case("csv-empty-judge", "pairs.csv", (PW + PW_OK + f"q2,,{A},{B},A\n").encode(), line=4, field="judge"),
        Case("csv-score-text", "scores.csv", (PT + PT_OK + f"q2,{J},{A},seven\n").encode(), line=4, field="score"),
        Case("csv-bad-replicate", "scores.csv", (PT.strip() + ",replicate\n" + f"q1,{J},{A},7,-1\n").encode(),
             line=2, field="replicate"),
        Case("csv-bad-status", "scores.csv", (PT.strip() + ",status\n" + f"q1,{J},{A},7,maybe\n").encode(),
             line=2, field="status"),
        Case("csv-duplicate-row", "scores.csv", (PT + PT_OK + PT_OK.splitlines()[0] + "\n").encode(), line=4),
        Case("unknown-suffix", "scores.txt", (PT + PT_OK).encode(), words=".csv"),
        Case("parquet-not-parquet", "scores.parquet", b"PAR1 not really", words="Parquet"),
        # a NaN in Parquet is no null (pandas reads both as NaN: it was an empty cell, replicate 0)
        Case("parquet-replicate-nan", "pairs.parquet", _pw_parquet("replicate", [0.0, float("nan")]), line=2,
             field="replicate", words="finite"),
        Case("parquet-score-nan", "scores.parquet", _parquet(instance_id=["q1", "q2"], judge=[J, J], model=[A, A],
                                                             score=[7.0, float("nan")]),
             line=2, field="score", words="finite"),
        Case("parquet-prob-nan", "pairs.parquet", _pw_parquet("prob_a", [0.5, float("nan")]), line=2,
             field="prob_a", words="finite"),
        Case("parquet-replicate-fraction", "pairs.parquet", _pw_parquet("replicate", [0.0, 1.5]), line=2,
             field="replicate", words="integer"),
        Case("parquet-replicate-huge", "pairs.parquet", _pw_parquet("replicate", [0.0, 1e30]), line=2,
             field="replicate", words="integer"),
        Case("csv-replicate-nan", "pairs.csv", (PW.strip() + ",replicate\n" + f"q1,{J},{A},{B},A,0\n"
                                                 f"q1,{J},{B},{A},B,NaN\n").encode(), line=3, field="replicate",
             words="finite"),
        Case("csv-replicate-huge", "pairs.csv", (PW.strip() + ",replicate\n" + f"q1,{J},{A},{B},A,1e30\n").encode(),
             line=2, field="replicate", words="integer"),
        Case("csv-reasoning-tokens-fraction", "pairs.csv",
             (PW.strip() + ",reasoning_tokens\n" + f"q1,{J},{A},{B},A,12.5\n").encode(), line=2,
             field="reasoning_tokens", words="integer"),
        Case("jsonl-replicate-nan", "scores.jsonl", _jl(PT_JSON_OK, _pt_json("7", ("replicate", "NaN"))), line=2,
             field="replicate", words="finite"),
        Case("load-score-nan", "scores.csv", (PT + PT_OK + f"q2,{J},{A},nan\n").encode(), command="load",
             line=4, field="score"),
        Case("load-duplicate-key", "scores.jsonl", _jl(PT_JSON_OK, _pt_json("7", ("score", "3"))), command="load",
             line=2, field="score"),
        Case("load-not-gzip", "scores.csv.gz", (PT + PT_OK).encode(), command="load", words="gzip"),
        Case("load-invalid-utf8", "scores.csv", (PT + PT_OK).encode() + b"q2,\xff,m,1\n", command="load", line=4),
        Case("load-deep", "scores.jsonl", _jl(DEEP), command="load", line=1, words="nested"),
        Case("load-lone-surrogate", "scores.jsonl", _jl(_pt_json("7", ("category", '"x\\uDC00"'))), command="load",
             line=1, field="category", words="surrogate"),
        Case("reference-score-inf", "ref.csv",
             f"instance_id,model,score\nq1,{A},1\nq1,{B},inf\n".encode(), command="reference", line=3,
             field="score"),
        Case("reference-correct-bad", "ref.csv",
             f"instance_id,model,correct\nq1,{A},true\nq1,{B},perhaps\n".encode(), command="reference", line=3,
             field="correct"),
        Case("reference-winner-bad", "ref.csv",
             f"instance_id,model_a,model_b,winner\nq1,{A},{B},{J}\n".encode(), command="reference", line=2,
             field="winner"),
        Case("reference-not-gzip", "ref.csv.gz", f"instance_id,model,score\nq1,{A},1\n".encode(),
             command="reference", words="gzip"),
        Case("reference-duplicate-key", "ref.jsonl",
             _jl(f'{{"instance_id": "q1", "model": "{A}", "score": 1, "score": 2}}'), command="reference",
             line=1, field="score"),
    ]
    return cases


ITEM = '{"id": "q1", "prompt": "Name a prime."}'


def _dataset_cases() -> list[Case]:
    def ds(case_id: str, data: bytes, line: int | None = None, field: str | None = None, words: str = "",
           name: str = "items.jsonl") -> Case:
        return Case(case_id, name, data, command="run", line=line, field=field, words=words)

    return [
        ds("ds-not-json", _jl(ITEM, "{oops"), 2, words="JSON"),
        ds("ds-duplicate-key", _jl(ITEM, '{"id": "q2", "prompt": "a", "prompt": "b"}'), 2, "prompt", "twice"),
        ds("ds-duplicate-id-key", _jl('{"id": "q1", "id": "q2", "prompt": "a"}'), 1, "id", "twice"),
        ds("ds-deep", _jl(ITEM, '{"id": "q2", "prompt": "p", "metadata": ' + DEEP + "}"), 2, words="nested"),
        ds("ds-lone-surrogate", _jl(ITEM, '{"id": "q2", "prompt": "P \\ud800 one"}'), 2, "prompt", "surrogate"),
        ds("ds-lone-surrogate-nested", _jl(ITEM, '{"id": "q2", "prompt": [{"role": "user", "content": "\\udbff"}]}'),
           2, "prompt", "surrogate"),
        ds("ds-invalid-utf8", _jl(ITEM) + b'{"id": "q2", "prompt": "\xe2\x28\xa1"}\n', 2, words="UTF-8"),
        ds("ds-gz-not-gzip", _jl(ITEM), words="gzip", name="items.jsonl.gz"),
        ds("ds-gz-truncated", gzip.compress(_jl(ITEM) * 300)[:40], words="gzip", name="items.jsonl.gz"),
        ds("ds-not-object", _jl(ITEM, '"q2"'), 2, words="object"),
        ds("ds-no-id", _jl(ITEM, '{"prompt": "p"}'), 2, "id"),
        ds("ds-bool-id", _jl(ITEM, '{"id": true, "prompt": "p"}'), 2, "id"),
        ds("ds-no-prompt", _jl(ITEM, '{"id": "q2"}'), 2, "prompt"),
        ds("ds-blank-prompt", _jl(ITEM, '{"id": "q2", "prompt": "   "}'), 2, "prompt"),
        ds("ds-bad-messages", _jl(ITEM, '{"id": "q2", "prompt": [{"role": "user"}]}'), 2, "prompt"),
        ds("ds-bad-role", _jl(ITEM, '{"id": "q2", "prompt": [{"role": "robot", "content": "x"}]}'), 2, "prompt"),
        ds("ds-rubric-points-nan", _jl(ITEM, '{"id": "q2", "prompt": "p", "rubric": [{"text": "t", "points": NaN}]}'),
           2, "rubric[0].points", "finite"),
        ds("ds-rubric-points-inf", _jl(ITEM, '{"id": "q2", "prompt": "p", "rubric": [{"text": "t", "points": 1e999}]}'),
           2, "rubric[0].points", "finite"),
        ds("ds-rubric-points-text", _jl(ITEM, '{"id": "q2", "prompt": "p", "rubric": [{"text": "t", "points": "x"}]}'),
           2, "rubric[0].points"),
        ds("ds-rubric-item", _jl(ITEM, '{"id": "q2", "prompt": "p", "rubric": ["t"]}'), 2, "rubric[0]"),
        ds("ds-two-prompts", _jl(ITEM, '{"id": "q1", "prompt": "Other."}'), 2, "prompt"),
        # a repeated row's other fields were silently dropped (the first row won): a second answer key
        ds("ds-two-references", _jl('{"id": "q1", "prompt": "2+2?", "reference_answer": "4"}',
                                    '{"id": "q1", "prompt": "2+2?", "reference_answer": "5"}'), 2, "reference_answer",
           "two different reference answers"),
        ds("ds-two-categories", _jl('{"id": "q1", "prompt": "p", "category": "math"}',
                                    '{"id": "q1", "prompt": "p", "category": "code"}'), 2, "category", "categories"),
        ds("ds-two-rubrics", _jl('{"id": "q1", "prompt": "p", "rubric": [{"text": "a"}]}',
                                 '{"id": "q1", "prompt": "p", "rubric": [{"text": "b"}]}'), 2, "rubric", "rubrics"),
        ds("ds-response-no-text", _jl(ITEM, '{"id": "q1", "prompt": "Name a prime.", "model": "m"}'), 2, "text"),
        ds("ds-second-response", _jl('{"id": "q1", "prompt": "p", "model": "m", "text": "a"}',
                                     '{"id": "q1", "prompt": "p", "model": "m", "text": "b"}'), 2, "model"),
        ds("ds-empty", b"\n\n", words="no instances"),
    ]


def _toml_cases() -> list[Case]:
    def toml(case_id: str, change, line: int | None = None, field: str | None = None, words: str = "") -> Case:
        return Case(case_id, "exp.toml", b"", command=f"toml:{change}", line=line, field=field, words=words)

    return [
        toml("toml-invalid-utf8", "utf8", line=2, words="UTF-8"),
        toml("toml-not-toml", "garbage", words="TOML"),
        toml("toml-rpm-nan", "rpm = nan", field="models.standin-alpha.rpm"),
        toml("toml-timeout-inf", "timeout = inf", field="models.standin-alpha.timeout"),
        toml("toml-retry-nan", "retry_max_delay_s = nan", field="models.standin-alpha.retry_max_delay_s"),
        toml("toml-params-nan", "params = { top_p = nan }", field="models.standin-alpha.params.top_p"),
        toml("toml-api-key-unset", 'api_key_env = "NEPOTISM_TEST_SURELY_UNSET_VAR"',
             field="models.standin-alpha.api_key_env", words="NEPOTISM_TEST_SURELY_UNSET_VAR"),
    ]


CASES = _table_cases() + _dataset_cases() + _toml_cases()


def test_the_battery_is_large_enough():
    assert len(CASES) >= 80 and len({c.id for c in CASES}) == len(CASES)


def _exe() -> str:
    found = shutil.which("nepotism", path=str(Path(sys.executable).parent))
    assert found, "the nepotism executable is not installed next to this Python"
    return found


def _tree(folder: Path) -> dict[str, int]:
    return {str(p.relative_to(folder)): p.stat().st_size for p in folder.rglob("*")}


def _setup(case: Case, tmp: Path) -> tuple[list[str], Path]:
    """The command line of ``case`` and the bad file it names (written under ``tmp``)."""
    (tmp / "models.toml").write_text(STANDIN_MODELS)
    models = ["--models", str(tmp / "models.toml")]
    if case.command in ("metrics", "load", "reference"):
        bad = tmp / case.name
        bad.write_bytes(case.data)
        if case.command == "metrics":
            return ["metrics", str(bad), *models, "--bootstrap", "20"], bad
        if case.command == "load":
            return ["store", "load", str(bad), "--store", str(tmp / "s.db")], bad
        good = tmp / "scores.csv"
        good.write_text(PT + PT_OK)
        return ["metrics", str(good), "--reference", str(bad), *models, "--bootstrap", "20"], bad
    exp = standin_experiment(tmp / "exp", "http://127.0.0.1:9/v1", items=2, recognition=False)
    if case.command == "run":
        (exp.parent / "items.jsonl").unlink()
        bad = exp.parent / case.name
        bad.write_bytes(case.data)
        exp.write_text(exp.read_text().replace('path = "items.jsonl"', f'path = "{case.name}"'))
    else:
        change = case.command.split(":", 1)[1]
        text = exp.read_text()
        if change == "utf8":
            exp.write_bytes(text.replace('name = "standin"', 'name = "st\udcff"', 1).encode("utf-8", "surrogateescape"))
        elif change == "garbage":
            exp.write_text(text + "\n[[[ not toml\n")
        else:
            key = change.split(" = ")[0]
            lines = [x for x in text.splitlines() if not x.startswith(key + " = ")]
            at = lines.index("[models.standin-alpha]") + 1
            exp.write_text("\n".join(lines[:at] + [change] + lines[at:]) + "\n")
        bad = exp
    return ["run", str(exp), "--store", str(tmp / "exp" / "s.db"), "--no-progress"], bad


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_bad_input_exits_2_naming_file_line_and_field_and_writes_nothing(tmp_path, case):
    args, bad = _setup(case, tmp_path)
    before = _tree(tmp_path)
    done = subprocess.run([_exe(), *args], capture_output=True, text=True, timeout=120, cwd=tmp_path)
    message = (done.stderr + done.stdout).strip()
    assert done.returncode == 2, message[-2000:]
    assert "Traceback" not in message and len(message.splitlines()) == 1, message[-2000:]
    assert str(bad) in message or bad.name in message, message
    if case.line is not None:
        assert f"line {case.line}" in message, message
    if case.field is not None:
        assert f"field '{case.field}'" in message, message
    assert case.words in message, message
    assert _tree(tmp_path) == before, "something was written"


@pytest.mark.parametrize("kind", ["csv", "jsonl", "csv.gz", "reference", "load", "dataset", "toml", "registry"])
def test_a_byte_order_mark_is_accepted_everywhere(tmp_path, kind):
    (tmp_path / "models.toml").write_bytes(BOM + STANDIN_MODELS.encode())
    models = ["--models", str(tmp_path / "models.toml")]
    if kind in ("csv", "jsonl", "csv.gz", "reference", "load", "registry"):
        data = BOM + ((PT + PT_OK) if kind != "jsonl" else _jl(PT_JSON_OK).decode()).encode()
        path = tmp_path / f"scores.{kind if kind in ('jsonl', 'csv.gz') else 'csv'}"
        path.write_bytes(gzip.compress(data) if kind == "csv.gz" else data)
        if kind == "load":
            args = ["store", "load", str(path), "--store", str(tmp_path / "s.db")]
        elif kind == "reference":
            ref = tmp_path / "ref.csv"
            ref.write_bytes(BOM + f"instance_id,model,score\nq1,{A},1\nq1,{B},0\n".encode())
            args = ["metrics", str(path), "--reference", str(ref), *models, "--bootstrap", "20"]
        else:
            args = ["metrics", str(path), *models, "--bootstrap", "20"]
    else:
        args = ["run", "EXP", "--store", str(tmp_path / "s.db"), "--dry-run", "--json"]
    with standin_thread(StandinConfig(latency_s=0.001)) as (url, _server):  # a dry run checks it is reached
        if kind in ("dataset", "toml"):
            exp = standin_experiment(tmp_path / "exp", url, items=2, recognition=False)
            items = exp.parent / "items.jsonl"
            if kind == "dataset":
                items.write_bytes(BOM + items.read_bytes())
            else:
                exp.write_bytes(BOM + exp.read_bytes())
            args[1] = str(exp)
        done = subprocess.run([_exe(), *args], capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-2000:]
    if kind in ("dataset", "toml"):
        assert json.loads(done.stdout)["instances"] == 2
