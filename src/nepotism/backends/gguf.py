"""In-process GGUF models through llama-cpp-python (the ``local`` extra).

`GGUFBackend` serves one model: a packaged id from `nepotism.backends.local_models` (verified by
SHA-256) or a path to a ``.gguf`` file (verified when ``sha256=`` is given). Models stay loaded
for the life of the process and are shared by backends that ask for the same file and settings;
each loaded model has one lock, and every model call runs in a worker thread
(``asyncio.to_thread``) so the event loop stays free.

Chat messages are rendered with the chat template stored in the GGUF file itself (the same one
for every mode, so a label verdict and a generated verdict see the same prompt); a raw ``prompt``
is tokenized as is, with the model's BOS token. Every request evaluates its prompt from the
start, so the same request always gets the same numbers. ``reuse_prefix=True`` keeps the KV cache
of the previous request and evaluates only the tokens after the common prefix: faster when many
prompts share a template, but the figures then depend on the order of requests (llama.cpp's
batched and one-token kernels round differently; SmolLM2 moved by ~0.03 nats in a test).

* Label verdicts: the prompt is evaluated once, with no sampling, and each label gets its
  log-probability under the full-vocabulary log-softmax at the next position. A label is spelled
  two ways, ``label`` and ``" " + label``; each distinct token sequence counts, and their
  probabilities are summed (they are disjoint continuations). A spelling of several tokens is
  scored exactly by the chain rule (its tokens are evaluated after the prompt, then dropped).
  ``extra={"label_spellings": "exact"}`` keeps the first spelling only. Labels whose token
  sequences are prefixes of one another (``"1"`` and ``"10"``) overlap; a ``labels_overlap``
  warning says so. A label none of whose spellings starts with one of the 20 most probable next
  tokens gets a ``label_not_in_top_k:<label>`` warning, as over HTTP (its log-probability is still
  exact here).
* Label verdicts after the judge's explanation (``labels_after``, paper 001 §4.2): the reply is
  generated, then the prompt and the reply up to its last marker are evaluated and the labels read
  as above at the next position (`nepotism.backends._inprocess`).
* Generation: greedy at temperature 0, otherwise sampled with the request's seed (or the
  backend's); other llama.cpp sampling parameters may go in ``extra``.
* Continuation log-probabilities: the continuation is tokenized on its own (no BOS) after the
  prompt tokens, and the log-probability of each of its tokens given everything before is
  returned.

Threads, batch and attention: ``n_threads`` (default `model_threads`: ``$NEPOTISM_MODEL_THREADS``,
else 2) is the CPU threads of both prompt evaluation and generation; ``n_batch`` (default 512) the
most prompt tokens evaluated in one decode; ``flash_attn`` (default off) llama.cpp's fused
attention kernel, which rounds differently (measured on an AVX2 CPU: label log-probabilities moved
by up to 0.04 nats, greedy texts parted within 100-230 characters). Threads and batch gave
bit-identical numbers there; another CPU (its SIMD paths) or llama.cpp build need not. So a greedy
text is the same on every call of one machine, build and setting, not across them.

Model failures (context overflow, a decode error, a missing or corrupted file) come back as
failed completions. Not here: batching several requests into one decode, GPU offload, streaming.
"""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from nepotism.backends._inprocess import InProcessBackend, Unservable, label_warnings, model_threads
from nepotism.backends.base import Request, logsumexp
from nepotism.backends.local_models import LOCAL_MODELS, ModelFileError, model_path, verify_sha256
from nepotism.backends.registry import MODEL_FILE, THREADS, BackendSpec, Option

__all__ = ["BACKEND", "GGUFBackend", "loaded_models", "plain_cpu_weights", "unload_all"]

_TOP_K_RAW = 20


@dataclass
class _Loaded:
    """A loaded llama.cpp model, its lock and its chat template renderer."""

    llm: Any
    lock: threading.Lock = field(default_factory=threading.Lock)
    formatter: Any = None
    n_vocab: int = 0


_models: dict[tuple[str, int, int, int, bool], _Loaded] = {}
_models_lock = threading.Lock()


def loaded_models() -> list[str]:
    """Paths of the models this process holds loaded."""
    return sorted({key[0] for key in _models})


def unload_all() -> None:
    """Free every loaded model (their memory returns when no backend still uses them)."""
    with _models_lock:
        for loaded in _models.values():
            with loaded.lock:
                loaded.llm.close()
        _models.clear()


