"""The bad-input battery: every malformed input file, given to the installed ``nepotism``
executable under a timeout, exits 2 with one line naming the file, the line and the field where
there is one, writes nothing (no store file, no output folder), and never hangs. The line shows no
control character raw (a NUL or an escape sequence in the input is written ``\\x00``, ``\\x1b``).

Inputs: recorded tables (``nepotism metrics``, ``nepotism store load``), reference tables
(``--reference``), datasets and experiment files (``nepotism run``), registry, thresholds, results
and run-folder files; inputs beyond a limit of `nepotism.input_limits` (a gzip bomb, a long line,
a long value, deep nesting), refused at a peak memory far below what reading them would take. A
byte-order mark is accepted in every one of them (the last tests).
"""

from __future__ import annotations

import gzip
import json
import re
import shutil
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from nepotism.testing.experiments import STANDIN_MODELS, standin_experiment
from nepotism.testing.peak import run_measured
from nepotism.testing.standin import StandinConfig, standin_thread

pytestmark = pytest.mark.slow

J, A, B = "standin-alpha", "standin-beta", "standin-alpha-mini"
PT = "instance_id,judge,model,score\n"
PW = "instance_id,judge,model_a,model_b,verdict\n"
PT_OK = f"q1,{J},{A},7\nq1,{J},{B},8\n"
PW_OK = f"q1,{J},{A},{B},A\nq1,{J},{B},{A},B\n"
BOM = b"\xef\xbb\xbf"
DEEP = "[" * 100_000 + "]" * 100_000  # beyond what Python's parsers reach
DEEPISH = "[" * 150 + "]" * 150  # within their reach, beyond the limit on nesting (100)
MI = 1 << 20


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


def _parquet_columns(names: list[str], values: list[list]) -> bytes:
    """A Parquet file whose columns may share a name (pyarrow writes what it is given)."""
    import io

    import pyarrow as pa
    import pyarrow.parquet as pq

    sink = io.BytesIO()
    pq.write_table(pa.Table.from_arrays([pa.array(v) for v in values], names=names), sink)
    return sink.getvalue()


def _pw_parquet(column: str, values: list) -> bytes:
    return _parquet(
        instance_id=["q1", "q1"], judge=[J, J], model_a=[A, B], model_b=[B, A], verdict=["A", "B"], **{column: values}
    )


