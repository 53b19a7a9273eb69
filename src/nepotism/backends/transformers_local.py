"""In-process Hugging Face models through transformers (the ``train`` extra: torch + transformers).

`TransformersBackend` serves one checkpoint read from disk: a model directory, a ``.gguf`` file
(loaded by transformers' ``gguf_file=`` support, which dequantises the weights to float32), or a
packaged id from `nepotism.backends.local_models`. Nothing is ever downloaded
(``local_files_only=True``). Models are loaded on first use and shared, per process, by backends
asking for the same files and device; each loaded model has one lock and every model call runs in
a worker thread (``asyncio.to_thread``). Importing this module does not import torch.

The three request modes follow `nepotism.backends.gguf`:

* Generation: greedy at temperature 0, otherwise sampled (``top_k=40, top_p=0.95, min_p=0.05``
  unless ``extra`` overrides them) after seeding torch with the request's seed (or the
  backend's). Chat messages go through the tokenizer's chat template; a raw prompt is tokenized
  as is, with the tokenizer's own special tokens.
* Label verdicts: each label's log-probability under the full-vocabulary log-softmax at the next
  position, summed over the spellings ``label`` and ``" " + label``; a spelling of several tokens
  is scored by the chain rule on the prompt's cached keys and values.
  ``extra={"label_spellings": "exact"}`` keeps the first spelling only.
* Continuation log-probabilities: the continuation is tokenized on its own, without special
  tokens, appended to the prompt tokens, and the log-probability of each of its tokens is returned.
* Label verdicts after the judge's explanation (``labels_after``, paper 001 §4.2): the reply is
  generated, then the labels are read as above after the prompt and the reply up to its last
  marker (`nepotism.backends._inprocess`).

A GGUF file read here gives slightly different numbers from llama.cpp on the same file: the
weights are dequantised to float32 and the matrix products are not llama.cpp's quantised kernels.
Failures come back as ``model_unavailable`` (missing or unreadable checkpoint),
``context_overflow`` (longer than the model's position limit), ``unsupported:<what>`` or
``model_error``. Not here: batching, streaming, GPU memory management, stop strings.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

from nepotism.backends._inprocess import InProcessBackend, Unservable, label_warnings, model_threads
from nepotism.backends.base import Request, logsumexp
from nepotism.backends.local_models import LOCAL_MODELS, ModelFileError, model_path
from nepotism.backends.registry import MODEL_FILE, THREADS, BackendSpec

__all__ = ["BACKEND", "TransformersBackend", "loaded_models", "unload_all"]

_TOP_K_RAW = 20
_SAMPLING = ("top_k", "top_p", "min_p", "repetition_penalty", "typical_p")


@dataclass
class _Loaded:
    """A loaded model, its tokenizer and the lock serialising calls into it."""

    model: Any
    tokenizer: Any
    device: str
    max_positions: int | None
    lock: threading.Lock = field(default_factory=threading.Lock)


_models: dict[tuple[str, str | None, str], _Loaded] = {}
_models_lock = threading.Lock()


def loaded_models() -> list[str]:
    """Locations (``folder`` or ``folder/file.gguf``) of the models this process holds loaded."""
    return sorted({k[0] + (f"/{k[1]}" if k[1] else "") for k in _models})


def unload_all() -> None:
    """Forget every loaded model (memory returns once no backend still holds one)."""
    with _models_lock:
        _models.clear()


def _load(folder: str, gguf_file: str | None, device: str) -> _Loaded:
    key = (folder, gguf_file, device)
    with _models_lock:
        if key in _models:
            return _models[key]
        import torch
        from transformers import AutoModelForCausalLM, AutoTokenizer
        from transformers.utils import logging as hf_logging

        kwargs: dict[str, Any] = {"local_files_only": True}
        if gguf_file:
            kwargs["gguf_file"] = gguf_file
        cast(Any, hf_logging).disable_progress_bar()  # untyped in transformers
        tokenizer = AutoTokenizer.from_pretrained(folder, **kwargs)
        model: Any = AutoModelForCausalLM.from_pretrained(folder, dtype=torch.float32, **kwargs)
        model.to(device)
        model.eval()
        limit = getattr(model.config, "max_position_embeddings", None)
        loaded = _Loaded(
            model=model,
            tokenizer=tokenizer,
            device=device,
            max_positions=int(limit) if isinstance(limit, int) and limit > 0 else None,
        )
        _models[key] = loaded
        return loaded


class TransformersBackend(InProcessBackend):
    """Serve one on-disk Hugging Face checkpoint or GGUF file (rules in the module docstring)."""

    _load_errors = (ImportError, ModelFileError, OSError, ValueError, RuntimeError, KeyError, TypeError)
    _model_errors = (RuntimeError, ValueError, IndexError, TypeError)

    def __init__(
        self,
        model_path_or_id_on_disk: str | Path,
        *,
        gguf_file: str | None = None,
        device: str = "cpu",
        threads: int | None = None,
        seed: int = 0,
        name: str | None = None,
    ) -> None:
        self.model = str(model_path_or_id_on_disk)
        self.gguf_file = gguf_file
        self.device = device
        self.threads = model_threads(threads)  # torch's intra-op threads while serving
        self.seed = seed
        self.name = name or f"transformers:{self.model}" + (f"/{gguf_file}" if gguf_file else "")
        self._loaded: _Loaded | None = None

    def __repr__(self) -> str:
        return (
            f"TransformersBackend(name={self.name!r}, model={self.model!r}, gguf_file={self.gguf_file!r}, device={self.device!r})"
        )

    def _location(self) -> tuple[str, str | None]:
        if self.model in LOCAL_MODELS and self.gguf_file is None:
            found = model_path(self.model)
            return str(found.parent), found.name
        path = Path(self.model)
        if path.is_file() and path.suffix == ".gguf" and self.gguf_file is None:
            return str(path.parent), path.name
        if path.is_dir():
            if self.gguf_file is not None and not (path / self.gguf_file).is_file():
                raise ModelFileError(f"no GGUF file {self.gguf_file!r} in {self.model!r}")
            return str(path), self.gguf_file
        raise ModelFileError(
            f"{self.model!r} is not a model directory, a .gguf file or a packaged model ({', '.join(sorted(LOCAL_MODELS))})"
        )

    def check(self) -> None:
        """Raise `ModelFileError` if the model's files are not where it says (nothing is loaded)."""
        self._location()

    def load(self) -> None:
        """Load (or find already loaded) the model; raises if it is missing or unreadable."""
        if self._loaded is None:
            folder, gguf = self._location()
            self._loaded = _load(folder, gguf, self.device)

    async def aclose(self) -> None:
        self._loaded = None  # the model stays cached for the process; see `unload_all`

    def _load_failure(self, exc: BaseException) -> str:
        if isinstance(exc, ImportError):
            return f"transformers/torch not installed ({exc})"
        return f"{type(exc).__name__}: {exc}"

    # -- in the worker thread ------------------------------------------------------------------

    def _prompt_ids(self, loaded: _Loaded, request: Request) -> list[int]:
        tok = loaded.tokenizer
        if request.messages is None:
            return list(tok(request.prompt, add_special_tokens=True)["input_ids"])
        if not getattr(tok, "chat_template", None):
            raise Unservable("unsupported:chat_template: the tokenizer has no chat template; send a prompt")
        msgs = [{"role": m.role, "content": m.content} for m in request.messages]
        rendered = tok.apply_chat_template(msgs, add_generation_prompt=True, tokenize=False)
        return list(tok(rendered, add_special_tokens=False)["input_ids"])

    def _check_length(self, loaded: _Loaded, n: int) -> None:
        if loaded.max_positions is not None and n > loaded.max_positions:
            raise Unservable(f"context_overflow: {n} tokens with a limit of {loaded.max_positions}")

    def _enter(self, loaded: _Loaded) -> Any:
        import torch

        torch.set_num_threads(self.threads)
        return _Serving(loaded.lock, torch.inference_mode())

    def _prepare(self, loaded: _Loaded, request: Request) -> list[int]:
        ids = self._prompt_ids(loaded, request)
        if not ids:
            raise Unservable("model_error: the prompt tokenizes to nothing")
        return ids

    def _text_tokens(self, loaded: _Loaded, text: str) -> list[int]:
        return list(loaded.tokenizer(text, add_special_tokens=False)["input_ids"])

    def _forward(self, loaded: _Loaded, ids: list[int], past: Any = None) -> Any:
        import torch

        tensor = torch.tensor([ids], dtype=torch.long, device=loaded.device)
        return loaded.model(input_ids=tensor, past_key_values=past, use_cache=True)

    def _labels(self, loaded: _Loaded, request: Request, ids: list[int]) -> tuple[str, dict[str, Any]]:
        import torch

        self._check_length(loaded, len(ids) + 8)
        spellings_mode = request.extra.get("label_spellings", "both")
        if spellings_mode not in ("both", "exact"):
            raise Unservable(f"unsupported:label_spellings={spellings_mode!r} (use 'both' or 'exact')")
        tok = loaded.tokenizer
        out = self._forward(loaded, ids)
        cache = out.past_key_values
        lsm = torch.log_softmax(out.logits[0, -1].double(), dim=-1)
        result: dict[str, float] = {}
        seqs: dict[str, list[tuple[int, ...]]] = {}
        for label in request.labels or ():
            spellings = [label] if spellings_mode == "exact" else [label, " " + label]
            variants: list[tuple[int, ...]] = []
            for spelling in spellings:
                seq = tuple(tok(spelling, add_special_tokens=False)["input_ids"])
                if seq and seq not in variants:
                    variants.append(seq)
            seqs[label] = variants
            scores = []
            for seq in variants:
                score = float(lsm[seq[0]])
                if len(seq) > 1:
                    rows = torch.log_softmax(self._forward(loaded, list(seq[:-1]), cache).logits[0].double(), -1)
                    cache.crop(1 - len(seq))  # drop the spelling's tokens: the prompt alone again
                    score += sum(float(rows[i, seq[i + 1]]) for i in range(len(seq) - 1))
                scores.append(score)
            result[label] = logsumexp(scores)
        top_lp, top_ids = torch.topk(lsm, min(_TOP_K_RAW, lsm.shape[0]))
        raw = {
            "prompt_tokens": len(ids),
            "label_tokens": {lab: [list(s) for s in ss] for lab, ss in seqs.items()},
            "top_logprobs": [[tok.decode([int(t)]), float(v)] for t, v in zip(top_ids, top_lp)],
        }
        usage = {"prompt_tokens": len(ids), "completion_tokens": 0}
        return tok.decode([int(top_ids[0])]), {
            "label_logprobs": result,
            "usage": usage,
            "raw": raw,
            "finish_reason": "length",
            "warnings": label_warnings(seqs, top_ids.tolist()),
        }

    def _continuation(self, loaded: _Loaded, request: Request, ids: list[int]) -> tuple[None, dict[str, Any]]:
        import torch

        cont = list(loaded.tokenizer(request.continuation, add_special_tokens=False)["input_ids"])
        if not cont:
            raise Unservable("model_error: the continuation tokenizes to nothing")
        self._check_length(loaded, len(ids) + len(cont))
        logits = self._forward(loaded, ids + cont[:-1]).logits[0, len(ids) - 1 :].double()
        rows = torch.log_softmax(logits, dim=-1)
        lps = tuple(float(rows[i, t]) for i, t in enumerate(cont))
        usage = {"prompt_tokens": len(ids), "continuation_tokens": len(cont)}
        raw = {"prompt_tokens": len(ids), "continuation_token_ids": cont}
        return None, {"continuation_logprobs": lps, "usage": usage, "raw": raw}

    def _generate(self, loaded: _Loaded, request: Request, ids: list[int]) -> tuple[str, dict[str, Any]]:
        import torch

        self._check_length(loaded, len(ids) + request.max_tokens)
        tok = loaded.tokenizer
        params: dict[str, Any] = {"max_new_tokens": request.max_tokens}
        ignored = sorted(k for k in request.extra if k not in _SAMPLING and k != "label_spellings")
        if request.temperature == 0:
            params.update(do_sample=False, temperature=None, top_p=None, top_k=None)
        else:
            params.update(do_sample=True, temperature=float(request.temperature), top_k=40, top_p=0.95, min_p=0.05)
            params.update({k: v for k, v in request.extra.items() if k in _SAMPLING})
            torch.manual_seed(request.seed if request.seed is not None else self.seed)
        eos = tok.eos_token_id
        pad = tok.pad_token_id if tok.pad_token_id is not None else eos
        tensor = torch.tensor([ids], dtype=torch.long, device=loaded.device)
        out = loaded.model.generate(input_ids=tensor, attention_mask=torch.ones_like(tensor), pad_token_id=pad, **params)
        new = [int(t) for t in out[0, len(ids) :]]
        stop_ids = set(_as_list(loaded.model.generation_config.eos_token_id)) | ({eos} if eos is not None else set())
        finish = "stop" if new and new[-1] in stop_ids else "length"
        text = tok.decode(new, skip_special_tokens=True)
        usage = {"prompt_tokens": len(ids), "completion_tokens": len(new)}
        return text, {
            "usage": usage,
            "raw": {"token_ids": new},
            "finish_reason": finish,
            "warnings": tuple(f"ignored_extra:{k}" for k in ignored),
        }


def _as_list(value: Any) -> list[int]:
    if value is None:
        return []
    return [int(v) for v in value] if isinstance(value, (list, tuple)) else [int(value)]


class _Serving:
    """Hold the model's lock and torch's inference mode for one request."""

    def __init__(self, lock: Any, mode: Any) -> None:
        self.lock, self.mode = lock, mode

    def __enter__(self) -> None:
        self.lock.acquire()
        self.mode.__enter__()

    def __exit__(self, *exc: Any) -> None:
        try:
            self.mode.__exit__(*exc)
        finally:
            self.lock.release()


def _from_config(cfg: Any) -> TransformersBackend:
    return TransformersBackend(cfg.path or cfg.model or "", threads=cfg.n_threads, name=cfg.id)


#: ``backend = "transformers"`` in an experiment file (`nepotism.backends.registry`)
BACKEND = BackendSpec(
    name="transformers",
    summary="a Hugging Face checkpoint or GGUF file run in-process by transformers on the CPU",
    options=(*MODEL_FILE, THREADS),
    build=_from_config,
    extra="train",
    one_of=("model", "path"),
    in_process=True,
)