@contextlib.contextmanager
def plain_cpu_weights() -> Iterator[None]:
    """Load weights into plain CPU buffers, without llama.cpp's "extra buffer types".

    On a CPU with AMX (Intel Sapphire Rapids and later) a native build repacks Q4_0/Q4_1/Q8_0
    weights for the AMX kernels, and evaluating a prompt through them crashed the process with a
    segmentation fault in ``llama_decode`` (SmolLM2-135M Q4_1, llama-cpp-python 0.3.36; the same
    build and model ran on a CPU without AMX). Repacking only buys speed, and without it the
    same file gives the same log-probabilities on every x86 machine. ``Llama()`` offers no switch,
    so the default model parameters it starts from are adjusted while it loads (under
    ``_models_lock``: one load at a time). Use it around any other ``Llama()`` too, e.g. when
    serving a model with ``llama_cpp.server`` in the same process.
    """
    from llama_cpp import llama_cpp  # the low-level module `Llama()` reads its defaults from

    default = llama_cpp.llama_model_default_params

    def without_repacking() -> Any:
        params = default()
        params.use_extra_bufts = False
        return params

    llama_cpp.llama_model_default_params = without_repacking
    try:
        yield
    finally:
        llama_cpp.llama_model_default_params = default


def _load(path: str, n_ctx: int, n_threads: int, n_batch: int, flash_attn: bool) -> _Loaded:
    key = (path, n_ctx, n_threads, n_batch, flash_attn)
    with _models_lock:
        if key in _models:
            return _models[key]
        # llama.cpp's OpenMP workers spin while waiting by default; on a machine shared with other
        # work that made 2 threads ~3x slower than 1 (15 vs 53 tokens/s). Passive waiting kept
        # 2 threads at 43 tokens/s there. Takes effect only before OpenMP starts; a value the
        # user set wins.
        os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
        from llama_cpp import Llama
        from llama_cpp.llama_chat_format import Jinja2ChatFormatter

        with plain_cpu_weights():
            llm = Llama(
                model_path=path,
                n_ctx=n_ctx,
                n_batch=n_batch,
                n_ubatch=n_batch,
                n_threads=n_threads,
                n_threads_batch=n_threads,
                flash_attn=flash_attn,
                logits_all=False,
                verbose=False,
            )
        loaded = _Loaded(llm=llm, n_vocab=llm.n_vocab())
        template = llm.metadata.get("tokenizer.chat_template")
        if template:
            eos, bos = llm.token_eos(), llm.token_bos()
            loaded.formatter = Jinja2ChatFormatter(
                template=template,
                eos_token=llm._model.token_get_text(eos) if eos != -1 else "",
                bos_token=llm._model.token_get_text(bos) if bos != -1 else "",
                stop_token_ids=[eos],
            )
        _models[key] = loaded
        return loaded


# -- low-level evaluation (the KV cache and llm.input_ids/n_tokens are kept consistent) --------


def _truncate(llm: Any, n: int) -> None:
    """Keep the first ``n`` evaluated tokens (all of them are dropped if the cache cannot cut)."""
    if n > 0 and llm._ctx.kv_cache_seq_rm(-1, n, -1):
        llm.n_tokens = n
    else:
        llm.reset()
        llm._ctx.kv_cache_clear()
        llm.n_tokens = 0
    llm._requires_eval = True


def _decode(llm: Any, tokens: list[int], n_vocab: int, all_rows: bool) -> np.ndarray:
    """Evaluate ``tokens`` after the cached ones; logits of every token or of the last one."""
    llm._ctx.kv_cache_seq_rm(-1, llm.n_tokens, -1)
    rows: list[np.ndarray] = []
    for i in range(0, len(tokens), llm.n_batch):
        chunk = tokens[i : i + llm.n_batch]
        n_past = llm.n_tokens
        llm._batch.set_batch(batch=chunk, n_past=n_past, logits_all=all_rows)
        llm._ctx.decode(llm._batch)
        llm.input_ids[n_past : n_past + len(chunk)] = chunk
        llm.n_tokens += len(chunk)
        n_out = len(chunk) if all_rows else 1
        if all_rows or i + llm.n_batch >= len(tokens):
            out = np.ctypeslib.as_array(llm._ctx.get_logits(), shape=(n_out * n_vocab,))
            rows.append(out.reshape(n_out, n_vocab).astype(np.float64))
    llm._requires_eval = True  # our logits are not the sampler's: make generate() replay
    return np.concatenate(rows) if all_rows else rows[-1][-1]


def _eval_prompt(llm: Any, tokens: list[int], n_vocab: int, reuse: bool) -> tuple[np.ndarray, int]:
    """Logits after ``tokens`` (reusing the cached common prefix if ``reuse``); (logits, cached)."""
    limit = min(llm.n_tokens, len(tokens) - 1) if reuse else 0  # at least one token is evaluated for fresh logits
    differ = np.flatnonzero(llm.input_ids[:limit] != np.asarray(tokens[:limit]))
    _truncate(llm, int(differ[0]) if differ.size else limit)
    cached = llm.n_tokens
    return _decode(llm, tokens[cached:], n_vocab, all_rows=False), cached