def _bomb(inflated: int, head: bytes = PT.encode(), row: bytes = f"q1,{J},{A},7\n".encode()) -> bytes:
    """A gzip file of ``head`` and ``row`` repeated to ``inflated`` bytes: 1 MiB members repeated
    (a gzip file may hold several), about 1 KB on disk per MiB inflated."""
    member = gzip.compress(row * (MI // len(row)), compresslevel=9)
    return gzip.compress(head) + member * -(-inflated // MI)


@dataclass(frozen=True)
class Case:
    id: str
    name: str  # the bad file's name
    data: bytes | Callable[[], bytes]  # a function for a large file, made only when its case runs
    command: str = "metrics"  # metrics | load | reference | run | toml | models | thresholds | results | run.json
    line: int | None = None
    field: str | None = None
    words: str = ""  # a word the message must hold
    options: tuple[str, ...] = ()  # nepotism's own options, before the command (the --max-* limits)

    def content(self) -> bytes:
        return self.data() if callable(self.data) else self.data


def _table_cases() -> list[Case]:
    cases = []
    for i, bad in enumerate(["nan", "NaN", "inf", "-inf", "Infinity", "-Infinity", "1e309", "-1e999"]):
        cases.append(
            Case(
                f"csv-score-{bad}",
                "scores.csv",
                (PT + PT_OK + f"q2,{J},{A},{bad}\n").encode(),
                line=4,
                field="score",
                words="finite",
            )
        )
    for bad in ["NaN", "Infinity", "-Infinity", "1e999", '"nan"', '"inf"']:
        cases.append(
            Case(f"jsonl-score-{bad}", "scores.jsonl", _jl(PT_JSON_OK, _pt_json(bad)), line=2, field="score", words="finite")
        )
    for column, value in [
        ("prob_a", "nan"),
        ("prob_b", "inf"),
        ("label_mass", "nan"),
        ("prob_tie", "-inf"),
        ("perplexity_a", "inf"),
    ]:
        head = PW.strip() + f",{column}\n"
        cases.append(
            Case(
                f"pairwise-{column}-{value}",
                "pairs.csv",
                (head + f"q1,{J},{A},{B},A,1.0\nq1,{J},{B},{A},B,{value}\n").encode(),
                line=3,
                field=column,
                words="finite",
            )
        )
    cases += [
        Case(
            "jsonl-duplicate-key",
            "scores.jsonl",
            _jl(PT_JSON_OK, _pt_json("7", ("score", "3"))),
            line=2,
            field="score",
            words="twice",
        ),
        Case(
            "jsonl-duplicate-judge",
            "scores.jsonl",
            _jl(PT_JSON_OK, _pt_json("7", ("judge", f'"{A}"'))),
            line=2,
            field="judge",
            words="twice",
        ),
        Case(
            "jsonl-duplicate-nested",
            "scores.jsonl",
            _jl(PT_JSON_OK, _pt_json("7", ("meta", '{"a": 1, "a": 2}'))),
            line=2,
            field="a",
            words="twice",
        ),
        Case("csv-gz-not-gzip", "scores.csv.gz", (PT + PT_OK).encode(), words="gzip"),
        Case("jsonl-gz-not-gzip", "scores.jsonl.gz", _jl(PT_JSON_OK), words="gzip"),
        Case("csv-gz-truncated", "scores.csv.gz", gzip.compress((PT + PT_OK * 200).encode())[:60], words="gzip"),
        Case("jsonl-gz-truncated", "scores.jsonl.gz", gzip.compress(_jl(PT_JSON_OK) * 200)[:50], words="gzip"),
        Case("jsonl-deep-nesting", "scores.jsonl", _jl(PT_JSON_OK, DEEP), line=2, words="nested"),
        Case(
            "jsonl-deep-nesting-in-field", "scores.jsonl", _jl(PT_JSON_OK, _pt_json("7", ("meta", DEEP))), line=2, words="nested"
        ),
        Case(
            "csv-huge-cell",
            "scores.csv",
            (PT + PT_OK + f'q2,{J},{A},"' + "x" * 2_000_000 + '"\n').encode(),
            line=4,
            words="cell",
            options=("--max-cell", "1Mi"),
        ),
        Case(
            "csv-unclosed-quote",
            "scores.csv",
            (PT + PT_OK + f'q2,{J},"{A},7\n' + "y" * 1_100_000).encode(),
            line=4,
            words="cell",
            options=("--max-cell", "1Mi"),
        ),
        Case(
            "csv-huge-cell-default",
            "scores.csv",
            lambda: (PT + PT_OK + f'q2,{J},{A},"' + "x" * (16 * MI + 1) + '"\n').encode(),
            line=4,
            words="--max-cell",
        ),
        Case("csv-invalid-utf8", "scores.csv", (PT + PT_OK).encode() + b"q2,j,\xff\xfe,7\n", line=4, words="UTF-8"),
        Case("csv-invalid-utf8-late", "scores.csv", (PT + PT_OK * 500).encode() + b"q9,j,m\xc3,7\n", line=1002, words="UTF-8"),
        Case("jsonl-invalid-utf8", "scores.jsonl", _jl(PT_JSON_OK) + b'{"instance_id": "\xc0\xaf"}\n', line=2, words="UTF-8"),
        Case(
            "csv-gz-invalid-utf8", "scores.csv.gz", gzip.compress((PT + PT_OK).encode() + b"q2,\xff,m,1\n"), line=4, words="UTF-8"
        ),
        Case("utf16-file", "scores.csv", (PT + PT_OK).encode("utf-16"), line=1, words="UTF-8"),
        Case("jsonl-not-json", "scores.jsonl", _jl(PT_JSON_OK, "{not json"), line=2, words="JSON"),
        # valid JSON, no text: a lone surrogate was a UnicodeEncodeError traceback (pyarrow, SQLite)
        Case(
            "jsonl-lone-surrogate",
            "scores.jsonl",
            _jl(PT_JSON_OK, _pt_json("7").replace('"q2"', '"q\\ud800"')),
            line=2,
            field="instance_id",
            words="surrogate",
        ),
        Case(
            "jsonl-lone-surrogate-in-key",
            "scores.jsonl",
            _jl(PT_JSON_OK, _pt_json("7", ("meta", '{"\\udfff": 1}'))),
            line=2,
            field="meta",
            words="surrogate",
        ),
        Case("jsonl-not-object", "scores.jsonl", _jl(PT_JSON_OK, "[1, 2]"), line=2, words="object"),
        Case("jsonl-trailing-garbage", "scores.jsonl", _jl(PT_JSON_OK + " x"), line=1, words="JSON"),
        Case("csv-field-count", "scores.csv", (PT + PT_OK + f"q2,{J},{A}\n").encode(), line=4, words="fields"),
        Case("csv-empty", "scores.csv", b"", line=1, words="empty"),
        Case(
            "csv-duplicate-column",
            "scores.csv",
            (PT.strip() + ",score\n" + f"q1,{J},{A},7,7\n").encode(),
            line=1,
            field="score",
            words="twice",
        ),
        Case(
            "csv-duplicate-column-padded",
            "scores.csv",
            (PT.strip() + ", judge \n" + f"q1,{J},{A},7,x\n").encode(),
            line=1,
            field="judge",
            words="twice",
        ),
        Case(
            "parquet-duplicate-column",
            "scores.parquet",
            _parquet_columns(["instance_id", "judge", "model", "score", "score"], [["q1"], [J], [A], [7.0], [8.0]]),
            field="score",
            words="twice",
        ),
        Case(
            "csv-missing-column",
            "scores.csv",
            f"instance_id,judge,model_a,model_b\nq1,{J},{A},{B}\n".encode(),
            line=1,
            words="'verdict'",
        ),
        Case(
            "csv-missing-column-named",
            "pairs.csv",
            f"instance_id,judge,model_a,model_b,prob_a\nq1,{J},{A},{B},0.5\n".encode(),
            line=1,
            field="verdict",
            words="a pairwise table needs 'verdict'",
        ),
        Case(
            "jsonl-missing-column",
            "scores.jsonl",
            _jl(f'{{"instance_id": "q1", "judge": "{J}", "model": "{A}", "scor": 7, "category": "x"}}'),
            line=1,
            words="a pointwise table needs 'score'",
        ),
        # a control character in a value is shown escaped, never raw (a NUL, a terminal's escape sequence)
        Case(
            "csv-nul-in-verdict",
            "pairs.csv",
            (PW + PW_OK + f"q2,{J},{A},{B},A\x00\n").encode(),
            line=4,
            field="verdict",
            words="'A\\x00'",
        ),
        Case(
            "csv-escape-in-verdict",
            "pairs.csv",
            (PW + PW_OK + f"q2,{J},{A},{B},\x1b[2J\x1b[31mB\n").encode(),
            line=4,
            field="verdict",
            words="\\x1b[2J",
        ),
        Case(
            "jsonl-newline-in-verdict",
            "pairs.jsonl",
            _jl(f'{{"instance_id": "q1", "judge": "{J}", "model_a": "{A}", "model_b": "{B}", "verdict": "A\\nB\\u202e\\u0000"}}'),
            line=1,
            field="verdict",
            words="A\\nB\\u202e\\x00",
        ),
        Case(
            "csv-bell-in-column-name",
            "scores.csv",
            (PT.strip() + ",sc\x07ore,sc\x07ore\n" + f"q1,{J},{A},7,1,2\n").encode(),
            line=1,
            field="sc\\x07ore",
            words="twice",
        ),
        # limits (nepotism.input_limits): a gzip bomb, a long line, a long value, deep nesting
        Case("csv-gz-bomb", "scores.csv.gz", lambda: _bomb((1 << 30) + MI), words="--max-decompressed"),
        Case(
            "jsonl-gz-bomb-option",
            "scores.jsonl.gz",
            _bomb(2 * MI, b"", (PT_JSON_OK + "\n").encode()),
            words="inflates to more than 1,048,576 bytes",
            options=("--max-decompressed", "1Mi"),
        ),
        Case(
            "jsonl-long-line",
            "scores.jsonl",
            lambda: _jl(PT_JSON_OK, _pt_json("7", ("note", '"' + "x" * 64 * MI + '"'))),
            line=2,
            words="--max-line",
        ),
        Case(
            "csv-long-line",
            "scores.csv",
            (PT + PT_OK + f"q2,{J},{A},7" + "0" * (2 * MI) + "\n").encode(),
            line=4,
            words="a line longer than 1,048,576 characters",
            options=("--max-line", "1Mi"),
        ),
        Case(
            "jsonl-long-cell",
            "scores.jsonl",
            _jl(PT_JSON_OK, _pt_json("7", ("meta", '{"note": ["' + "x" * (2 * MI) + '"]}'))),
            line=2,
            field="meta.note[0]",
            words="--max-cell",
            options=("--max-cell", "1Mi"),
        ),
        Case(
            "parquet-long-cell",
            "scores.parquet",
            _parquet(instance_id=["q1", "q2"], judge=[J, J], model=[A, A], score=[7.0, 8.0], note=["x", "y" * (2 * MI)]),
            line=2,
            field="note",
            words="--max-cell",
            options=("--max-cell", "1Mi"),
        ),
        Case(
            "jsonl-nested-beyond-the-limit",
            "scores.jsonl",
            _jl(PT_JSON_OK, _pt_json("7", ("meta", DEEPISH))),
            line=2,
            field="meta",
            words="nested more than 100 levels",
        ),
        Case(
            "jsonl-nested-beyond-a-lower-limit",
            "scores.jsonl",
            _jl(PT_JSON_OK, _pt_json("7", ("meta", '{"a": ' + "[" * 15 + "]" * 15 + "}"))),
            line=2,
            field="meta",
            words="nested more than 16 levels",
            options=("--max-depth", "16"),
        ),
        Case(
            "load-gz-bomb",
            "scores.csv.gz",
            _bomb(2 * MI),
            command="load",
            words="--max-decompressed",
            options=("--max-decompressed", "1Mi"),
        ),
        Case(
            "reference-nested",
            "ref.jsonl",
            _jl(f'{{"instance_id": "q1", "model": "{A}", "score": 1, "meta": {DEEPISH}}}'),
            command="reference",
            line=1,
            field="meta",
            words="nested",
        ),
        # the other files a user gives: registry, thresholds, results, a run folder's run.json
        Case("models-toml-deep", "deep_models.toml", ("x = " + DEEP).encode(), command="models", words="nested"),
        Case(
            "models-toml-nested",
            "deep_models.toml",
            (f'[models."m"]\nfamily = "f"\nx = {DEEPISH}\n').encode(),
            command="models",
            field="models",
            words="nested more than 100",
        ),
        Case(
            "thresholds-deep",
            "t.toml",
            ("max_self_preference_ratio = " + "{ a = " * 3000 + "1" + " }" * 3000).encode(),
            command="thresholds",
            words="nested",
        ),
        Case("results-deep", "results.json", DEEP.encode(), command="results", words="nested"),
        Case(
            "results-nested",
            "results.json",
            ('{"results": ' + DEEPISH + "}").encode(),
            command="results",
            field="results",
            words="nested more than 100",
        ),
        Case(
            "results-jsonl-long-line",
            "results.jsonl",
            ('{"metric": "x", "value": "' + "v" * (2 * MI) + '"}\n').encode(),
            command="results",
            line=1,
            words="--max-line",
            options=("--max-line", "1Mi"),
        ),
        Case(
            "run-json-deep",
            "run.json",
            ('{"schema_version": 1, "x": ' + DEEPISH + "}").encode(),
            command="run.json",
            field="x",
            words="nested",
        ),
        Case("csv-unknown-verdict", "pairs.csv", (PW + PW_OK + f"q2,{J},{A},{B},X\n").encode(), line=4, field="verdict"),
        Case("csv-empty-judge", "pairs.csv", (PW + PW_OK + f"q2,,{A},{B},A\n").encode(), line=4, field="judge"),
        Case("csv-score-text", "scores.csv", (PT + PT_OK + f"q2,{J},{A},seven\n").encode(), line=4, field="score"),
        Case(
            "csv-bad-replicate",
            "scores.csv",
            (PT.strip() + ",replicate\n" + f"q1,{J},{A},7,-1\n").encode(),
            line=2,
            field="replicate",
        ),
        Case(
            "csv-bad-status", "scores.csv", (PT.strip() + ",status\n" + f"q1,{J},{A},7,maybe\n").encode(), line=2, field="status"
        ),
        Case("csv-duplicate-row", "scores.csv", (PT + PT_OK + PT_OK.splitlines()[0] + "\n").encode(), line=4),
        Case("unknown-suffix", "scores.txt", (PT + PT_OK).encode(), words=".csv"),
        Case("parquet-not-parquet", "scores.parquet", b"PAR1 not really", words="Parquet"),
        # a NaN in Parquet is no null (pandas reads both as NaN: it was an empty cell, replicate 0)
        Case(
            "parquet-replicate-nan",
            "pairs.parquet",
            _pw_parquet("replicate", [0.0, float("nan")]),
            line=2,
            field="replicate",
            words="finite",
        ),
        Case(
            "parquet-score-nan",
            "scores.parquet",
            _parquet(instance_id=["q1", "q2"], judge=[J, J], model=[A, A], score=[7.0, float("nan")]),
            line=2,
            field="score",
            words="finite",
        ),
        Case(
            "parquet-prob-nan",
            "pairs.parquet",
            _pw_parquet("prob_a", [0.5, float("nan")]),
            line=2,
            field="prob_a",
            words="finite",
        ),
        Case(
            "parquet-replicate-fraction",
            "pairs.parquet",
            _pw_parquet("replicate", [0.0, 1.5]),
            line=2,
            field="replicate",
            words="integer",
        ),
        Case(
            "parquet-replicate-huge",
            "pairs.parquet",
            _pw_parquet("replicate", [0.0, 1e30]),
            line=2,
            field="replicate",
            words="integer",
        ),
        Case(
            "csv-replicate-nan",
            "pairs.csv",
            (PW.strip() + ",replicate\n" + f"q1,{J},{A},{B},A,0\nq1,{J},{B},{A},B,NaN\n").encode(),
            line=3,
            field="replicate",
            words="finite",
        ),
        Case(
            "csv-replicate-huge",
            "pairs.csv",
            (PW.strip() + ",replicate\n" + f"q1,{J},{A},{B},A,1e30\n").encode(),
            line=2,
            field="replicate",
            words="integer",
        ),
        Case(
            "csv-reasoning-tokens-fraction",
            "pairs.csv",
            (PW.strip() + ",reasoning_tokens\n" + f"q1,{J},{A},{B},A,12.5\n").encode(),
            line=2,
            field="reasoning_tokens",
            words="integer",
        ),
        Case(
            "jsonl-replicate-nan",
            "scores.jsonl",
            _jl(PT_JSON_OK, _pt_json("7", ("replicate", "NaN"))),
            line=2,
            field="replicate",
            words="finite",
        ),
        Case("load-score-nan", "scores.csv", (PT + PT_OK + f"q2,{J},{A},nan\n").encode(), command="load", line=4, field="score"),
        Case(
            "load-duplicate-key",
            "scores.jsonl",
            _jl(PT_JSON_OK, _pt_json("7", ("score", "3"))),
            command="load",
            line=2,
            field="score",
        ),
        Case("load-not-gzip", "scores.csv.gz", (PT + PT_OK).encode(), command="load", words="gzip"),
        Case("load-invalid-utf8", "scores.csv", (PT + PT_OK).encode() + b"q2,\xff,m,1\n", command="load", line=4),
        Case("load-deep", "scores.jsonl", _jl(DEEP), command="load", line=1, words="nested"),
        Case(
            "load-lone-surrogate",
            "scores.jsonl",
            _jl(_pt_json("7", ("category", '"x\\uDC00"'))),
            command="load",
            line=1,
            field="category",
            words="surrogate",
        ),
        Case(
            "reference-score-inf",
            "ref.csv",
            f"instance_id,model,score\nq1,{A},1\nq1,{B},inf\n".encode(),
            command="reference",
            line=3,
            field="score",
        ),
        Case(
            "reference-correct-bad",
            "ref.csv",
            f"instance_id,model,correct\nq1,{A},true\nq1,{B},perhaps\n".encode(),
            command="reference",
            line=3,
            field="correct",
        ),
        Case(
            "reference-winner-bad",
            "ref.csv",
            f"instance_id,model_a,model_b,winner\nq1,{A},{B},{J}\n".encode(),
            command="reference",
            line=2,
            field="winner",
        ),
        Case(
            "reference-not-gzip", "ref.csv.gz", f"instance_id,model,score\nq1,{A},1\n".encode(), command="reference", words="gzip"
        ),
        Case(
            "reference-duplicate-key",
            "ref.jsonl",
            _jl(f'{{"instance_id": "q1", "model": "{A}", "score": 1, "score": 2}}'),
            command="reference",
            line=1,
            field="score",
        ),
    ]
    return cases


ITEM = '{"id": "q1", "prompt": "Name a prime."}'


def _dataset_cases() -> list[Case]:
    def ds(
        case_id: str,
        data: bytes | Callable[[], bytes],
        line: int | None = None,
        field: str | None = None,
        words: str = "",
        name: str = "items.jsonl",
        options: tuple[str, ...] = (),
    ) -> Case:
        return Case(case_id, name, data, command="run", line=line, field=field, words=words, options=options)

    return [
        ds("ds-not-json", _jl(ITEM, "{oops"), 2, words="JSON"),
        ds("ds-duplicate-key", _jl(ITEM, '{"id": "q2", "prompt": "a", "prompt": "b"}'), 2, "prompt", "twice"),
        ds("ds-duplicate-id-key", _jl('{"id": "q1", "id": "q2", "prompt": "a"}'), 1, "id", "twice"),
        ds("ds-deep", _jl(ITEM, '{"id": "q2", "prompt": "p", "metadata": ' + DEEP + "}"), 2, words="nested"),
        ds("ds-lone-surrogate", _jl(ITEM, '{"id": "q2", "prompt": "P \\ud800 one"}'), 2, "prompt", "surrogate"),
        ds(
            "ds-lone-surrogate-nested",
            _jl(ITEM, '{"id": "q2", "prompt": [{"role": "user", "content": "\\udbff"}]}'),
            2,
            "prompt",
            "surrogate",
        ),
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
        ds(
            "ds-rubric-points-nan",
            _jl(ITEM, '{"id": "q2", "prompt": "p", "rubric": [{"text": "t", "points": NaN}]}'),
            2,
            "rubric[0].points",
            "finite",
        ),
        ds(
            "ds-rubric-points-inf",
            _jl(ITEM, '{"id": "q2", "prompt": "p", "rubric": [{"text": "t", "points": 1e999}]}'),
            2,
            "rubric[0].points",
            "finite",
        ),
        ds(
            "ds-rubric-points-text",
            _jl(ITEM, '{"id": "q2", "prompt": "p", "rubric": [{"text": "t", "points": "x"}]}'),
            2,
            "rubric[0].points",
        ),
        ds("ds-rubric-item", _jl(ITEM, '{"id": "q2", "prompt": "p", "rubric": ["t"]}'), 2, "rubric[0]"),
        ds("ds-two-prompts", _jl(ITEM, '{"id": "q1", "prompt": "Other."}'), 2, "prompt"),
        # a repeated row's other fields were silently dropped (the first row won): a second answer key
        ds(
            "ds-two-references",
            _jl(
                '{"id": "q1", "prompt": "2+2?", "reference_answer": "4"}',
                '{"id": "q1", "prompt": "2+2?", "reference_answer": "5"}',
            ),
            2,
            "reference_answer",
            "two different reference answers",
        ),
        ds(
            "ds-two-categories",
            _jl('{"id": "q1", "prompt": "p", "category": "math"}', '{"id": "q1", "prompt": "p", "category": "code"}'),
            2,
            "category",
            "categories",
        ),
        ds(
            "ds-two-rubrics",
            _jl(
                '{"id": "q1", "prompt": "p", "rubric": [{"text": "a"}]}', '{"id": "q1", "prompt": "p", "rubric": [{"text": "b"}]}'
            ),
            2,
            "rubric",
            "rubrics",
        ),
        ds("ds-response-no-text", _jl(ITEM, '{"id": "q1", "prompt": "Name a prime.", "model": "m"}'), 2, "text"),
        ds(
            "ds-second-response",
            _jl(
                '{"id": "q1", "prompt": "p", "model": "m", "text": "a"}', '{"id": "q1", "prompt": "p", "model": "m", "text": "b"}'
            ),
            2,
            "model",
        ),
        ds("ds-empty", b"\n\n", words="no instances"),
        # a recorded response longer than a value may be (SQLite refused one of 1 GB: exit 70 before)
        ds(
            "ds-long-response",
            lambda: _jl(ITEM, '{"id": "q1", "prompt": "Name a prime.", "model": "m", "text": "' + "7" * (16 * MI + 1) + '"}'),
            2,
            "text",
            "--max-cell",
        ),
        ds(
            "ds-long-response-option",
            _jl(ITEM, '{"id": "q1", "prompt": "Name a prime.", "model": "m", "text": "' + "7" * 5000 + '"}'),
            2,
            "text",
            "longer than 4,096",
            options=("--max-cell", "4Ki"),
        ),
        ds(
            "ds-long-prompt-message",
            _jl(ITEM, '{"id": "q2", "prompt": [{"role": "user", "content": "' + "p" * 5000 + '"}]}'),
            2,
            "prompt[0].content",
            options=("--max-cell", "4Ki"),
        ),
        ds(
            "ds-long-line",
            _jl(ITEM, '{"id": "q2", "prompt": "' + "p" * (2 * MI) + '"}'),
            2,
            words="--max-line",
            options=("--max-line", "1Mi"),
        ),
        ds(
            "ds-gz-bomb",
            _bomb(2 * MI, b"", (ITEM + "\n").encode()),
            words="--max-decompressed",
            name="items.jsonl.gz",
            options=("--max-decompressed", "1Mi"),
        ),
        ds(
            "ds-nested",
            _jl(ITEM, '{"id": "q2", "prompt": "p", "metadata": {"a": ' + DEEPISH + "}}"),
            2,
            "metadata",
            "nested more than 100",
        ),
        ds(
            "ds-nul-in-id", _jl('{"id": "q\\u0000", "prompt": "a"}', '{"id": "q\\u0000", "prompt": "b"}'), 2, "prompt", "'q\\x00'"
        ),
    ]


def _toml_cases() -> list[Case]:
    def toml(
        case_id: str, change, line: int | None = None, field: str | None = None, words: str = "", options: tuple[str, ...] = ()
    ) -> Case:
        return Case(case_id, "exp.toml", b"", command=f"toml:{change}", line=line, field=field, words=words, options=options)

    return [
        toml("toml-invalid-utf8", "utf8", line=2, words="UTF-8"),
        toml("toml-not-toml", "garbage", words="TOML"),
        toml("toml-rpm-nan", "rpm = nan", field="models.standin-alpha.rpm"),
        toml("toml-timeout-inf", "timeout = inf", field="models.standin-alpha.timeout"),
        toml("toml-retry-nan", "retry_max_delay_s = nan", field="models.standin-alpha.retry_max_delay_s"),
        toml("toml-params-nan", "params = { top_p = nan }", field="models.standin-alpha.params.top_p"),
        toml(
            "toml-api-key-unset",
            'api_key_env = "NEPOTISM_TEST_SURELY_UNSET_VAR"',
            field="models.standin-alpha.api_key_env",
            words="NEPOTISM_TEST_SURELY_UNSET_VAR",
        ),
        # nesting: a RecursionError (exit 70) before, in every table or value shape
        toml("toml-deep-array", "append:deep = " + "[" * 5000 + "]" * 5000, words="nested"),
        toml("toml-deep-inline-tables", "append:deep = " + "{ a = " * 3000 + "1" + " }" * 3000, words="nested"),
        toml(
            "toml-deep-dotted-tables",
            "append:[" + ".".join(["deep"] * 300) + "]\nx = 1",
            field="deep",
            words="nested more than 100",
        ),
        toml(
            "toml-nested-option",
            "append:[deep]\nx = " + "[" * 15 + "]" * 15,
            field="deep",
            words="nested more than 16 levels",
            options=("--max-depth", "16"),
        ),
        toml(
            "toml-long-string",
            'append:[deep]\nnote = "' + "n" * 5000 + '"',
            field="deep.note",
            words="--max-cell",
            options=("--max-cell", "4Ki"),
        ),
    ]


CASES = _table_cases() + _dataset_cases() + _toml_cases()


def test_the_battery_is_large_enough():
    assert len(CASES) >= 130 and len({c.id for c in CASES}) == len(CASES)


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
    if case.command in ("metrics", "load", "reference", "models", "thresholds", "results"):
        bad = tmp / case.name
        bad.write_bytes(case.content())
        if case.command == "metrics":
            return ["metrics", str(bad), *models, "--bootstrap", "20"], bad
        if case.command == "load":
            return ["store", "load", str(bad), "--store", str(tmp / "s.db")], bad
        if case.command == "results":
            return ["report", str(bad), "--out", str(tmp / "report")], bad
        good = tmp / "scores.csv"
        good.write_text(PT + PT_OK)
        if case.command == "models":
            return ["metrics", str(good), "--models", str(bad), "--bootstrap", "20"], bad
        if case.command == "thresholds":
            return [
                "report",
                str(good),
                *models,
                "--thresholds",
                str(bad),
                "--out",
                str(tmp / "report"),
                "--bootstrap",
                "20",
            ], bad
        return ["metrics", str(good), "--reference", str(bad), *models, "--bootstrap", "20"], bad
    if case.command == "run.json":
        folder = tmp / "run-folder"
        folder.mkdir()
        bad = folder / case.name
        bad.write_bytes(case.content())
        return ["metrics", str(folder), "--bootstrap", "20"], bad
    exp = standin_experiment(tmp / "exp", "http://127.0.0.1:9/v1", items=2, recognition=False)
    if case.command == "run":
        (exp.parent / "items.jsonl").unlink()
        bad = exp.parent / case.name
        bad.write_bytes(case.content())
        exp.write_text(exp.read_text().replace('path = "items.jsonl"', f'path = "{case.name}"'))
    else:
        change = case.command.split(":", 1)[1]
        text = exp.read_text()
        if change == "utf8":
            exp.write_bytes(text.replace('name = "standin"', 'name = "st\udcff"', 1).encode("utf-8", "surrogateescape"))
        elif change == "garbage":
            exp.write_text(text + "\n[[[ not toml\n")
        elif change.startswith("append:"):
            exp.write_text(text + "\n" + change.removeprefix("append:") + "\n")
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
    done = subprocess.run([_exe(), *case.options, *args], capture_output=True, text=True, timeout=300, cwd=tmp_path)
    message = (done.stderr + done.stdout).strip()
    assert done.returncode == 2, message[-2000:]
    assert "Traceback" not in message and len(message.splitlines()) == 1, message[-2000:]
    assert not re.search("[\x00-\x1f\x7f-\x9f\u202a-\u202e]", message), repr(message)
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


def _peak_rss(args: list[str], cwd: Path) -> tuple[int, str, int]:
    """(exit status, stderr, peak resident bytes) of ``nepotism ARGS`` (its own peak: `run_measured`)."""
    done, peak = run_measured([_exe(), *args], capture_output=True, text=True, timeout=600, cwd=cwd)
    return done.returncode, done.stderr, peak


@pytest.mark.parametrize(
    "name, data, options",
    [
        ("bomb.csv.gz", lambda: _bomb((1 << 30) + MI), ()),  # 2.7 MB inflating to 1 GiB: 3.5 GB, exit 70 before
        ("long.jsonl", lambda: _jl(PT_JSON_OK, _pt_json("7", ("note", '"' + "x" * 128 * MI + '"'))), ("--max-line", "1Mi")),
    ],
)
def test_a_file_beyond_a_limit_is_refused_at_a_peak_memory_far_below_its_size(tmp_path, name, data, options):
    """Peak memory of refusing a gzip bomb, or a line of 128 MiB, stays within 128 MiB of reading a
    two-row table: the bomb is never inflated into memory, the line never read past the limit."""
    (tmp_path / "models.toml").write_text(STANDIN_MODELS)
    good, bad = tmp_path / "good.csv", tmp_path / name
    good.write_text(PT + PT_OK)
    bad.write_bytes(data())
    common = ["--models", str(tmp_path / "models.toml"), "--bootstrap", "20"]
    code, _, baseline = _peak_rss(["metrics", str(good), *common], tmp_path)
    assert code == 0
    code, message, peak = _peak_rss([*options, "metrics", str(bad), *common], tmp_path)
    assert code == 2 and str(bad) in message and "--max-" in message, message[-2000:]
    assert peak - baseline < 128 * MI, f"peak {peak / MI:.0f} MiB, a two-row table {baseline / MI:.0f} MiB"
