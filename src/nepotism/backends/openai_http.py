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

Replicas: ``base_url`` may be a list of endpoints serving the same model (the replicas of a vLLM
deployment, several routers). Each call goes to the replica with the fewest requests in flight
(then the fewest sent). A replica that fails with a connection error or a 5xx answer is backed off
(1 s, doubling with each further failure, up to 30 s; a success ends it) and the call fails over at
once to another replica not tried for it yet; only when every replica failed does the call come
back failed (for the runner's retries). Timeouts back a replica off but do not fail over (the call
already waited its whole timeout). `endpoint_stats` counts, per replica, requests, answers,
failures and calls moved away. With one URL none of this applies.

Limits on what a server sends: ``timeout`` bounds the whole call — connecting, sending, waiting
and reading the answer to its last byte — not only each wait for bytes, so a server trickling its
answer a byte at a time cannot hold a call longer (``timeout: no whole answer within T s``,
retried as any timeout); ``max_response_bytes`` (default `MAX_RESPONSE_BYTES`, 16 MiB) bounds
an answer's body as the client holds it, after HTTP decompression (a 2 MB gzip body inflating to
2 GB is read to the limit and dropped, chunk by chunk), error bodies included: a longer answer is
a failed call ``response_too_large: ...``, not retried, with nothing of the body kept. A
``Content-Length`` above the limit fails before a byte of the body is read.

