"""`JudgingOutcome`'s short text says what is true with and without keeping the judgments."""

import asyncio

from tests.runner.conftest import ScriptedBackend, interpret, render
from tests.runner.test_engine import _runner, _tasks


def test_the_text_of_an_outcome_that_kept_nothing_says_so_instead_of_zero_written(store):
    dropped = asyncio.run(_runner(store, ScriptedBackend()).judge(_tasks(), render, interpret, keep=False))
    assert repr(dropped) == "JudgingOutcome(16 judgments read, not kept)"
    kept = asyncio.run(_runner(store, ScriptedBackend()).judge(_tasks(), render, interpret))
    assert repr(kept) == "JudgingOutcome(16 judgments, 0 newly written)"  # a rerun: every call replayed
