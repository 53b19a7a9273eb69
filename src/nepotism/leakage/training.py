"""SFT and DPO students with TRL, as LoRA adapters (PEFT) or fully fine-tuned, from a base model on disk
(the ``train`` extra).

The base is a Hugging Face model directory, or a GGUF file loaded through transformers
(``gguf_file=``, dequantised to float32; needs the ``gguf`` package) — e.g. one of the packaged
local models (`nepotism.backends.local_models`). Nothing is downloaded. `PRESETS` holds a
``tiny`` configuration (a few optimiser steps on short sequences: a CPU smoke run that exercises
the whole path, not a useful student) and a ``full`` one following paper 000 App. C.1 (3 epochs,
lr 1e-5, cosine schedule with 10 % warm-up, sequences of 1024 tokens, batch 2 × 2 accumulation for
SFT and 1 × 4 for DPO, bf16) for GPU users. `train_student` returns the trained model, its
tokenizer and a manifest (method, base, data digest, settings, losses) that the run records, and
saves the LoRA adapter (``tuning="lora"``, the default) or every weight with the tokenizer
(``tuning="full"``: full-parameter fine-tuning, paper 000 App. C.1's setting, for bases that fit in
memory — a 135M model takes ~2 GB with its optimiser state) and the manifest under ``out_dir``;
`load_trained` reloads them instead of training again when the manifest matches (same method,
base, data digest and settings), so a rerun, or a run killed after training, does not retrain.
A DPO student may start from an SFT policy (``sft_first``: the examples to fine-tune on first,
paper 000 §5.3's human-written data): the SFT stage's adapter is saved and merged into the weights,
then DPO trains on that policy (its reference model) and `load_trained` rebuilds it the same way.
`TrainedBackend` serves a trained student to the runner (greedy or seeded sampling through
``generate``). Left out: multi-GPU, quantised training.
"""

from __future__ import annotations

import asyncio
import copy
import json
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

from nepotism._files import atomic_write
from nepotism.backends.base import Completion, Request, failed
from nepotism.leakage.exports import PreferencePair, SyntheticExample
from nepotism.leakage.students import data_digest

__all__ = [
    "PRESETS",
    "TUNINGS",
    "TrainConfig",
    "TrainedBackend",
    "load_base",
    "load_trained",
    "train_student",
    "training_available",
]


@dataclass(frozen=True)
class TrainConfig:
    """Training settings: LoRA on every linear projection (``tuning="lora"``) or all weights (``"full"``)."""

    max_steps: int = -1
    epochs: float = 3.0
    learning_rate: float = 1e-5
    batch_size: int = 2
    grad_accum: int = 2
    max_length: int = 1024
    warmup_ratio: float = 0.1
    lora_r: int = 16
    lora_alpha: int = 32
    lora_dropout: float = 0.05
    bf16: bool = False
    beta: float = 0.1  # DPO
    threads: int = 2
    seed: int = 0
    tuning: str = "lora"  # "lora" (an adapter) | "full" (every weight)

    def __post_init__(self) -> None:
        if self.tuning not in TUNINGS:
            raise ValueError(f"tuning must be one of {', '.join(TUNINGS)}, not {self.tuning!r}")


#: What training changes: a LoRA adapter, or every weight of the base.
TUNINGS = ("lora", "full")


PRESETS: Mapping[str, TrainConfig] = {
    "tiny": TrainConfig(
        max_steps=4,
        epochs=1.0,
        learning_rate=2e-4,
        batch_size=2,
        grad_accum=1,
        max_length=128,
        lora_r=8,
        lora_alpha=16,
        lora_dropout=0.0,
    ),
    "full": TrainConfig(max_steps=-1, epochs=3.0, learning_rate=1e-5, batch_size=2, grad_accum=2, max_length=1024, bf16=True),
}
_DPO_FULL = replace(PRESETS["full"], batch_size=1, grad_accum=4)  # the "full" preset of a DPO student

_BASES: dict[str, tuple[Any, Any]] = {}
_BASES_LOCK = threading.Lock()


def training_available() -> bool:
    """Whether torch, transformers, peft, trl and datasets import."""
    try:
        import datasets  # noqa: F401
        import peft  # noqa: F401
        import torch  # noqa: F401
        import transformers  # noqa: F401
        import trl  # noqa: F401
    except ImportError:
        return False
    return True


