"""Backend for OpenAI-compatible HTTP servers (OpenAI, vLLM, llama.cpp server, LM Studio, ...).

One shared HTTP/1.1 client with a connection pool sized to the caller's concurrency serves every
request of a backend instance. By default that is an ``aiohttp.ClientSession``: at concurrency
256 ``httpx.AsyncClient`` spent 5-8 ms of CPU per call in its connection pool (httpx issue #3215)
and ~0.6 ms even over an aiohttp transport, against ~0.25 ms for aiohttp alone (see
``bench/backends_p1.py``). Passing ``transport=`` (any ``httpx.AsyncBaseTransport``, such as
``httpx.MockTransport``) routes calls through one ``httpx.AsyncClient`` instead. What each
request mode uses:

* generation: ``/chat/completions`` for messages, ``/completions`` for a raw prompt;
* label verdicts: one generated token with ``logprobs``/``top_logprobs`` (chat) or ``logprobs``
  (completions); a label's log-probability is read from the top-k list, summing the spellings
  ``label`` and ``" " + label`` when both appear. A label absent from the top-k gets ``-inf`` and a
  ``label_not_in_top_k:<label>`` warning. Only the first token is visible, so labels that the
  server's tokenizer splits into several tokens never match (use single-token labels over HTTP);
* continuation log-probabilities: ``/completions`` with ``echo`` and ``logprobs`` on the text
  ``prompt + continuation``; the tokens that cover any character of the continuation (by
  ``text_offset``) are returned. Servers that do not echo log-probabilities, and chat requests
  (whose template the client cannot see), give ``unsupported:continuation_logprobs``. Beware:
  llama-cpp-python's own server (0.3.36) echoes log-probabilities shifted by one position
  (llama-cpp-python issue #1983); for llama.cpp models use `nepotism.backends.gguf` instead.

Failures come back as values with an error class (``timeout``, ``connection``, ``http_429``,
``http_5xx:<code>``, ``http_4xx:<code>``, ``malformed_body``, ``unsupported:<what>``); a 429 or
503 that says how long to wait (``Retry-After``, ...) carries the wait in ``raw["retry_after_s"]``.
Retries, rate limits and caching belong to the runner. The API key is read from the environment variable
named in the configuration and only ever placed in the ``Authorization`` header: it is redacted
from every response body and error text before decoding, in any spelling JSON allows
(`nepotism.credentials.redact_text`), and never shown in a repr.
"""

from __future__ import annotations

import asyncio
import json
import math
import time
from collections.abc import Mapping
from typing import Any

import aiohttp
import httpx

from nepotism.backends.base import Completion, Request, failed, read_api_key
from nepotism.backends.openai_wire import build_body, http_failure, read_body
from nepotism.credentials import Secret, redact_text

__all__ = ["TOP_LOGPROBS", "OpenAIHTTPBackend"]

#: How many top next-token log-probabilities a label verdict asks for (OpenAI's maximum); batch
#: files (`nepotism.runner.batch`) ask for the same, so a call has one body however it is sent.
TOP_LOGPROBS = 20


class _TransportFailure(Exception):
    """A call that got no HTTP answer; ``kind`` is ``timeout`` or ``connection``."""

    def __init__(self, kind: str, detail: str = "") -> None:
        super().__init__(kind)
        self.kind = kind
        self.detail = detail


