from pathlib import Path

import pytest

import nepotism.experiment as experiment
from nepotism.errors import InputError
from nepotism.experiment import load_experiment, task_protocol

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"


def test_all_is_exported():
    for name in experiment.__all__:
        assert hasattr(experiment, name)


def test_example_parses_into_frozen_dataclasses():
    exp = load_experiment(EXAMPLES / "standin.toml")
    assert exp.name == "standin-self-preference"
    assert set(exp.models) == {"standin-alpha", "standin-alpha-mini", "standin-beta"}
    alpha = exp.models["standin-alpha"]
    assert alpha.backend == "openai" and alpha.concurrency == 8 and alpha.rpm == 6000.0
    assert exp.models["standin-beta"].tpm == 200000.0
    assert exp.generation.generators == ("standin-alpha", "standin-alpha-mini", "standin-beta")
    assert [c.name for c in exp.conditions] == ["default", "impartial"]
    assert dict(exp.conditions[1].options) == {"impartial": True}
    assert [p.protocol for p in exp.protocols] == ["pairwise", "recognition"]
    assert dict(exp.protocols[0].args) == {"pairs": "judge-vs-others", "both_orders": True}
    assert Path(exp.dataset.path).is_absolute() and Path(exp.dataset.path).exists()
    assert exp.output_dir.endswith("results/standin") and exp.output_format == "csv"
    with pytest.raises(AttributeError):
        exp.name = "x"
    config = exp.as_config()
    assert config["models"]["standin-alpha"]["base_url"].startswith("http://")


def _write(tmp_path, body: str) -> Path:
    (tmp_path / "items.jsonl").write_text('{"id": "q", "prompt": "hi"}\n')
    path = tmp_path / "exp.toml"
    path.write_text(body)
    return path


BASE = f"""
[experiment]
name = "t"
registry = ["{EXAMPLES / "standin_models.toml"}"]
[dataset]
path = "items.jsonl"
[models.standin-alpha]
backend = "openai"
base_url = "http://127.0.0.1:1/v1"
api_key_env = "SOME_KEY_VAR"
[judging]
judges = ["standin-alpha"]
[[judging.protocols]]
protocol = "pairwise"
"""


def test_minimal_file_and_defaults(tmp_path):
    exp = load_experiment(_write(tmp_path, BASE))
    model = exp.models["standin-alpha"]
    assert model.api_key_env == "SOME_KEY_VAR" and model.concurrency == 4 and model.max_attempts == 4
    assert exp.generation.generators == () and [c.name for c in exp.conditions] == ["default"]
    assert exp.protocols[0].replicates == 1 and exp.output_dir is None


@pytest.mark.parametrize(
    "change, field",
    [
        (("[dataset]", "[dataset]\nlimit = 0"), "dataset.limit"),
        (('backend = "openai"', 'backend = "vllm"'), "models.standin-alpha.backend"),
        (('api_key_env = "SOME_KEY_VAR"', 'colour = "red"'), "models.standin-alpha.colour"),
        (('api_key_env = "SOME_KEY_VAR"', 'params = { api_key = "sk-x" }'), "models.standin-alpha.params.api_key"),
        (('api_key_env = "SOME_KEY_VAR"', "concurrency = -1"), "models.standin-alpha.concurrency"),
        (('base_url = "http://127.0.0.1:1/v1"', 'base_url = "ftp://x"'), "models.standin-alpha.base_url"),
        (('judges = ["standin-alpha"]', 'judges = ["standin-beta"]'), "judging.judges"),
        (('protocol = "pairwise"', 'protocol = "duel"'), "judging.protocols[0].protocol"),
        (('protocol = "pairwise"', 'protocol = "pairwise"\npairs = "some"'), "judging.protocols[0].pairs"),
        (('protocol = "pairwise"', 'protocol = "pairwise"\ngenerators = ["a"]'), "judging.protocols[0].generators"),
        (
            ('protocol = "pairwise"', 'protocol = "pairwise"\noptions = { mode = "labels", reasoning = "think" }'),
            "judging.protocols[0].options",
        ),
        (
            ('protocol = "pairwise"', 'protocol = "pairwise"\noptions = { mode = "labels", min_label_mass = 1.5 }'),
            "judging.protocols[0].options",
        ),
        (
            ('protocol = "pairwise"', 'protocol = "pairwise"\noptions = { mode = "labels", min_label_mass = "high" }'),
            "judging.protocols[0].options",
        ),
        (("[models.standin-alpha]", "[models.gpt-unknown-9]"), "models.gpt-unknown-9"),
        (('name = "t"', "name = 3"), "experiment.name"),
        (("[experiment]", "[extras]\nx = 1\n[experiment]"), "extras"),
    ],
)
def test_errors_name_the_file_and_the_key(tmp_path, change, field):
    path = _write(tmp_path, BASE.replace(*change, 1))
    with pytest.raises(InputError) as err:
        load_experiment(path)
    assert err.value.path == str(path)
    assert err.value.field == field, str(err.value)


def test_min_label_mass_is_an_experiment_option(tmp_path):
    body = BASE.replace('protocol = "pairwise"', 'protocol = "pairwise"\noptions = { mode = "labels", min_label_mass = 0.2 }')
    exp = load_experiment(_write(tmp_path, body))
    assert exp.protocols[0].options["min_label_mass"] == 0.2