def _base_location(base: str) -> tuple[str, str | None]:
    path = Path(base)
    if path.suffix == ".gguf" and path.is_file():
        return str(path.parent), path.name
    if path.is_dir():
        return str(path), None
    from nepotism.backends.local_models import LOCAL_MODELS, model_path

    if base in LOCAL_MODELS:
        found = model_path(base)
        return str(found.parent), found.name
    raise FileNotFoundError(f"base model {base!r}: not a .gguf file, a model directory or a packaged model id")


def load_base(base: str) -> tuple[Any, Any]:
    """(model, tokenizer) of ``base``, loaded once per process; callers get a deep copy."""
    with _BASES_LOCK:
        if base not in _BASES:
            import torch
            from transformers import AutoModelForCausalLM, AutoTokenizer

            folder, gguf = _base_location(base)
            kwargs = {"gguf_file": gguf} if gguf else {}
            tokenizer = AutoTokenizer.from_pretrained(folder, **kwargs)
            model = AutoModelForCausalLM.from_pretrained(folder, dtype=torch.float32, **kwargs)
            if tokenizer.pad_token is None:
                tokenizer.pad_token = tokenizer.eos_token
            if gguf:  # the weights are dequantised to float32: a plain model from here on
                # (torch's Module.__setattr__ stub types every attribute Tensor | Module)
                model.hf_quantizer = None  # type: ignore[assignment]
                model.is_quantized = False  # type: ignore[assignment]
                if hasattr(model.config, "quantization_config"):
                    del model.config.quantization_config
            _BASES[base] = (model, tokenizer)
        model, tokenizer = _BASES[base]
    return copy.deepcopy(model), tokenizer


def _lora(config: TrainConfig) -> Any:
    """The PEFT adapter to train, or None for full fine-tuning (the trainer then updates every weight)."""
    if config.tuning == "full":
        return None
    from peft import LoraConfig

    return LoraConfig(
        r=config.lora_r,
        lora_alpha=config.lora_alpha,
        lora_dropout=config.lora_dropout,
        target_modules="all-linear",
        task_type="CAUSAL_LM",
    )


def _common_args(config: TrainConfig, out_dir: Path) -> dict[str, Any]:
    return {
        "output_dir": str(out_dir / "trainer"),
        "max_steps": config.max_steps,
        "num_train_epochs": config.epochs,
        "learning_rate": config.learning_rate,
        "per_device_train_batch_size": config.batch_size,
        "gradient_accumulation_steps": config.grad_accum,
        "warmup_steps": float(config.warmup_ratio),
        "lr_scheduler_type": "cosine",
        "logging_steps": 1,
        "save_strategy": "no",
        "report_to": [],
        "bf16": config.bf16,
        "seed": config.seed,
        "use_cpu": not _cuda(),
        "dataloader_num_workers": 0,
        "max_length": config.max_length,
        "disable_tqdm": True,
    }


def _cuda() -> bool:
    import torch

    return bool(torch.cuda.is_available())


def _trainer(
    method: str, model: Any, tokenizer: Any, data: Sequence[SyntheticExample | PreferencePair], config: TrainConfig, out_dir: Path
) -> Any:
    """The TRL trainer of ``method`` (``"sft"``: examples; ``"dpo"``: preference pairs) on ``model``."""
    from datasets import Dataset

    rows = _training_rows(method, data)
    if method == "sft":
        # trl's lazy __init__ imports its trainers without re-exporting them (mypy: attr-defined)
        from trl import SFTConfig, SFTTrainer  # type: ignore[attr-defined]

        args = SFTConfig(**_common_args(config, out_dir), packing=False)
        return SFTTrainer(
            model=model, args=args, train_dataset=Dataset.from_list(rows), processing_class=tokenizer, peft_config=_lora(config)
        )
    if method == "dpo":
        from trl import DPOConfig, DPOTrainer  # type: ignore[attr-defined]  # (as SFTConfig above)

        dpo_args = DPOConfig(**_common_args(config, out_dir), beta=config.beta)
        return DPOTrainer(
            model=model,
            args=dpo_args,
            train_dataset=Dataset.from_list(rows),
            processing_class=tokenizer,
            peft_config=_lora(config),
        )
    raise ValueError(f"method must be 'sft' or 'dpo', not {method!r}")


