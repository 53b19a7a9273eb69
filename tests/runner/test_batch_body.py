"""A call the Batch-API wire format cannot express stops `write_batch` (exit 2 for a user) before
any file is written: it was counted under ``unsupported`` and left out, a path no plan reached."""

from __future__ import annotations

import dataclasses
import itertools

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
        before = sorted(p.name for p in tmp_path.iterdir())
        chat = Request(model="standin-alpha", messages=(Message("user", "Question 1?"),), continuation="an answer")
        extra = plan_call(round_.endpoints["standin-alpha"], chat)
        # planned last, after every other call of the round was written to its file
        with_it = dataclasses.replace(round_, plan=lambda: itertools.chain(round_.plan(), [[extra]]))
        with pytest.raises(InputError, match="model 'standin-alpha'") as err:
            write_batch(exp, with_it, tmp_path / "b")
        assert err.value.field == "perplexity.prompt"
        assert sorted(p.name for p in tmp_path.iterdir()) == before  # nothing left behind, not even a part
        manifest = write_batch(exp, round_, tmp_path / "b")  # the plan as `nepotism run` makes it: every call written
    assert manifest["requests"] == round_.to_send > 0 and "unsupported" not in manifest
    assert sorted(p.name for p in (tmp_path / "b").iterdir()) == sorted([*(f["file"] for f in manifest["files"]), "batch.json"])
