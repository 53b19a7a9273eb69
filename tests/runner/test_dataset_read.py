"""A run's JSON Lines dataset is read without pandas, with the same records and the same errors."""

import gzip
import json
import subprocess
import sys

import pytest

from nepotism.errors import InputError
from nepotism.experiment import load_experiment
from nepotism.runner.experiment_run import load_dataset
from nepotism.tables import read_rows
from nepotism.testing.experiments import standin_experiment

ROWS = [
    {"id": "q1", "prompt": "First?", "category": "math", "metadata": {"k": 1}},
    {"id": "q2", "prompt": [{"role": "user", "content": "Second?"}]},
    {"id": "q1", "prompt": "First?", "model": "standin-alpha", "text": "One."},
]


def _experiment(tmp_path, text: str, name: str = "items.jsonl"):
    exp = standin_experiment(tmp_path, "http://127.0.0.1:9")
    data = tmp_path / name
    if name.endswith(".gz"):
        data.write_bytes(gzip.compress(text.encode()))
    else:
        data.write_text(text, encoding="utf-8")
    toml = exp.read_text().replace('path = "items.jsonl"', f'path = "{name}"')
    exp.write_text(toml)
    return load_experiment(exp)


def _jsonl(rows) -> str:
    return "".join(json.dumps(r) + "\n" for r in rows)


def test_jsonl_dataset_is_read_without_importing_pandas(tmp_path):
    exp = _experiment(tmp_path, _jsonl(ROWS))
    code = (
        "import sys\n"
        "from nepotism.experiment import load_experiment\n"
        "from nepotism.runner.experiment_run import load_dataset\n"
        f"instances, recorded = load_dataset(load_experiment({str(exp.path)!r}))\n"
        "print(len(instances), len(recorded), 'pandas' in sys.modules, 'pyarrow' in sys.modules)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.split() == ["2", "1", "False", "False"]


@pytest.mark.parametrize("name", ["items.jsonl", "items.jsonl.gz", "items.ndjson"])
def test_same_records_as_the_table_reader(tmp_path, name):
    text = "\ufeff" + _jsonl(ROWS[:2]) + "\n  \n" + _jsonl(ROWS[2:])  # a BOM and blank lines
    exp = _experiment(tmp_path, text, name)
    instances, recorded = load_dataset(exp)
    assert [i.id for i in instances] == ["q1", "q2"]
    assert instances[0].metadata == {"k": 1} and instances[0].category == "math"
    assert instances[1].prompt[0].content == "Second?"
    assert [(r.instance_id, r.generator, r.text) for r in recorded] == [("q1", "standin-alpha", "One.")]
    assert [row for _, row in read_rows(tmp_path / name)] == ROWS  # what the pandas-backed reader gives


@pytest.mark.parametrize(
    "text, line, field, message",
    [
        ('{"id": "q1", "prompt": "a"}\n{"id": "q2", "prompt": \n', 2, None, "not valid JSON"),
        ('{"id": "q1", "prompt": "a"}\n\n{"id": "q2", "id": "q3", "prompt": "b"}\n', 3, "id", "appears twice"),
        ('{"id": "q1", "prompt": "a"}\n[1, 2]\n', 2, None, "JSON object"),
        ('{"id": "q1", "prompt": "a"}\n{"id": "q2", "prompt": ""}\n', 2, "prompt", "needs a prompt"),
        ('{"id": "q1", "prompt": "a"}\n{"id": "q1", "prompt": "b"}\n', 2, "prompt", "two different prompts"),
    ],
)
def test_errors_name_file_line_and_field(tmp_path, text, line, field, message):
    exp = _experiment(tmp_path, text)
    with pytest.raises(InputError) as err:
        load_dataset(exp)
    assert err.value.path == str(tmp_path / "items.jsonl")
    assert err.value.line == line
    assert err.value.field == field
    assert message in err.value.message


def test_invalid_utf8_names_its_line(tmp_path):
    exp = _experiment(tmp_path, "")
    (tmp_path / "items.jsonl").write_bytes(b'{"id": "q1", "prompt": "a"}\n{"id": "q2", "prompt": "\xff"}\n')
    with pytest.raises(InputError) as err:
        load_dataset(exp)
    assert err.value.line == 2 and "UTF-8" in err.value.message


def test_a_repeated_row_may_leave_out_or_add_what_the_first_did_not_say(tmp_path):
    """Rows repeating an instance (one per recorded response) need not repeat its reference answer,
    category or rubric; a later row that gives one the first did not is kept, not dropped."""
    exp = _experiment(
        tmp_path,
        _jsonl(
            [
                {"id": "q1", "prompt": "2+2?", "model": "standin-alpha", "text": "4"},
                {"id": "q1", "prompt": "2+2?", "model": "standin-beta", "text": "5", "reference_answer": "4", "category": "math"},
                {"id": "q1", "prompt": "2+2?", "reference_answer": "4"},
            ]
        ),
    )
    instances, recorded = load_dataset(exp)
    assert [(i.id, i.reference_answer, i.category) for i in instances] == [("q1", "4", "math")]
    assert len(recorded) == 2


def test_an_experiment_built_without_a_dataset_source_is_an_input_error(tmp_path):
    """An `Experiment` made in Python (not by `load_experiment`, which refuses it) whose dataset
    names no path, bundled set or store: `load_dataset` says so, naming the dataset field, rather
    than failing on the missing file path (mypy strict found ``dataset_file()`` may be None here)."""
    import dataclasses

    from nepotism.experiment import DatasetConfig

    exp = dataclasses.replace(_experiment(tmp_path, _jsonl(ROWS)), dataset=DatasetConfig())
    with pytest.raises(InputError) as caught:
        load_dataset(exp)
    assert caught.value.field == "dataset"
    assert "path, bundled and from_store" in str(caught.value)