def _training_rows(method: str, data: Sequence[SyntheticExample | PreferencePair]) -> list[dict[str, object]]:
    """The conversational rows TRL's trainer of ``method`` reads: ``messages`` of each example
    (``"sft"``), or ``prompt``/``chosen``/``rejected`` turns of each preference pair (``"dpo"``). A
    row of the other kind is a `ValueError` naming its position (it has no answer of that shape)."""
    if method not in ("sft", "dpo"):
        raise ValueError(f"method must be 'sft' or 'dpo', not {method!r}")
    rows: list[dict[str, object]] = []
    for i, d in enumerate(data):
        if method == "sft" and isinstance(d, SyntheticExample):
            rows.append({"messages": [{"role": "user", "content": d.prompt}, {"role": "assistant", "content": d.response}]})
        elif method == "dpo" and isinstance(d, PreferencePair):
            rows.append(
                {
                    "prompt": [{"role": "user", "content": d.prompt}],
                    "chosen": [{"role": "assistant", "content": d.chosen}],
                    "rejected": [{"role": "assistant", "content": d.rejected}],
                }
            )
        else:
            wanted = "examples (SyntheticExample)" if method == "sft" else "preference pairs (PreferencePair)"
            raise ValueError(f"{method} trains on {wanted}; item {i} is a {type(d).__name__}")
    return rows


def _losses(trainer: Any) -> list[float]:
    return [round(float(h["loss"]), 4) for h in trainer.state.log_history if "loss" in h]


def _sft_stage(
    model: Any, tokenizer: Any, examples: Sequence[SyntheticExample], config: TrainConfig, out_dir: Path
) -> tuple[Any, dict[str, Any]]:
    """SFT on ``examples`` (paper 000 §5.3: human-written instruction data) before a DPO student's
    DPO: the trained policy as a plain model (a LoRA adapter is saved under ``sft-adapter``, then
    merged into the weights, so DPO trains its own adapter on top) and what the stage did."""
    trainer = _trainer("sft", model, tokenizer, examples, config, out_dir / "sft")
    result = trainer.train()
    policy = trainer.model
    info: dict[str, Any] = {
        "method": "sft",
        "examples": len(examples),
        "data_digest": data_digest(list(examples)),
        "steps": int(result.global_step),
        "losses": _losses(trainer),
    }
    if config.tuning == "lora":
        policy.save_pretrained(str(out_dir / "sft-adapter"))
        info["adapter"] = str(out_dir / "sft-adapter")
        policy = policy.merge_and_unload()
    return policy, info


def train_student(
    method: str,
    base: str,
    data: Sequence[SyntheticExample | PreferencePair],
    out_dir: str | Path,
    *,
    config: TrainConfig | str = "tiny",
    tuning: str | None = None,
    sft_first: Sequence[SyntheticExample] = (),
) -> tuple[Any, Any, dict[str, Any]]:
    """Train a student with ``method`` ``"sft"`` (examples) or ``"dpo"`` (preference pairs).

    Returns (model, tokenizer, manifest); the adapter (LoRA) or the weights and tokenizer (full)
    and ``manifest.json`` are saved under ``out_dir``. Raises `ImportError` when the ``train``
    extra is missing. ``tuning`` ("lora" | "full") overrides the configuration's. ``sft_first``
    (DPO only): examples to fine-tune the base on before DPO — paper 000 §5.3 runs DPO on a policy
    first fine-tuned on human-written data; the manifest's ``sft_first`` says what that stage did.
    """
    import torch

    config = _resolve(method, config, tuning)
    if not data:
        raise ValueError("no training data")
    _training_rows(method, data)  # the data fit the method before any model is loaded
    if sft_first and method != "dpo":
        raise ValueError("only a DPO student starts from an SFT policy (sft_first)")
    torch.set_num_threads(config.threads)
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    start = time.perf_counter()
    model, tokenizer = load_base(base)
    stage = None
    if sft_first:
        model, stage = _sft_stage(model, tokenizer, sft_first, config, out_dir)
    trainer = _trainer(method, model, tokenizer, data, config, out_dir)
    result = trainer.train()
    trained = trainer.model
    trained.eval()
    saved = out_dir / _SAVED[config.tuning]
    trained.save_pretrained(str(saved))
    if config.tuning == "full":
        tokenizer.save_pretrained(str(saved))
    manifest = {
        "method": method,
        "base": base,
        "data_digest": data_digest(list(data)),
        "examples": len(data),
        "config": asdict(config),
        "steps": int(result.global_step),
        "losses": _losses(trainer),
        "seconds": round(time.perf_counter() - start, 1),
        _SAVED[config.tuning]: str(saved),
        "libraries": _versions(),
        "sft_first": stage,
    }
    body = json.dumps(manifest, indent=2, sort_keys=True)
    atomic_write(out_dir / "manifest.json", lambda tmp: tmp.write_text(body, encoding="utf-8"))
    return trained, tokenizer, manifest