class OpenAIHTTPBackend:
    """Talk to one OpenAI-compatible server.

    ``base_url`` ends before the endpoint (``http://127.0.0.1:8000/v1``). ``model``, when given,
    is the server-side model name sent for every request; otherwise ``Request.model`` is sent.
    ``api_key_env`` names the environment variable holding the key (read once, here). ``timeout``
    bounds connecting and each wait for response bytes; waiting for a free pooled connection is
    not bounded (the caller bounds concurrency with ``max_connections`` or less). ``extra`` is
    merged into every request body, under ``Request.extra``. One instance serves one event loop;
    call `aclose` (or use ``async with``) when done.
    """

    def __init__(
        self,
        base_url: str,
        *,
        model: str | None = None,
        api_key_env: str | None = None,
        timeout: float = 60.0,
        max_connections: int = 256,
        top_logprobs: int = TOP_LOGPROBS,
        extra: Mapping[str, Any] | None = None,
        name: str | None = None,
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        if max_connections < 1 or top_logprobs < 1 or not 0 < timeout < math.inf:
            raise ValueError("max_connections, top_logprobs and timeout must be positive (timeout finite)")
        self.base_url = base_url.rstrip("/")
        self.model = model
        self.api_key_env = api_key_env
        self.timeout = timeout
        self.max_connections = max_connections
        self.top_logprobs = top_logprobs
        self.extra = dict(extra or {})
        self.name = name or f"openai_http:{model or self.base_url}"
        self._headers = {"Content-Type": "application/json", "Accept": "application/json"}
        self._key: Secret | None = read_api_key(api_key_env)
        self._session: aiohttp.ClientSession | None = None
        self._httpx: httpx.AsyncClient | None = None
        if transport is not None:
            self._httpx = httpx.AsyncClient(
                base_url=self.base_url,
                headers=self._all_headers(),
                timeout=httpx.Timeout(timeout, pool=None),
                transport=transport,
                trust_env=False,
            )

    def __repr__(self) -> str:
        return (
            f"OpenAIHTTPBackend(name={self.name!r}, base_url={self.base_url!r}, "
            f"model={self.model!r}, api_key_env={self.api_key_env!r})"
        )

    async def aclose(self) -> None:
        if self._session is not None:
            await self._session.close()
            self._session = None
        if self._httpx is not None:
            await self._httpx.aclose()

    async def __aenter__(self) -> OpenAIHTTPBackend:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    # -- transports: each returns (status, body bytes, headers) or raises _TransportFailure ---

    def _all_headers(self) -> dict[str, str]:
        if self._key is None:
            return dict(self._headers)
        return {**self._headers, "Authorization": f"Bearer {self._key.reveal()}"}

    def _open_session(self) -> aiohttp.ClientSession:
        connector = aiohttp.TCPConnector(limit=self.max_connections, limit_per_host=0)
        timeout = aiohttp.ClientTimeout(
            total=None, connect=None, sock_connect=self.timeout, sock_read=self.timeout
        )
        self._session = aiohttp.ClientSession(
            connector=connector, headers=self._all_headers(), timeout=timeout, trust_env=False,
            auto_decompress=True,
        )
        return self._session

    async def _post_aiohttp(self, path: str, payload: bytes) -> tuple[int, bytes, Mapping[str, str]]:
        session = self._session or self._open_session()
        try:
            async with session.post(self.base_url + path, data=payload) as resp:
                return resp.status, await resp.read(), resp.headers
        except (asyncio.TimeoutError, TimeoutError) as exc:
            raise _TransportFailure("timeout") from exc
        except (aiohttp.ClientError, OSError) as exc:
            raise _TransportFailure("connection", f"{type(exc).__name__}: {exc}") from exc

    async def _post_httpx(self, path: str, payload: bytes) -> tuple[int, bytes, Mapping[str, str]]:
        assert self._httpx is not None
        try:
            resp = await self._httpx.post(path, content=payload)
            return resp.status_code, resp.content, resp.headers
        except httpx.TimeoutException as exc:
            raise _TransportFailure("timeout") from exc
        except httpx.TransportError as exc:
            raise _TransportFailure("connection", f"{type(exc).__name__}: {exc}") from exc

    # -- the call ------------------------------------------------------------------------------

    async def complete(self, request: Request) -> Completion:
        built = build_body(request, model=self.model, extra=self.extra, top_logprobs=self.top_logprobs)
        if isinstance(built, Completion):
            return built
        path, body = built
        payload = json.dumps(body, ensure_ascii=False).encode()
        start = time.perf_counter()
        try:
            if self._httpx is not None:
                status, content, headers = await self._post_httpx(path, payload)
            else:
                status, content, headers = await self._post_aiohttp(path, payload)
        except _TransportFailure as exc:
            error = exc.kind if not exc.detail else f"{exc.kind}: {redact_text(exc.detail)[:200]}"
            return failed(error, latency_s=time.perf_counter() - start)
        latency = time.perf_counter() - start
        # every known key, in any spelling JSON allows (``\\/``, ``\\uXXXX``), goes before decoding
        text = redact_text(content.decode("utf-8", errors="replace"))
        if status != 200:
            return http_failure(status, text, latency, request, headers)
        data: Any = None
        try:
            data = json.loads(text)
            if not isinstance(data, dict):
                raise TypeError("the body is not a JSON object")
            return read_body(data, request, latency)
        except (ValueError, TypeError, KeyError, IndexError, AttributeError) as exc:
            raw = data if isinstance(data, dict) else {"text": text[:2000]}
            detail = f"{type(exc).__name__}: {exc}"[:200]
            return failed(f"malformed_body: {detail}", latency_s=latency, raw=raw)