def _log_softmax(logits: np.ndarray) -> np.ndarray:
    top = logits.max(axis=-1, keepdims=True)
    shifted = logits - top
    out: np.ndarray = shifted - np.log(np.exp(shifted).sum(axis=-1, keepdims=True))
    return out


class GGUFBackend(InProcessBackend):
    """Serve one GGUF model in-process (see the module docstring for the rules of each mode)."""

    _load_errors = (ModelFileError, ValueError, RuntimeError)

    def __init__(
        self,
        model: str,
        *,
        sha256: str | None = None,
        name: str | None = None,
        n_ctx: int = 4096,
        n_threads: int | None = None,
        n_batch: int = 512,
        flash_attn: bool = False,
        seed: int = 0,
        reuse_prefix: bool = False,
    ) -> None:
        self.model = model
        self._sha256 = sha256
        self.name = name or f"gguf:{model}"
        if isinstance(n_batch, bool) or not isinstance(n_batch, int) or n_batch < 1:
            raise ValueError(f"n_batch must be a positive integer, got {n_batch!r}")
        self.n_ctx, self.n_batch, self.seed = n_ctx, n_batch, seed
        self.n_threads = model_threads(n_threads)
        self.flash_attn = bool(flash_attn)
        self.reuse_prefix = reuse_prefix
        self._loaded: _Loaded | None = None

    def __repr__(self) -> str:
        return f"GGUFBackend(name={self.name!r}, model={self.model!r}, n_ctx={self.n_ctx})"

    def _path(self) -> str:
        if self.model in LOCAL_MODELS:
            return str(model_path(self.model))
        path = Path(self.model)
        if not path.is_file():
            raise ModelFileError(
                f"{self.model!r} is neither a packaged model ({', '.join(sorted(LOCAL_MODELS))}) nor a .gguf file"
            )
        return str(verify_sha256(path, self._sha256) if self._sha256 else path)

    def check(self) -> None:
        """Raise `ModelFileError` if the model file is missing or fails its SHA-256 (nothing is loaded)."""
        self._path()

    def load(self) -> None:
        """Load (or find already loaded) the model; raises `ModelFileError` if unavailable."""
        if self._loaded is None:
            self._loaded = _load(self._path(), self.n_ctx, self.n_threads, self.n_batch, self.flash_attn)

    async def aclose(self) -> None:
        self._loaded = None  # the model stays cached for the process; see `unload_all`

    # -- in the worker thread ------------------------------------------------------------------

    def _prompt_tokens(self, loaded: _Loaded, request: Request) -> list[int]:
        llm = loaded.llm
        if request.messages is None:
            return list(llm.tokenize((request.prompt or "").encode(), add_bos=True, special=True))
        if loaded.formatter is None:
            raise Unservable("unsupported:chat_template: the GGUF file has no chat template; send a prompt")
        msgs = [{"role": m.role, "content": m.content} for m in request.messages]
        rendered = loaded.formatter(messages=msgs)
        return list(llm.tokenize(rendered.prompt.encode(), add_bos=not rendered.added_special, special=True))

    def _prepare(self, loaded: _Loaded, request: Request) -> list[int]:
        tokens = self._prompt_tokens(loaded, request)
        budget = request.max_tokens if request.mode == "generate" or request.labels_after is not None else 8
        if len(tokens) + budget > self.n_ctx:
            raise Unservable(f"context_overflow: {len(tokens)} prompt tokens with n_ctx={self.n_ctx}")
        return tokens

    def _text_tokens(self, loaded: _Loaded, text: str) -> list[int]:
        return list(loaded.llm.tokenize(text.encode(), add_bos=False, special=False))

    def _on_model_error(self, loaded: _Loaded) -> None:
        _truncate(loaded.llm, 0)  # the cache may be half-written: start clean next time

    def _labels(self, loaded: _Loaded, request: Request, tokens: list[int]) -> tuple[str, dict[str, Any]]:
        llm, n_vocab = loaded.llm, loaded.n_vocab
        logits, cached = _eval_prompt(llm, tokens, n_vocab, self.reuse_prefix)
        lsm = _log_softmax(logits)
        spellings_mode = request.extra.get("label_spellings", "both")
        if spellings_mode not in ("both", "exact"):
            raise Unservable(f"unsupported:label_spellings={spellings_mode!r} (use 'both' or 'exact')")
        out: dict[str, float] = {}
        seqs: dict[str, list[tuple[int, ...]]] = {}
        for label in request.labels or ():
            spellings = [label] if spellings_mode == "exact" else [label, " " + label]
            variants: list[tuple[int, ...]] = []
            for spelling in spellings:
                seq = tuple(llm.tokenize(spelling.encode(), add_bos=False, special=False))
                if seq and seq not in variants:
                    variants.append(seq)
            seqs[label] = variants
            out[label] = logsumexp([self._sequence_logprob(loaded, lsm, tokens, s) for s in variants])
        best = int(np.argmax(lsm))
        top = np.argpartition(-lsm, _TOP_K_RAW)[:_TOP_K_RAW]
        top = top[np.argsort(-lsm[top])]
        raw = {
            "prompt_tokens": len(tokens),
            "label_tokens": {lab: [list(s) for s in ss] for lab, ss in seqs.items()},
            "top_logprobs": [[llm.detokenize([int(t)]).decode(errors="replace"), float(lsm[t])] for t in top],
        }
        usage = {"prompt_tokens": len(tokens), "completion_tokens": 0, "cached_tokens": cached}
        return llm.detokenize([best]).decode(errors="replace"), {
            "label_logprobs": out,
            "usage": usage,
            "raw": raw,
            "finish_reason": "length",
            "warnings": label_warnings(seqs, top),
        }

    def _sequence_logprob(self, loaded: _Loaded, lsm: np.ndarray, prompt: list[int], seq: tuple[int, ...]) -> float:
        first = float(lsm[seq[0]])
        if len(seq) == 1:
            return first
        llm = loaded.llm
        rows = _log_softmax(_decode(llm, list(seq[:-1]), loaded.n_vocab, all_rows=True))
        rest = sum(float(rows[i][seq[i + 1]]) for i in range(len(seq) - 1))
        _truncate(llm, len(prompt))
        return first + rest

    def _continuation(self, loaded: _Loaded, request: Request, tokens: list[int]) -> tuple[None, dict[str, Any]]:
        llm, n_vocab = loaded.llm, loaded.n_vocab
        cont = llm.tokenize((request.continuation or "").encode(), add_bos=False, special=False)
        if len(tokens) + len(cont) > self.n_ctx:
            raise Unservable(f"context_overflow: {len(tokens) + len(cont)} tokens with n_ctx={self.n_ctx}")
        logits, cached = _eval_prompt(llm, tokens, n_vocab, self.reuse_prefix)
        lps = [float(_log_softmax(logits)[cont[0]])]
        if len(cont) > 1:
            rows = _log_softmax(_decode(llm, cont[:-1], n_vocab, all_rows=True))
            lps.extend(float(rows[i][cont[i + 1]]) for i in range(len(cont) - 1))
        usage = {"prompt_tokens": len(tokens), "continuation_tokens": len(cont), "cached_tokens": cached}
        raw = {"prompt_tokens": len(tokens), "continuation_token_ids": cont}
        return None, {"continuation_logprobs": tuple(lps), "usage": usage, "raw": raw}

    def _generate(self, loaded: _Loaded, request: Request, tokens: list[int]) -> tuple[str, dict[str, Any]]:
        params: dict[str, Any] = {"top_k": 40, "top_p": 0.95, "min_p": 0.05, "repeat_penalty": 1.0}
        params.update({k: v for k, v in request.extra.items() if k != "label_spellings"})
        seed = request.seed if request.seed is not None else self.seed
        if request.temperature == 0:
            params["top_k"] = 1  # greedy, whatever the other sampling settings say
        if not self.reuse_prefix:
            _truncate(loaded.llm, 0)  # create_completion would otherwise reuse the cached prefix
        result = loaded.llm.create_completion(
            prompt=tokens,
            max_tokens=request.max_tokens,
            temperature=float(request.temperature),
            seed=seed,
            **params,
        )
        choice = result["choices"][0]
        usage = {k: int(v) for k, v in result.get("usage", {}).items()}
        return choice["text"], {"usage": usage, "raw": result, "finish_reason": choice.get("finish_reason")}


def _from_config(cfg: Any) -> GGUFBackend:
    return GGUFBackend(
        cfg.path or cfg.model or "",
        sha256=cfg.sha256,
        name=cfg.id,
        n_ctx=cfg.n_ctx,
        n_threads=cfg.n_threads,
        n_batch=cfg.n_batch,
        flash_attn=cfg.flash_attn,
    )


#: ``backend = "gguf"`` in an experiment file (`nepotism.backends.registry`)
BACKEND = BackendSpec(
    name="gguf",
    summary="a GGUF model run in-process by llama.cpp",
    options=(
        *MODEL_FILE,
        Option("sha256", "text"),
        Option("n_ctx", "count", 4096, high=1 << 21, unit="tokens"),
        THREADS,
        Option("n_batch", "count", 512, high=1 << 16, unit="tokens"),
        Option("flash_attn", "flag", False),
    ),
    build=_from_config,
    extra="local",
    one_of=("model", "path"),
    in_process=True,
)
