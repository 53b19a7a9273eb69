"""What every in-process model backend (llama.cpp, transformers) does the same way.

`InProcessBackend.complete` loads the model once in a worker thread (a load failure becomes a
``model_unavailable`` completion, never an exception), then serves the request in a worker thread
under the model's lock through the subclass's ``_serve``, which dispatches on the request mode.
`Unservable` is what the serving code raises for a request the model cannot serve; it becomes the
completion's error string. A label request with ``labels_after`` (paper 001 §4.2: the judge
explains, then writes "[[A]]") is served here for every subclass: the reply is generated, then the
prompt and the reply up to the last occurrence of the marker (tokenised after the prompt) are
evaluated and the labels read at the next position — the distribution at the token after "[[".
Without the marker the completion has no label log-probabilities and the warning ``no_label_marker``;
a marker written more than once adds ``label_marker_repeated``. `model_threads` is the one rule for
how many CPU threads a model computes with. What stays in the subclasses: loading, tokenising, the
three modes and which library exceptions count as a model error.
"""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace
from typing import Any

from nepotism.backends.base import Completion, Request, failed, marker_end
from nepotism.errors import InputError

__all__ = ["THREADS_ENV", "InProcessBackend", "Unservable", "label_warnings", "model_threads"]

#: The environment variable giving the CPU threads of in-process models that do not name theirs.
THREADS_ENV = "NEPOTISM_MODEL_THREADS"
_DEFAULT_THREADS, _MAX_THREADS = 2, 1024


def model_threads(threads: int | None = None) -> int:
    """The CPU threads a model computes with: ``threads`` when given (an experiment's ``n_threads``,
    a backend's argument), else ``$NEPOTISM_MODEL_THREADS``, else 2.

    The thread count is a property of the machine, not of the experiment: the same file can run
    with 1 thread on a shared laptop and 16 on a server. It may move a model's numbers in their
    last digits (the matrix products are split differently; greedy text can then part ways after
    a near tie), which is why the tests run the local models under 1 and 2 threads. A value that
    is not an integer from 1 to 1024 raises `InputError` naming the variable.
    """
    if threads is None:
        raw = os.environ.get(THREADS_ENV, "").strip()
        if not raw:
            return _DEFAULT_THREADS
        try:
            threads = int(raw)
        except ValueError:
            threads = 0
        if not 1 <= threads <= _MAX_THREADS:
            raise InputError(f"must be an integer from 1 to {_MAX_THREADS}, got {raw!r}", path="<environment>", field=THREADS_ENV)
    elif isinstance(threads, bool) or not isinstance(threads, int) or not 1 <= threads <= _MAX_THREADS:
        raise ValueError(f"threads must be an integer from 1 to {_MAX_THREADS}, got {threads!r}")
    return threads


def label_warnings(seqs: Mapping[str, Sequence[Sequence[int]]], top_ids: Iterable[int]) -> tuple[str, ...]:
    """The warnings of a label read from the full next-token distribution.

    ``seqs`` maps each label to the token sequences of its spellings; ``top_ids`` are the most
    probable next tokens (the top-k). ``label_not_in_top_k:<label>`` (the same warning the HTTP backends
    give) when no spelling of the label starts with one of them: its probability is still exact
    here, but the model hardly considered it; ``labels_overlap`` when one label's tokens are a
    prefix of another's (``"1"`` and ``"10"``), so their probabilities overlap.
    """
    top = {int(t) for t in top_ids}
    out = [
        f"label_not_in_top_k:{label}"
        for label, spellings in seqs.items()
        if not any(seq and int(seq[0]) in top for seq in spellings)
    ]
    flat = [(label, tuple(seq)) for label, spellings in seqs.items() for seq in spellings]
    if any(a != b and len(sa) < len(sb) and sb[: len(sa)] == sa for a, sa in flat for b, sb in flat):
        out.append("labels_overlap")
    return tuple(out)


class Unservable(Exception):
    """A request this model cannot serve; ``error`` is the Completion's error string."""

    def __init__(self, error: str) -> None:
        super().__init__(error)
        self.error = error


