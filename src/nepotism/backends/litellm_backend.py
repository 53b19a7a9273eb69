"""Backend over LiteLLM (the ``litellm`` extra): one interface to many hosted providers.

`LiteLLMBackend` sends each `Request` through ``litellm.acompletion`` (chat messages) or
``litellm.atext_completion`` (a raw prompt), with the same request bodies and the same reading
of answers as `nepotism.backends.openai_http` (see `nepotism.backends.openai_wire`): label
verdicts ask for one token with ``logprobs``/``top_logprobs`` and read the labels from the
top-k list; continuation log-probabilities need a raw prompt and a provider that echoes prompt
log-probabilities. The model name is LiteLLM's (``openai/<name>``, ``anthropic/<name>``, ...).

LiteLLM's own retries are switched off (``num_retries=0``, ``max_retries=0``): retries belong
to the runner. Exceptions become failed completions with the classes ``timeout``,
``connection``, ``http_429``, ``http_5xx:<code>``, ``http_4xx:<code>``, ``malformed_body``. The
API key is read once from the environment variable named by ``api_key_env``, passed only as
LiteLLM's ``api_key`` argument, scrubbed from error texts and never kept in ``raw`` or a repr.
Importing this module does not import litellm; the first call does, with LiteLLM's fetch of
its remote price list turned off (``LITELLM_LOCAL_MODEL_COST_MAP``) so nothing goes to the
network but the calls themselves. Not here: streaming, tools, images, provider-specific options
beyond ``extra``.
"""

from __future__ import annotations

import json
import os
import re
import time
from collections.abc import Mapping
from typing import Any

from nepotism.backends.base import Completion, Request, failed, read_api_key
from nepotism.backends.openai_wire import build_body, read_body
from nepotism.backends.registry import API_KEY_ENV, TIMEOUT, BackendSpec, Option
from nepotism.credentials import Secret, redact_text

__all__ = ["BACKEND", "LiteLLMBackend", "litellm_available"]

_JSON_ERROR = re.compile(r"Expecting value|Unterminated string|JSONDecodeError|Expecting ',' delimiter")


def litellm_available() -> bool:
    """Whether the ``litellm`` package can be imported."""
    import importlib.util

    return importlib.util.find_spec("litellm") is not None


def _litellm() -> Any:
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    import litellm

    litellm.telemetry = False
    litellm.suppress_debug_info = True
    return litellm


