import json

import pytest

from nepotism.errors import InputError
from nepotism.leakage import pools
from nepotism.leakage.exports import FORMATS, PreferencePair, SyntheticExample, export_dataset
from nepotism.leakage.pools import PoolItem, check_disjoint, load_pool, normalise_text


def test_public_api():
    assert set(pools.__all__) == {"PoolItem", "check_disjoint", "load_pool", "normalise_text"}


def test_disjoint_pools_pass():
    check_disjoint([PoolItem("t1", "Name a fruit.")], [PoolItem("e1", "Name a vegetable.")])


def test_exact_overlap_is_refused():
    with pytest.raises(InputError, match="exact match"):
        check_disjoint([PoolItem("t1", "Name a fruit.")], [PoolItem("e1", "Name a fruit.")])


def test_normalised_overlap_is_refused_and_counted():
    train = [PoolItem("t1", "Name a fruit."), PoolItem("t2", "What is 2+2?")]
    evaluation = [PoolItem("e1", "  name A FRUIT!! "), PoolItem("e2", "what is 2 + 2")]
    with pytest.raises(InputError, match=r"after normalisation \(and 1 more\)") as err:
        check_disjoint(train, evaluation, eval_path="eval.jsonl")
    assert err.value.path == "eval.jsonl"


def test_shared_id_is_refused():
    with pytest.raises(InputError, match="also an id"):
        check_disjoint([PoolItem("x", "Name a fruit.")], [PoolItem("x", "Name a colour.")])


def test_normalise_text():
    assert normalise_text("Ｈello,   WORLD!") == "hello world"


def test_load_pool_reads_and_validates(tmp_path):
    path = tmp_path / "p.jsonl"
    path.write_text('{"id": "a", "prompt": "Hi?", "response": "Hello."}\n\n{"id": 2, "prompt": "Bye?"}\n')
    items = load_pool(path)
    assert [i.id for i in items] == ["a", "2"] and items[0].response == "Hello." and items[1].response is None
    path.write_text('{"id": "a", "prompt": "Hi?"}\n{"id": "a", "prompt": "Again?"}\n')
    with pytest.raises(InputError) as err:
        load_pool(path)
    assert err.value.line == 2 and err.value.field == "id"


DATA = [SyntheticExample("i1", "Say hi.", "Hi!", "gen"), SyntheticExample("i2", "Say bye.", "Bye!", "gen")]
PAIRS = [PreferencePair("i1", "Say hi.", "Hi there!", "No.", "gen")]


def _rows(path):
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_trl_formats(tmp_path):
    (messages,) = export_dataset(DATA, tmp_path, "g", "trl-messages")
    assert _rows(messages)[0] == {"messages": [{"role": "user", "content": "Say hi."}, {"role": "assistant", "content": "Hi!"}]}
    (pc,) = export_dataset(DATA, tmp_path, "g", "trl-prompt-completion")
    assert _rows(pc)[1] == {"prompt": "Say bye.", "completion": "Bye!"}
    (dpo,) = export_dataset(PAIRS, tmp_path, "g", "trl-dpo")
    assert _rows(dpo) == [{"prompt": "Say hi.", "chosen": "Hi there!", "rejected": "No."}]
    with pytest.raises(ValueError):
        export_dataset(DATA, tmp_path, "g", "trl-dpo")


def test_llamafactory_formats_and_dataset_info(tmp_path):
    alpaca, info = export_dataset(DATA, tmp_path, "sft", "llamafactory-alpaca")
    assert _rows(alpaca)[0] == {"instruction": "Say hi.", "input": "", "output": "Hi!"}
    share, _ = export_dataset(PAIRS, tmp_path, "pref", "llamafactory-sharegpt")
    assert _rows(share)[0]["chosen"] == {"from": "gpt", "value": "Hi there!"}
    entries = json.loads(info.read_text())
    assert entries["sft"]["file_name"] == alpaca.name and entries["sft"]["formatting"] == "alpaca"
    assert entries["pref"]["ranking"] is True and entries["pref"]["formatting"] == "sharegpt"
    assert entries["pref"]["columns"]["messages"] == "conversations"
    assert set(FORMATS) >= {"trl-messages", "llamafactory-alpaca"}


@pytest.mark.parametrize(
    ("method", "wrong"),
    [
        ("sft", PreferencePair("q1", "Pick one.", "this", "that", "judge-x")),
        ("dpo", SyntheticExample("q1", "Say hi.", "Hi.", "gen-x")),
    ],
)
def test_training_data_of_the_other_kind_is_refused_before_a_model_is_loaded(tmp_path, method, wrong):
    """SFT trains on examples and DPO on preference pairs: the other kind used to fail inside the
    trainer with an AttributeError (mypy strict found the union); it is a ValueError naming the item."""
    from nepotism.leakage import training

    if not training.training_available():
        pytest.skip("the `train` extra (torch, transformers, trl, peft) is not installed")
    right = (
        SyntheticExample("q0", "Say hi.", "Hi.", "gen-x")
        if method == "sft"
        else PreferencePair("q0", "Pick one.", "this", "that", "judge-x")
    )
    with pytest.raises(ValueError, match=f"{method} trains on .*item 1 is a {type(wrong).__name__}"):
        training.train_student(method, "no-such-base", [right, wrong], tmp_path)
    assert list(tmp_path.iterdir()) == []  # nothing written, no model looked for