class InProcessBackend:
    """Shared ``complete`` for backends that hold the model in this process.

    Subclasses set ``_loaded`` (None until `load`), ``_load_errors`` (exceptions of `load` that
    mean the model is unavailable) and ``_model_errors`` (exceptions while serving that mean a
    model error), and implement ``load``, ``_prepare`` (the prompt's token ids, raising
    `Unservable`), ``_labels``, ``_continuation`` and ``_generate`` (each returning ``(text,
    completion keyword arguments)``) and ``_text_tokens`` (a text's token ids after a prompt: no
    BOS, no special tokens). ``_enter`` gives the context the request is served in.
    """

    _loaded: Any = None
    _load_errors: tuple[type[BaseException], ...] = (ValueError, RuntimeError)
    _model_errors: tuple[type[BaseException], ...] = (RuntimeError, ValueError)

    def load(self) -> None:  # pragma: no cover - every subclass defines it
        raise NotImplementedError

    def _load_failure(self, exc: BaseException) -> str:
        return str(exc)

    def _on_model_error(self, loaded: Any) -> None:
        """Hook run after a model error (e.g. to clear a half-written cache)."""

    async def complete(self, request: Request) -> Completion:
        start = time.perf_counter()
        try:
            if self._loaded is None:
                await asyncio.to_thread(self.load)
        except self._load_errors as exc:
            return failed(f"model_unavailable: {self._load_failure(exc)}"[:300], latency_s=time.perf_counter() - start)
        assert self._loaded is not None
        return await asyncio.to_thread(self._serve, self._loaded, request, start)

    def _enter(self, loaded: Any) -> Any:
        return loaded.lock

    def _serve(self, loaded: Any, request: Request, start: float) -> Completion:
        with self._enter(loaded):
            text: str | None
            try:
                ids = self._prepare(loaded, request)
                if request.labels_after is not None:
                    text, kwargs = self._labels_after(loaded, request, ids)
                elif request.mode == "labels":
                    text, kwargs = self._labels(loaded, request, ids)
                elif request.mode == "continuation":
                    text, kwargs = self._continuation(loaded, request, ids)
                else:
                    text, kwargs = self._generate(loaded, request, ids)
            except Unservable as exc:
                return failed(exc.error, latency_s=time.perf_counter() - start)
            except self._model_errors as exc:
                self._on_model_error(loaded)
                return failed(f"model_error: {type(exc).__name__}: {exc}"[:300], latency_s=time.perf_counter() - start)
        return Completion(text=text, latency_s=time.perf_counter() - start, **kwargs)

    def _text_tokens(self, loaded: Any, text: str) -> list[int]:  # pragma: no cover - every subclass defines it
        raise NotImplementedError

    def _prepare(self, loaded: Any, request: Request) -> list[int]:  # pragma: no cover - every subclass defines it
        raise NotImplementedError

    def _labels(
        self, loaded: Any, request: Request, ids: list[int]
    ) -> tuple[str | None, dict[str, Any]]:  # pragma: no cover - every subclass defines it
        raise NotImplementedError

    def _continuation(
        self, loaded: Any, request: Request, ids: list[int]
    ) -> tuple[str | None, dict[str, Any]]:  # pragma: no cover - every subclass defines it
        raise NotImplementedError

    def _generate(
        self, loaded: Any, request: Request, ids: list[int]
    ) -> tuple[str, dict[str, Any]]:  # pragma: no cover - every subclass defines it
        raise NotImplementedError

    def _labels_after(self, loaded: Any, request: Request, ids: list[int]) -> tuple[str, dict[str, Any]]:
        """Generate the reply, then read the labels at the position after its last ``labels_after`` marker."""
        text, generated = self._generate(loaded, replace(request, labels=None, labels_after=None), ids)
        assert request.labels_after is not None
        end, count = marker_end(text, request.labels_after)
        usage = dict(generated.get("usage") or {})
        raw: dict[str, Any] = {
            "generation": generated.get("raw"),
            "marker": request.labels_after,
            "marker_end": end,
            "markers": count,
        }
        out: dict[str, Any] = {"usage": usage, "raw": raw, "finish_reason": generated.get("finish_reason")}
        if end is None:
            return text, out | {"warnings": ("no_label_marker",)}
        _, read = self._labels(loaded, request, ids + self._text_tokens(loaded, text[:end]))
        raw["labels"] = read.get("raw")
        warnings = tuple(read.get("warnings", ())) + (("label_marker_repeated",) if count > 1 else ())
        return text, out | {"label_logprobs": read["label_logprobs"], "warnings": warnings}