class LiteLLMBackend:
    """Call one model through LiteLLM.

    ``model`` is LiteLLM's model name and is sent for every request (``Request.model`` is only
    the caller's label). ``api_base`` overrides the provider's URL (``http://host:port/v1`` for an
    OpenAI-compatible server with ``openai/<name>``). ``extra`` is merged into every call, under
    ``Request.extra``.
    """

    def __init__(
        self,
        model: str,
        *,
        api_base: str | None = None,
        api_key_env: str | None = None,
        timeout: float = 60.0,
        top_logprobs: int = 20,
        extra: Mapping[str, Any] | None = None,
        name: str | None = None,
    ) -> None:
        if not model:
            raise ValueError("model must be a non-empty LiteLLM model name")
        if timeout <= 0 or top_logprobs < 1:
            raise ValueError("timeout and top_logprobs must be positive")
        self.model = model
        self.api_base = api_base
        self.api_key_env = api_key_env
        self.timeout = timeout
        self.top_logprobs = top_logprobs
        self.extra = dict(extra or {})
        self.name = name or f"litellm:{model}"
        self._key: Secret | None = read_api_key(api_key_env)

    def __repr__(self) -> str:
        return (
            f"LiteLLMBackend(name={self.name!r}, model={self.model!r}, api_base={self.api_base!r}, "
            f"api_key_env={self.api_key_env!r})"
        )

    async def aclose(self) -> None:
        return None  # LiteLLM keeps its own client cache for the process

    async def __aenter__(self) -> LiteLLMBackend:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def complete(self, request: Request) -> Completion:
        built = build_body(request, model=self.model, extra=self.extra, top_logprobs=self.top_logprobs)
        if isinstance(built, Completion):
            return built
        path, body = built
        kwargs = dict(body)
        kwargs.update(timeout=self.timeout, num_retries=0, max_retries=0)
        if self.api_base is not None:
            kwargs["api_base"] = self.api_base
        if self._key is not None:
            kwargs["api_key"] = self._key.reveal()
        elif self.api_base is not None:
            kwargs["api_key"] = "none"  # OpenAI-style clients refuse to start without one
        start = time.perf_counter()
        try:
            litellm = _litellm()
        except ImportError as exc:
            return failed(f"unsupported:litellm: the litellm package is not installed ({exc})"[:300])
        try:
            if path == "/chat/completions":
                response = await litellm.acompletion(**kwargs)
            else:
                response = await litellm.atext_completion(**kwargs)
        except Exception as exc:  # noqa: BLE001 - every provider failure becomes a value
            return failed(self._classify(exc), latency_s=time.perf_counter() - start)
        latency = time.perf_counter() - start
        data: Any = None
        try:
            data = json.loads(redact_text(json.dumps(_to_dict(response), default=str)))
            if not isinstance(data, dict):
                raise TypeError("the answer is not a JSON object")
            data.pop("_hidden_params", None)
            return read_body(data, request, latency)
        except (ValueError, TypeError, KeyError, IndexError, AttributeError) as exc:
            raw = data if isinstance(data, dict) else {}
            return failed(f"malformed_body: {type(exc).__name__}: {exc}"[:200], latency_s=latency, raw=raw)

    def _classify(self, exc: BaseException) -> str:
        """An error class for a LiteLLM exception (checked by type first, then HTTP status)."""
        import litellm.exceptions as le

        detail = redact_text(f"{type(exc).__name__}: {exc}")[:200]
        if isinstance(exc, (le.Timeout, TimeoutError)):
            return "timeout"
        causes = _chain(exc)
        if any(isinstance(c, json.JSONDecodeError) for c in causes) or _JSON_ERROR.search(str(exc)):
            return f"malformed_body: {detail}"  # LiteLLM wraps an unparsable 200 body as a 500
        if any(
            type(c).__name__ in ("APIConnectionError", "ConnectError", "RemoteProtocolError", "ReadError", "ConnectionResetError")
            for c in causes[1:]
        ) or str(exc).rstrip(".").endswith("Connection error"):
            return f"connection: {detail}"  # no HTTP answer, though LiteLLM labels it a 500
        if isinstance(exc, le.APIConnectionError):
            # LiteLLM reports bodies it could not parse as connection errors; they will not heal
            text = str(exc).lower()
            if "json" in text or "decode" in text or "validation" in text or "parse" in text:
                return f"malformed_body: {detail}"
            return f"connection: {detail}"
        if isinstance(exc, le.RateLimitError):
            return f"http_429: {detail}"
        status = getattr(exc, "status_code", None)
        if isinstance(status, int):
            if status == 429:
                return f"http_429: {detail}"
            if 500 <= status < 600:
                return f"http_5xx:{status}: {detail}"
            if 400 <= status < 500:
                return f"http_4xx:{status}: {detail}"
        if isinstance(exc, (ValueError, TypeError, KeyError)):
            return f"malformed_body: {detail}"
        return f"connection: {detail}"


def _chain(exc: BaseException) -> list[BaseException]:
    seen: list[BaseException] = []
    cur: BaseException | None = exc
    while cur is not None and cur not in seen and len(seen) < 10:
        seen.append(cur)
        cur = cur.__cause__ or cur.__context__
    return seen


def _to_dict(response: Any) -> Any:
    for attr in ("model_dump", "to_dict", "dict"):
        fn = getattr(response, attr, None)
        if callable(fn):
            return fn()
    return response


def _from_config(cfg: Any) -> LiteLLMBackend:
    return LiteLLMBackend(
        cfg.model or "",
        api_base=cfg.base_url,
        api_key_env=cfg.api_key_env,
        timeout=cfg.timeout,
        extra=dict(cfg.params),
        name=cfg.id,
    )


#: ``backend = "litellm"`` in an experiment file (`nepotism.backends.registry`)
BACKEND = BackendSpec(
    name="litellm",
    summary="a hosted model through LiteLLM (model = LiteLLM's name, such as 'anthropic/<name>')",
    options=(
        Option("model", "text", required=True),
        Option("base_url", "url"),
        API_KEY_ENV,
        TIMEOUT,
    ),
    build=_from_config,
    extra="litellm",
)