Failures come back as values with an error class (``timeout``, ``connection``, ``http_429``,
``http_5xx:<code>``, ``http_4xx:<code>``, ``malformed_body``, ``response_too_large``,
``unsupported:<what>``); a 429 or
503 that says how long to wait (``Retry-After``, ...) carries the wait in ``raw["retry_after_s"]``.
Retries, rate limits and caching belong to the runner. The API key is read from the environment variable
named in the configuration and only ever placed in the ``Authorization`` header: it is redacted
from every response body and error text before decoding, in any spelling JSON allows
(`nepotism.credentials.redact_text`), and never shown in a repr.
"""

from __future__ import annotations

import asyncio
import math
import time
from collections.abc import AsyncIterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import aiohttp

from nepotism._files import has_surrogate_escape, without_lone_surrogates
from nepotism.backends.base import Completion, Request, failed, read_api_key
from nepotism.backends.openai_wire import build_body, encode_body, http_failure, parse_json, read_body
from nepotism.backends.registry import API_KEY_ENV, TIMEOUT, BackendSpec, Option
from nepotism.credentials import Secret, known_secrets, redact_text

if TYPE_CHECKING:  # httpx is imported only by a backend given a transport (≈ 50-100 ms a command)
    import httpx

__all__ = ["BACKEND", "MAX_RESPONSE_BYTES", "TOP_LOGPROBS", "OpenAIHTTPBackend"]

#: How many top next-token log-probabilities a label verdict asks for (OpenAI's maximum); batch
#: files (`nepotism.runner.batch`) ask for the same, so a call has one body however it is sent.
TOP_LOGPROBS = 20
#: The longest answer body a call keeps by default, after decompression: far above any chat
#: completion (a 128k-token answer is ≈ 0.5 MB; 20 top log-probabilities a token ≈ 60 bytes each)
#: and small enough that the calls of a run in flight together fit in memory.
MAX_RESPONSE_BYTES = 16 << 20


def _transport_error(exc: _TransportFailure) -> str:
    return exc.kind if not exc.detail else f"{exc.kind}: {redact_text(exc.detail)[:200]}"


class _TransportFailure(Exception):
    """A call that got no whole HTTP answer; ``kind`` is ``timeout``, ``connection`` or
    ``response_too_large`` (`_read_limited`)."""

    def __init__(self, kind: str, detail: str = "") -> None:
        super().__init__(kind)
        self.kind = kind
        self.detail = detail


_BACKOFF_S = 1.0
_BACKOFF_MAX_S = 30.0


class _Replica:
    """One endpoint of a model: requests in flight, counters and health."""

    __slots__ = ("url", "inflight", "requests", "answered", "failed", "failed_over", "strikes", "down_until")

    def __init__(self, url: str) -> None:
        self.url = url
        self.inflight = self.requests = self.answered = self.failed = self.failed_over = self.strikes = 0
        self.down_until = 0.0

    def strike(self) -> None:
        """A connection error, timeout or 5xx: back off, longer with each failure in a row."""
        self.failed += 1
        self.strikes += 1
        wait = min(_BACKOFF_S * 2 ** (self.strikes - 1), _BACKOFF_MAX_S)
        self.down_until = time.monotonic() + wait

    def healthy_answer(self) -> None:
        self.answered += 1
        self.strikes = 0
        self.down_until = 0.0


class OpenAIHTTPBackend:
    """Talk to one OpenAI-compatible server.

    ``base_url`` ends before the endpoint (``http://127.0.0.1:8000/v1``), or is a list of such
    URLs (replicas of one model, see the module docstring). ``model``, when given,
    is the server-side model name sent for every request; otherwise ``Request.model`` is sent.
    ``api_key_env`` names the environment variable holding the key (read once, here). ``timeout``
    bounds the whole call, from waiting for a pooled connection to the answer's last byte (the
    caller keeps its concurrency at ``max_connections`` or less, so that the wait for a connection
    is nil); ``max_response_bytes`` the answer's body after decompression (see the module
    docstring). ``extra`` is
    merged into every request body, under ``Request.extra``. One instance serves one event loop;
    call `aclose` (or use ``async with``) when done.
    """

    def __init__(
        self,
        base_url: str | Sequence[str],
        *,
        model: str | None = None,
        api_key_env: str | None = None,
        timeout: float = 60.0,
        max_response_bytes: int = MAX_RESPONSE_BYTES,
        max_connections: int = 256,
        top_logprobs: int = TOP_LOGPROBS,
        extra: Mapping[str, Any] | None = None,
        name: str | None = None,
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        if max_connections < 1 or top_logprobs < 1 or max_response_bytes < 1 or not 0 < timeout < math.inf:
            raise ValueError("max_connections, top_logprobs, max_response_bytes and timeout must be positive (timeout finite)")
        urls = [base_url] if isinstance(base_url, str) else list(base_url)
        if not urls:
            raise ValueError("base_url needs at least one URL")
        self._replicas = [_Replica(u.rstrip("/")) for u in urls]
        self.base_url = self._replicas[0].url
        self.model = model
        self.api_key_env = api_key_env
        self.timeout = timeout
        self.max_response_bytes = max_response_bytes
        self.max_connections = max_connections
        self.top_logprobs = top_logprobs
        self.extra = dict(extra or {})
        self.name = name or f"openai_http:{model or self.base_url}"
        self._headers = {"Content-Type": "application/json", "Accept": "application/json"}
        self._key: Secret | None = read_api_key(api_key_env)
        self._session: aiohttp.ClientSession | None = None
        self._httpx: httpx.AsyncClient | None = None
        if transport is not None:
            import httpx

            self._httpx = httpx.AsyncClient(
                base_url=self.base_url,
                headers=self._all_headers(),
                timeout=httpx.Timeout(timeout, pool=None),
                transport=transport,
                trust_env=False,
            )

    def __repr__(self) -> str:
        return (
            f"OpenAIHTTPBackend(name={self.name!r}, base_url={[r.url for r in self._replicas] if len(self._replicas) > 1 else self.base_url!r}, "
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
        timeout = aiohttp.ClientTimeout(total=None, connect=None, sock_connect=self.timeout, sock_read=self.timeout)
        self._session = aiohttp.ClientSession(
            connector=connector,
            headers=self._all_headers(),
            timeout=timeout,
            trust_env=False,
            auto_decompress=True,
        )
        return self._session

    async def _post_aiohttp(self, url: str, payload: bytes) -> tuple[int, bytes, Mapping[str, str]]:
        session = self._session or self._open_session()
        try:
            async with session.post(url, data=payload) as resp:
                length, encoding = resp.content_length, resp.headers.get("Content-Encoding", "identity")
                if length is not None and encoding.lower() == "identity" and length <= self.max_response_bytes:
                    return resp.status, await resp.read(), resp.headers  # (bounded by its length)
                return resp.status, await self._read_limited(resp.content.iter_any(), length, encoding), resp.headers
        except TimeoutError as exc:
            raise self._timeout() from exc
        except (aiohttp.ClientError, OSError) as exc:
            raise _TransportFailure("connection", f"{type(exc).__name__}: {exc}") from exc

    async def _post_httpx(self, url: str, payload: bytes) -> tuple[int, bytes, Mapping[str, str]]:
        import httpx

        assert self._httpx is not None
        try:
            async with self._httpx.stream("POST", url, content=payload) as resp:
                length = resp.headers.get("Content-Length")
                body = await self._read_limited(
                    resp.aiter_bytes(),
                    int(length) if length and length.isdigit() else None,
                    resp.headers.get("Content-Encoding", "identity"),
                )
                return resp.status_code, body, resp.headers
        except httpx.TimeoutException as exc:
            raise self._timeout() from exc
        except httpx.TransportError as exc:
            raise _TransportFailure("connection", f"{type(exc).__name__}: {exc}") from exc

    def _timeout(self) -> _TransportFailure:
        return _TransportFailure("timeout", f"no whole answer within {self.timeout:g} s")

    async def _read_limited(self, chunks: AsyncIterator[bytes], length: int | None, encoding: str) -> bytes:
        """The body from its (decompressed) ``chunks``, or `_TransportFailure` ``response_too_large``
        as soon as it is longer than ``max_response_bytes`` (or its ``Content-Length`` says it
        will be, when it is not compressed): never more than the limit and one chunk is held."""
        limit = self.max_response_bytes
        if length is not None and encoding.lower() == "identity" and length > limit:
            raise self._too_large(f"its Content-Length is {length:,} bytes")
        parts: list[bytes] = []
        size = 0
        async for chunk in chunks:
            size += len(chunk)
            if size > limit:
                compressed = "" if encoding.lower() == "identity" else f" ({encoding}-compressed)"
                raise self._too_large(f"more than {limit:,} bytes were read{compressed}")
            parts.append(chunk)
        return b"".join(parts)

    def _too_large(self, what: str) -> _TransportFailure:
        return _TransportFailure(
            "response_too_large",
            f"the answer is longer than the limit of "
            f"{self.max_response_bytes:,} bytes (max_response_mb): {what}; nothing of it is kept",
        )

    # -- the call ------------------------------------------------------------------------------

    async def complete(self, request: Request) -> Completion:
        built = build_body(request, model=self.model, extra=self.extra, top_logprobs=self.top_logprobs)
        if isinstance(built, Completion):
            return built
        path, body = built
        payload = encode_body(body)
        if len(self._replicas) == 1:
            start = time.perf_counter()
            try:
                status, content, headers = await self._post(self.base_url + path, payload)
            except _TransportFailure as exc:
                return failed(_transport_error(exc), latency_s=time.perf_counter() - start)
            return self._read(status, content, headers, request, time.perf_counter() - start)
        return await self._complete_replicated(path, payload, request)

    async def _post(self, url: str, payload: bytes) -> tuple[int, bytes, Mapping[str, str]]:
        """POST ``payload`` and read the whole answer within ``timeout`` (the whole-call deadline)."""
        try:
            async with asyncio.timeout(self.timeout):
                if self._httpx is not None:
                    return await self._post_httpx(url, payload)
                return await self._post_aiohttp(url, payload)
        except TimeoutError as exc:
            raise self._timeout() from exc

    def _pick(self, tried: list[_Replica]) -> _Replica | None:
        """The untried replica with the fewest requests in flight (then sent) among the healthy
        ones; if none is healthy, the one whose back-off ends first (a probe); None when every
        replica was tried."""
        left = [r for r in self._replicas if r not in tried]
        if not left:
            return None
        now = time.monotonic()
        healthy = [r for r in left if r.down_until <= now]
        if not healthy:
            return min(left, key=lambda r: r.down_until)
        return min(healthy, key=lambda r: (r.inflight, r.requests))

    async def _complete_replicated(self, path: str, payload: bytes, request: Request) -> Completion:
        tried: list[_Replica] = []
        start = time.perf_counter()
        while True:
            replica = self._pick(tried)
            assert replica is not None
            tried.append(replica)
            replica.inflight += 1
            replica.requests += 1
            try:
                status, content, headers = await self._post(replica.url + path, payload)
            except _TransportFailure as exc:
                outcome = failed(_transport_error(exc), latency_s=time.perf_counter() - start)
                if exc.kind == "response_too_large":  # an answer, too long: another replica's would be too
                    replica.answered += 1
                    return outcome
                replica.strike()
                if exc.kind == "timeout" or len(tried) == len(self._replicas):
                    return outcome
                replica.failed_over += 1
                continue
            finally:
                replica.inflight -= 1
            if status >= 500 and len(tried) < len(self._replicas):
                replica.strike()
                replica.failed_over += 1
                continue
            if status >= 500:
                replica.strike()
            else:
                replica.healthy_answer()
            return self._read(status, content, headers, request, time.perf_counter() - start)

    def endpoint_stats(self) -> dict[str, dict[str, int]]:
        """Per replica URL: ``requests`` sent, ``answered`` (an HTTP answer below 500),
        ``failed`` (connection error, timeout or 5xx) and ``failed_over`` (calls it failed that
        went on to another replica)."""
        return {
            r.url: {"requests": r.requests, "answered": r.answered, "failed": r.failed, "failed_over": r.failed_over}
            for r in self._replicas
        }

    def _read(self, status: int, content: bytes, headers: Mapping[str, str], request: Request, latency: float) -> Completion:
        # every known key, in any spelling JSON allows (``\\/``, ``\\uXXXX``), goes before decoding
        if known_secrets():
            content = redact_text(content.decode("utf-8", errors="replace")).encode()
        if status != 200:
            return http_failure(status, content.decode("utf-8", errors="replace"), latency, request, headers)
        data: Any = None
        try:
            data = parse_json(content)
            if not isinstance(data, dict):
                raise TypeError("the body is not a JSON object")
            if has_surrogate_escape(content):  # no text: U+FFFD, or the store could not write the call
                data = without_lone_surrogates(data)
            return read_body(data, request, latency)
        except (ValueError, TypeError, KeyError, IndexError, AttributeError) as exc:
            raw = data if isinstance(data, dict) else {"text": content.decode("utf-8", errors="replace")[:2000]}
            detail = f"{type(exc).__name__}: {exc}"[:200]
            return failed(f"malformed_body: {detail}", latency_s=latency, raw=raw)


def _from_config(cfg: Any) -> OpenAIHTTPBackend:
    urls: str | list[str] = list(cfg.base_urls) if len(cfg.base_urls) > 1 else (cfg.base_url or "")
    return OpenAIHTTPBackend(
        urls,
        model=cfg.model,
        api_key_env=cfg.api_key_env,
        timeout=cfg.timeout,
        max_connections=cfg.concurrency,
        max_response_bytes=max(1, int(cfg.max_response_mb * (1 << 20))),
        extra=dict(cfg.params),
        name=cfg.id,
    )


#: ``backend = "openai"`` in an experiment file (`nepotism.backends.registry`)
BACKEND = BackendSpec(
    name="openai",
    summary="an OpenAI-compatible HTTP server (OpenAI, vLLM, llama.cpp server, ...)",
    options=(
        Option("base_url", "urls", required=True),
        Option("model", "text"),
        API_KEY_ENV,
        TIMEOUT,
        Option("max_response_mb", "amount", 16.0, high=4096, unit="MiB"),
    ),
    build=_from_config,
    raw_prompts=True,
)