def _resolve(method: str, config: TrainConfig | str, tuning: str | None = None) -> TrainConfig:
    if isinstance(config, str):
        preset = PRESETS[config]
        config = _DPO_FULL if method == "dpo" and config == "full" else preset
    return config if tuning is None else replace(config, tuning=tuning)


def load_trained(
    method: str,
    base: str,
    data: Sequence[SyntheticExample | PreferencePair],
    out_dir: str | Path,
    *,
    config: TrainConfig | str = "tiny",
    tuning: str | None = None,
    sft_first: Sequence[SyntheticExample] = (),
) -> tuple[Any, Any, dict[str, Any]] | None:
    """The student `train_student` saved under ``out_dir`` for exactly these inputs, or None.

    The manifest is written only after the adapter is saved, so a run killed while training
    leaves nothing that matches. The returned manifest is the saved one with ``reused`` = True.
    """
    out_dir = Path(out_dir)
    try:
        manifest = json.loads((out_dir / "manifest.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    resolved = _resolve(method, config, tuning)
    wanted = {"method": method, "base": base, "data_digest": data_digest(list(data)), "config": asdict(resolved)}
    saved = out_dir / _SAVED[resolved.tuning]
    stage = manifest.get("sft_first") or {}
    if (
        any(manifest.get(k) != v for k, v in wanted.items())
        or not saved.is_dir()
        or stage.get("data_digest") != (data_digest(list(sft_first)) if sft_first else None)
    ):
        return None
    import torch

    torch.set_num_threads(resolved.threads)
    trained: torch.nn.Module
    if resolved.tuning == "full":
        from transformers import AutoModelForCausalLM, AutoTokenizer

        trained = AutoModelForCausalLM.from_pretrained(str(saved), dtype=torch.float32)
        tokenizer = AutoTokenizer.from_pretrained(str(saved))
    else:
        from peft import PeftModel

        model, tokenizer = load_base(base)
        if stage.get("adapter"):  # DPO on an SFT policy: merge the SFT adapter first, as training did
            model = PeftModel.from_pretrained(model, stage["adapter"]).merge_and_unload()
        trained = PeftModel.from_pretrained(model, str(saved))
    trained.eval()
    return trained, tokenizer, manifest | {"reused": True}


#: The folder under ``out_dir`` (and the manifest key) holding what training produced.
_SAVED = {"lora": "adapter", "full": "weights"}


def _versions() -> dict[str, str]:
    import peft
    import torch
    import transformers
    import trl

    return {
        "torch": torch.__version__,
        "transformers": transformers.__version__,
        "peft": peft.__version__,
        "trl": trl.__version__,
    }


class TrainedBackend:
    """A runner backend over an in-memory trained model (one call at a time, in a worker thread)."""

    def __init__(self, model: Any, tokenizer: Any, *, name: str, threads: int = 2) -> None:
        self.name = name
        self._model, self._tokenizer, self._threads = model, tokenizer, threads
        self._lock = threading.Lock()

    def _run(self, request: Request) -> Completion:
        import torch

        if request.mode != "generate" or request.messages is None:
            return failed("unsupported: a trained student only generates from chat messages")
        started = time.perf_counter()
        with self._lock, torch.no_grad():
            torch.set_num_threads(self._threads)
            messages = [{"role": m.role, "content": m.content} for m in request.messages]
            ids = self._tokenizer.apply_chat_template(messages, add_generation_prompt=True, return_tensors="pt", return_dict=True)
            sample = request.temperature > 0
            if sample and request.seed is not None:
                torch.manual_seed(request.seed)
            out = self._model.generate(
                **ids,
                max_new_tokens=request.max_tokens,
                do_sample=sample,
                temperature=request.temperature if sample else None,
                top_p=None,
                top_k=None,
                pad_token_id=self._tokenizer.pad_token_id,
            )
            new = out[0, ids["input_ids"].shape[1] :]
            text = self._tokenizer.decode(new, skip_special_tokens=True)
        n_out = int(new.shape[0])
        finish = "length" if n_out >= request.max_tokens else "stop"
        return Completion(
            text=text,
            usage={"prompt_tokens": int(ids["input_ids"].shape[1]), "completion_tokens": n_out},
            latency_s=time.perf_counter() - started,
            finish_reason=finish,
        )

    async def complete(self, request: Request) -> Completion:
        try:
            return await asyncio.to_thread(self._run, request)
        except Exception as err:  # a model failure is a failed completion, never an exception
            return failed(f"model_error: {type(err).__name__}: {err}")

    async def aclose(self) -> None:
        return None