def test_dataset_needs_exactly_one_source(tmp_path):
    path = _write(tmp_path, BASE.replace('path = "items.jsonl"', 'path = "items.jsonl"\nbundled = "x"'))
    with pytest.raises(InputError, match="exactly one"):
        load_experiment(path)


def test_bad_toml_and_missing_file(tmp_path):
    path = _write(tmp_path, BASE + "\n[[[")
    with pytest.raises(InputError, match="not valid TOML"):
        load_experiment(path)
    with pytest.raises(InputError, match="not found"):
        load_experiment(tmp_path / "nope.toml")


def test_task_protocol_follows_planner_arguments(tmp_path):
    body = BASE.replace('protocol = "pairwise"', 'protocol = "recognition"\npairwise = true')
    exp = load_experiment(_write(tmp_path, body))
    assert task_protocol(exp.protocols[0]) == "recognition-pairwise"


def test_gguf_model_needs_model_or_path(tmp_path):
    gguf = BASE.replace(
        'backend = "openai"\nbase_url = "http://127.0.0.1:1/v1"\napi_key_env = "SOME_KEY_VAR"',
        'backend = "gguf"\nmodel = "smollm2-135m-instruct"\nconcurrency = 1',
    )
    exp = load_experiment(_write(tmp_path, gguf))
    cfg = exp.models["standin-alpha"]
    assert cfg.backend == "gguf" and cfg.model == "smollm2-135m-instruct" and cfg.n_ctx == 4096
    both = gguf.replace('model = "smollm2-135m-instruct"', 'model = "x"\npath = "m.gguf"')
    with pytest.raises(InputError) as err:
        load_experiment(_write(tmp_path, both))
    assert err.value.field == "models.standin-alpha.model"


def test_dataset_file_is_the_path_or_a_bundled_file_or_none(tmp_path):
    exp = load_experiment(_write(tmp_path, BASE))
    assert exp.dataset_file() == tmp_path / "items.jsonl"
    live = load_experiment(_write(tmp_path, BASE.replace('path = "items.jsonl"', 'bundled = "live/items"')))
    assert live.dataset_file().name == "items.jsonl" and live.dataset_file().is_file()
    missing = load_experiment(_write(tmp_path, BASE.replace('path = "items.jsonl"', 'bundled = "nothing-here"')))
    with pytest.raises(InputError) as err:
        missing.dataset_file()
    assert err.value.field == "dataset.bundled"
    store = load_experiment(_write(tmp_path, BASE.replace('path = "items.jsonl"', "from_store = true")))
    assert store.dataset_file() is None


def test_two_protocol_entries_whose_judgments_would_share_ids_are_refused(tmp_path):
    """Judgment ids name the protocol, template, prompt-changing options, condition and replicate —
    not temperature: two entries differing only there would overwrite each other's judgments."""
    twice = BASE + '[[judging.protocols]]\nprotocol = "pairwise"\noptions = { temperature = 0.7 }\n'
    with pytest.raises(InputError, match=r"protocols\[0\] and \[1\].*differ in temperature.*conditions") as err:
        load_experiment(_write(tmp_path, twice))
    assert err.value.field == "judging.protocols[1].options"
    # entries whose judgments are told apart by their ids are fine: another template (cot), or the
    # variant as a condition, or the same request twice
    for body in (
        BASE + '[[judging.protocols]]\nprotocol = "pairwise"\noptions = { reasoning = "cot" }\n',
        BASE.replace("[judging]", '[judging]\nconditions = ["default", { name = "warm", options = { temperature = 0.7 } }]'),
        BASE + '[[judging.protocols]]\nprotocol = "pairwise"\noptions = { temperature = 0.0 }\n',
    ):
        load_experiment(_write(tmp_path, body))


@pytest.mark.parametrize(
    "deep, field",
    [
        ("x = " + "[" * 5000 + "]" * 5000, None),  # a RecursionError in the parser before
        ("x = " + "{ a = " * 3000 + "1" + " }" * 3000, None),
        ("[" + ".".join(["x"] * 200) + "]\ny = 1", "x"),  # parsed whole: a RecursionError later, in its use
        ("[t]\nx = " + "[" * 100 + "]" * 100, "t"),  # within the parser's reach, beyond the limit
    ],
)
def test_deeply_nested_toml_is_an_input_error_naming_the_file(tmp_path, deep, field):
    path = _write(tmp_path, BASE + "\n" + deep + "\n")
    with pytest.raises(InputError, match="nested") as err:
        load_experiment(path)
    assert err.value.path == str(path) and err.value.field == field and "--max-depth" in err.value.message


def test_every_experiment_reader_reads_through_the_limits(tmp_path):
    """An experiment within the depth limit loads; lowered below its own nesting, it is refused by
    each reader of experiment-shaped files (run, mitigate and leakage plans share `read_toml`)."""
    from nepotism.input_limits import InputLimits, applied

    path = _write(tmp_path, BASE)
    load_experiment(path)
    with applied(InputLimits(depth=2)), pytest.raises(InputError, match="nested more than 2 levels"):
        load_experiment(path)
    with applied(InputLimits(cell=3)), pytest.raises(InputError, match="--max-cell"):
        experiment.read_toml(path)
