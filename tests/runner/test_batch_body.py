"""A call the Batch-API wire format cannot express stops `write_batch` (exit 2 for a user) before
any file is written: it was counted under ``unsupported`` and left out, a path no plan reached."""

from __future__ import annotations

import dataclasses

import pytest

from nepotism.backends.base import Message, Request
from nepotism.errors import InputError
from nepotism.experiment import load_experiment
from nepotism.runner.batch import plan_round, write_batch
from nepotism.runner.calls import plan_call
from nepotism.store import Store
from nepotism.testing.experiments import standin_experiment


def test_a_chat_continuation_in_a_batch_round_stops_it_naming_the_model_and_writes_nothing(tmp_path):
    exp = load_experiment(standin_experiment(tmp_path, "http://127.0.0.1:9/v1", items=2))
    with Store(tmp_path / "s.db") as store:
        round_ = plan_round(exp, store)
    chat = Request(model="standin-alpha", messages=(Message("user", "Question 1?"),), continuation="an answer")
    extra = plan_call(round_.endpoints["standin-alpha"], chat)
    with pytest.raises(InputError, match="model 'standin-alpha'") as err:
        write_batch(exp, dataclasses.replace(round_, to_send=[*round_.to_send, extra]), tmp_path / "b")
    assert err.value.field == "perplexity.prompt" and not (tmp_path / "b").exists()
    manifest = write_batch(exp, round_, tmp_path / "b")  # the plan as `nepotism run` makes it: every call written
    assert manifest["requests"] == len(round_.to_send) and "unsupported" not in manifest
