"""Model backends: one small protocol (`Backend.complete(Request) -> Completion`), one module each.

`nepotism.backends.openai_http` talks to OpenAI-compatible servers; `nepotism.backends.gguf` runs
GGUF models in-process with llama-cpp-python (the ``local`` extra); `nepotism.backends.local_models`
finds the small models shipped in PyPI packages. Backends know nothing of judging or the store.
Only the protocol is imported here, so that importing the package stays cheap.
"""

from nepotism.backends.base import Backend, Completion, Request, failed

__all__ = ["Backend", "Completion", "Request", "failed"]
