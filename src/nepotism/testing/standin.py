"""A loopback OpenAI-compatible stand-in server for tests and benchmarks.

It answers ``POST /v1/chat/completions`` and ``POST /v1/completions`` (and ``GET /v1/models``)
after a configurable latency, with answers derived deterministically from the request: the same
prompt always gets the same verdict text (``[[A]]``-style, or ``{"criterion_met": true}`` when
asked for one rubric item's JSON verdict), the same label log-probabilities and the same
per-token log-probabilities of an echoed prompt. Faults are injected at seeded rates (HTTP 500 /
503 / 429, hangs that the client must time out on, malformed bodies), or on demand: a message
or prompt containing ``<<standin:fault=NAME>>`` always gets fault ``NAME``. ``GET /standin/stats``
returns counters, including how many requests carried the expected ``Authorization`` header.
Hostile habits for leak tests: ``echo_headers`` copies the request's headers (the
``Authorization`` header with the key included) into every answer text, body and error message,
and ``escape_slashes`` writes ``/`` as ``\\/`` in its JSON (valid JSON that a naive scrubber of
the raw text misses). Hostile sizes and pace, for the client's limits: ``huge_body`` streams a
valid answer whose JSON carries ``huge_bytes`` of padding (512 MiB by default), ``gzip_bomb``
sends a valid answer as a gzip body of ≈ 2 MB that inflates to ``bomb_bytes`` (2 GiB), and
``trickle`` sends a valid answer one byte every ``trickle_s`` seconds; the bytes each sent before
the client left are counted (``huge_body_sent``, ``trickle_sent`` in the stats). ``retry_after``
is sent as the ``Retry-After`` header of every 429, and
``log_requests`` keeps ``(time.time(), fingerprint, status)`` of every answered request in
``StandinServer.log`` (the fingerprint hashes the endpoint and the whole request body), so tests
can check *when*, and how often, the server was asked the same thing.

It is built on aiohttp's low-level server (no router, no middlewares) so that it stays far below
one core at a few thousand requests per second. It runs in a background thread (cheap to start,
for tests) or in a subprocess (for benchmarks, so it does not share the client's GIL). It models
no real tokenizer, no streaming and no real model: it exists to exercise clients and runners.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import math
import os
import random
import re
import subprocess
import sys
import threading
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from typing import Any

__all__ = ["FAULTS", "StandinConfig", "StandinServer", "serve_until_stopped", "standin_process", "standin_thread"]

#: Fault names accepted in ``fault_rates`` and in ``<<standin:fault=NAME>>`` markers.
FAULTS = ("http_500", "http_503", "http_429", "hang", "malformed", "empty_choices", "drop", "huge_body", "gzip_bomb", "trickle")
_MARKER = re.compile(r"<<standin:fault=([a-z0-9_]+)>>")
_TOKEN = re.compile(r"\s*\S+|\s+")
# Tokens the stand-in "considers" as the next token; the label-like ones get a boost so that they
# are always within the top 20.
_VOCAB = (
    "A",
    "B",
    "C",
    "tie",
    "yes",
    "no",
    " A",
    " B",
    "1",
    "2",
    "3",
    "4",
    "5",
    "6",
    "7",
    "8",
    "9",
    "10",
    "The",
    "I",
    "Response",
    "[[",
    "Both",
    "Neither",
)
_BOOSTED = frozenset({"A", "B", "C", "tie", "yes", "no"})


@dataclass(frozen=True)
class StandinConfig:
    """How the stand-in behaves. ``fault_rates`` maps names from `FAULTS` to probabilities."""

    latency_s: float = 0.1
    fault_rates: Mapping[str, float] = field(default_factory=dict)
    seed: int = 0
    hang_s: float = 3600.0
    expected_api_key: str | None = None
    echo_headers: bool = False
    escape_slashes: bool = False
    retry_after: str | None = None
    log_requests: bool = False
    huge_bytes: int = 512 << 20
    bomb_bytes: int = 2 << 30
    trickle_s: float = 0.5

    def __post_init__(self) -> None:
        unknown = set(self.fault_rates) - set(FAULTS)
        if unknown:
            raise ValueError(f"unknown fault(s) {sorted(unknown)}; known: {FAULTS}")
        if sum(self.fault_rates.values()) > 1 or min(self.fault_rates.values(), default=0) < 0:
            raise ValueError("fault rates must be >= 0 and sum to at most 1")


_BOMBS: dict[int, tuple[bytes, int, int]] = {}


def _gzip_bomb(size: int, answer: bytes) -> bytes:
    """A gzip body of ``answer`` (a JSON object) with a ``padding`` string of ``size`` bytes
    (whole MiB) before its keys: one deflate block of 1 MiB of padding, flushed whole, repeated
    (≈ 1 KB each, so 2 GiB take ≈ 2 MB), with the checksum of the whole. The padding's blocks and
    checksum are made once per size."""
    import struct
    import zlib

    def deflated(data: bytes, last: bool = False) -> bytes:
        packer = zlib.compressobj(9, zlib.DEFLATED, -15)
        return packer.compress(data) + packer.flush(zlib.Z_FINISH if last else zlib.Z_FULL_FLUSH)

    head, chunk = b'{"padding": "', b"x" * (1 << 20)
    if size not in _BOMBS:
        blocks = size // len(chunk)
        crc = zlib.crc32(head)
        for _ in range(blocks):
            crc = zlib.crc32(chunk, crc)
        _BOMBS.clear()
        _BOMBS[size] = (deflated(head) + deflated(chunk) * blocks, crc, len(head) + blocks * len(chunk))
    padding, crc, length = _BOMBS[size]
    tail = b'", ' + answer[1:]
    return (
        b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\xff"
        + padding
        + deflated(tail, last=True)
        + struct.pack("<II", zlib.crc32(tail, crc), (length + len(tail)) & 0xFFFFFFFF)
    )


def _hash64(*parts: str) -> int:
    return int.from_bytes(hashlib.blake2b("\x1f".join(parts).encode(), digest_size=8).digest())


def _next_token_logprobs(model: str, text: str) -> list[tuple[str, float]]:
    """A deterministic next-token distribution over `_VOCAB`, best first."""
    logits = []
    for token in _VOCAB:
        h = _hash64(model, text, token)
        logits.append((h % 10_000) / 1_250.0 + (4.0 if token in _BOOSTED else 0.0))
    top = max(logits)
    norm = top + math.log(sum(math.exp(v - top) for v in logits))
    pairs = [(tok, v - norm - 0.05) for tok, v in zip(_VOCAB, logits)]  # 5% mass left elsewhere
    return sorted(pairs, key=lambda p: -p[1])


def _token_logprob(model: str, token: str) -> float:
    return -((_hash64(model, "tok", token) % 6_000) / 1_000.0) - 0.01


class StandinServer:
    """The request handler and its counters; `serve` runs it on a loopback port."""

    def __init__(self, config: StandinConfig | None = None) -> None:
        self.config = config or StandinConfig()
        self._rng = random.Random(self.config.seed)
        self._faults = sorted(self.config.fault_rates.items())
        self.stats: dict[str, int] = {
            "requests": 0,
            "auth_ok": 0,
            "auth_missing": 0,
            "in_flight": 0,
            "peak_in_flight": 0,
        }
        self._hanging: set[asyncio.Future[None]] = set()
        self.log: list[tuple[float, str, int]] = []

    def _count(self, key: str) -> None:
        self.stats[key] = self.stats.get(key, 0) + 1

    def _pick_fault(self, text: str) -> str | None:
        marker = _MARKER.search(text)
        if marker:
            return marker.group(1)
        if not self._faults:
            return None
        draw = self._rng.random()
        for name, rate in self._faults:
            if draw < rate:
                return name
            draw -= rate
        return None

    async def handle(self, request: Any) -> Any:
        from aiohttp import web

        self._count("requests")
        if request.method == "GET" and request.path == "/standin/stats":
            # cpu_s is the CPU time of the whole process (meaningful for `standin_process`)
            return web.json_response({**self.stats, "cpu_s": round(time.process_time(), 4)})
        if request.method == "GET" and request.path == "/v1/models":
            return web.json_response({"object": "list", "data": [{"id": "standin", "object": "model"}]})
        auth = request.headers.get("Authorization")
        if auth is None:
            self._count("auth_missing")
        elif self.config.expected_api_key and auth == f"Bearer {self.config.expected_api_key}":
            self._count("auth_ok")
        if self.config.expected_api_key and auth != f"Bearer {self.config.expected_api_key}":
            return self._json({"error": {"message": f"bad credentials{self._echo(request)}"}}, 401)
        if request.method != "POST" or request.path not in ("/v1/chat/completions", "/v1/completions"):
            return web.json_response({"error": {"message": "not found"}}, status=404)
        try:
            body = json.loads(await request.read())
            chat = request.path == "/v1/chat/completions"
            if chat:
                text = "\n".join(f"{m['role']}: {m['content']}" for m in body["messages"])
            else:
                text = body["prompt"]
                if not isinstance(text, str):
                    raise TypeError("prompt must be a string")
        except (ValueError, KeyError, TypeError) as exc:
            return web.json_response({"error": {"message": f"bad request: {exc}"}}, status=400)
        fault = self._pick_fault(text)
        if fault is not None and fault not in FAULTS:
            return web.json_response({"error": {"message": f"unknown fault {fault!r}"}}, status=400)
        if fault is not None:
            self._count(f"fault_{fault}")
        stats = self.stats
        stats["in_flight"] += 1
        stats["peak_in_flight"] = max(stats["peak_in_flight"], stats["in_flight"])
        try:
            response = await self._answer(request, body, chat, text, fault)
        finally:
            stats["in_flight"] -= 1
        if self.config.log_requests:
            print_ = f"{request.path}\x1f{json.dumps(body, sort_keys=True)}"
            self.log.append((time.time(), f"{_hash64(print_):016x}", response.status))
        return response

    async def _answer(self, request: Any, body: dict[str, Any], chat: bool, text: str, fault: str | None) -> Any:
        from aiohttp import web

        if self.config.latency_s > 0:
            await asyncio.sleep(self.config.latency_s)
        if fault == "drop":
            request.transport.close()  # the client sees the connection close with no answer
            return web.Response(status=500)
        if fault == "hang":
            waiter: asyncio.Future[None] = asyncio.get_running_loop().create_future()
            self._hanging.add(waiter)
            try:
                await asyncio.wait_for(waiter, self.config.hang_s)
            except (TimeoutError, asyncio.CancelledError):
                pass
            finally:
                self._hanging.discard(waiter)
            return web.Response(status=504, text="hung")
        if fault in ("http_500", "http_503", "http_429"):
            status = int(fault[5:])
            answer = self._json({"error": {"message": f"injected {status}{self._echo(request)}"}}, status)
            if status == 429 and self.config.retry_after is not None:
                answer.headers["Retry-After"] = self.config.retry_after
            return answer
        if fault == "malformed":
            return web.Response(status=200, text='{"choices": [{"message": ', content_type="application/json")
        model = str(body.get("model", ""))
        answer = self._chat(body, model, text) if chat else self._completion(body, model, text)
        if fault in ("huge_body", "gzip_bomb", "trickle"):
            return await self._hostile(request, fault, answer)
        if fault == "empty_choices":
            answer["choices"] = []
        if self.config.echo_headers:
            answer["echo"] = dict(request.headers)
            message = answer["choices"][0].get("message") if answer["choices"] else None
            if message is not None and body.get("logprobs") is None:
                message["content"] += self._echo(request)
        self._count("ok")
        return self._json(answer, 200)

    async def _hostile(self, request: Any, fault: str, answer: dict[str, Any]) -> Any:
        """A valid ``answer`` sent as the ``fault`` says: padded to ``huge_bytes``, as a gzip bomb,
        or a byte at a time; what was sent before the client left is counted."""
        from aiohttp import web

        whole = json.dumps(answer).encode()
        if fault == "gzip_bomb":
            body = _gzip_bomb(self.config.bomb_bytes, whole)
            return web.Response(status=200, body=body, headers={"Content-Type": "application/json", "Content-Encoding": "gzip"})
        stream = web.StreamResponse(status=200, headers={"Content-Type": "application/json"})
        if fault == "trickle":
            stream.content_length = len(whole)
        await stream.prepare(request)
        sent = 0
        try:
            if fault == "trickle":
                for i in range(len(whole)):
                    await stream.write(whole[i : i + 1])
                    sent += 1
                    self.stats["trickle_sent"] = max(self.stats.get("trickle_sent", 0), sent)
                    await asyncio.sleep(self.config.trickle_s)
            else:  # {"padding": "xxx…", <the answer's keys>}
                await stream.write(b'{"padding": "')
                chunk = b"x" * (1 << 20)
                while sent < self.config.huge_bytes:
                    part = chunk[: self.config.huge_bytes - sent]
                    await stream.write(part)
                    sent += len(part)
                    self.stats["huge_body_sent"] = max(self.stats.get("huge_body_sent", 0), sent)
                await stream.write(b'", ' + whole[1:])
            await stream.write_eof()
        except (ConnectionError, RuntimeError):  # the client left (a closed transport)
            pass
        return stream

    def _echo(self, request: Any) -> str:
        """The request's headers as text when ``echo_headers`` is on (else nothing)."""
        if not self.config.echo_headers:
            return ""
        return " [" + "; ".join(f"{k}: {v}" for k, v in request.headers.items()) + "]"

    def _json(self, data: Any, status: int) -> Any:
        from aiohttp import web

        text = json.dumps(data)
        if self.config.escape_slashes:
            text = text.replace("/", "\\/")
        return web.Response(status=status, text=text, content_type="application/json")

    def _envelope(self, kind: str, model: str, text: str, choice: dict[str, Any], n_out: int) -> dict[str, Any]:
        n_in = len(_TOKEN.findall(text))
        return {
            "id": f"standin-{_hash64(model, text) & 0xFFFFFFFF:08x}",
            "object": kind,
            "created": int(time.time()),
            "model": model,
            "choices": [choice],
            "usage": {"prompt_tokens": n_in, "completion_tokens": n_out, "total_tokens": n_in + n_out},
        }

    def _chat(self, body: dict[str, Any], model: str, text: str) -> dict[str, Any]:
        dist = _next_token_logprobs(model, text)
        max_tokens = int(body.get("max_tokens") or 512)
        if body.get("logprobs") and max_tokens > 1:  # a written verdict with the log-probabilities of each token
            return self._chat_with_logprobs(model, text, dist, max_tokens, int(body.get("top_logprobs") or 0))
        if body.get("logprobs"):
            k = int(body.get("top_logprobs") or 0)
            first, lp = dist[0]
            top = [{"token": t, "logprob": v, "bytes": list(t.encode())} for t, v in dist[:k]]
            content = [{"token": first, "logprob": lp, "bytes": list(first.encode()), "top_logprobs": top}]
            choice = {
                "index": 0,
                "message": {"role": "assistant", "content": first},
                "logprobs": {"content": content},
                "finish_reason": "length",
            }
            return self._envelope("chat.completion", model, text, choice, 1)
        if '"criterion_met"' in text and '"results"' not in text:  # one rubric item: a JSON verdict
            met = next(t for t, _ in dist if t in ("yes", "no")) == "yes"
            words = [f'{{"criterion_met": {"true" if met else "false"}}}']
        else:
            verdict = next(t for t, _ in dist if t in ("A", "B", "C"))
            words = f"Having weighed both answers, the better one is [[{verdict}]].".split(" ")
        out = " ".join(words[:max_tokens])
        reason = "stop" if max_tokens >= len(words) else "length"
        choice = {"index": 0, "message": {"role": "assistant", "content": out}, "finish_reason": reason}
        return self._envelope("chat.completion", model, text, choice, min(max_tokens, len(words)))

    def _chat_with_logprobs(
        self, model: str, text: str, dist: list[tuple[str, float]], max_tokens: int, k: int
    ) -> dict[str, Any]:
        """The written verdict ("... is [[X]].", X the most probable of A/B/C) one token at a time: the
        token after "[[" carries the label distribution among its top log-probabilities, every other
        token itself at log-probability 0."""
        verdict = next(t for t, _ in dist if t in ("A", "B", "C"))
        tokens = (["Having", " weighed", " both", " answers,", " the", " better", " one", " is", " [["] + [verdict, "]]."])[
            :max_tokens
        ]
        content = []
        for i, token in enumerate(tokens):
            after_marker = i > 0 and tokens[i - 1] == " [["
            top = dist[:k] if after_marker else [(token, 0.0)]
            lp = next((v for t, v in dist if t == token), -30.0) if after_marker else 0.0
            content.append(
                {
                    "token": token,
                    "logprob": lp,
                    "bytes": list(token.encode()),
                    "top_logprobs": [{"token": t, "logprob": v, "bytes": list(t.encode())} for t, v in top],
                }
            )
        choice = {
            "index": 0,
            "message": {"role": "assistant", "content": "".join(tokens)},
            "logprobs": {"content": content},
            "finish_reason": "stop" if len(tokens) == 11 else "length",
        }
        return self._envelope("chat.completion", model, text, choice, len(tokens))

    def _completion(self, body: dict[str, Any], model: str, prompt: str) -> dict[str, Any]:
        k = body.get("logprobs")
        dist = _next_token_logprobs(model, prompt)
        gen_token = dist[0][0]
        tokens: list[str] = []
        token_lps: list[float | None] = []
        if body.get("echo"):
            tokens = _TOKEN.findall(prompt)
            token_lps = [None] + [_token_logprob(model, t) for t in tokens[1:]]
        tokens.append(gen_token)
        token_lps.append(dist[0][1])
        offsets, pos = [], 0
        for tok in tokens:
            offsets.append(pos)
            pos += len(tok)
        text = (prompt if body.get("echo") else "") + gen_token
        choice: dict[str, Any] = {"index": 0, "text": text, "finish_reason": "length", "logprobs": None}
        if k is not None:
            top = dict(dist[: int(k)])
            choice["logprobs"] = {
                "tokens": tokens,
                "token_logprobs": token_lps,
                "text_offset": offsets,
                "top_logprobs": [None] * (len(tokens) - 1) + [top],
            }
        return self._envelope("text_completion", model, prompt, choice, 1)

    async def serve(self, host: str = "127.0.0.1", port: int = 0) -> tuple[Any, str]:
        """Start listening; returns (runner, base_url). Stop with ``await runner.cleanup()``."""
        from aiohttp import web

        server = web.Server(self.handle, access_log=None)
        runner = web.ServerRunner(server, shutdown_timeout=0.5)
        await runner.setup()
        site = web.TCPSite(runner, host, port, backlog=4096)
        await site.start()
        sock = site._server.sockets[0]  # type: ignore[union-attr]
        bound_port = sock.getsockname()[1]
        return runner, f"http://{host}:{bound_port}/v1"

    def release_hangs(self) -> None:
        for waiter in list(self._hanging):
            if not waiter.done():
                waiter.cancel()


@contextmanager
def standin_thread(config: StandinConfig | None = None) -> Iterator[tuple[str, StandinServer]]:
    """Run a stand-in in a daemon thread with its own event loop; yields (base_url, server)."""
    server = StandinServer(config)
    loop = asyncio.new_event_loop()
    ready: dict[str, Any] = {}
    started = threading.Event()

    def _run() -> None:
        asyncio.set_event_loop(loop)
        try:
            ready["runner"], ready["url"] = loop.run_until_complete(server.serve())
        except BaseException as exc:  # reported to the caller below
            ready["error"] = exc
        started.set()
        if "error" not in ready:
            loop.run_forever()

    thread = threading.Thread(target=_run, name="nepotism-standin", daemon=True)
    thread.start()
    started.wait(30)
    if "error" in ready or "url" not in ready:
        raise RuntimeError(f"stand-in server did not start: {ready.get('error')!r}")
    try:
        yield ready["url"], server
    finally:

        async def _stop() -> None:
            server.release_hangs()
            await ready["runner"].cleanup()

        asyncio.run_coroutine_threadsafe(_stop(), loop).result(30)
        loop.call_soon_threadsafe(loop.stop)
        thread.join(30)
        loop.close()


@contextmanager
def standin_process(config: StandinConfig | None = None) -> Iterator[str]:
    """Run a stand-in in a child Python process (its own GIL and core); yields its base URL."""
    cfg = json.dumps(asdict(config or StandinConfig()))
    proc = subprocess.Popen(
        [sys.executable, "-m", "nepotism.testing.standin", cfg],
        stdout=subprocess.PIPE,
        stdin=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline().strip()
        if not line.startswith("http://"):
            raise RuntimeError(f"stand-in process did not start (said {line!r})")
        yield line
    finally:
        if proc.stdin is not None:
            proc.stdin.close()  # the child exits when its stdin closes
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(10)


async def _main(cfg_json: str) -> None:
    server = StandinServer(StandinConfig(**json.loads(cfg_json)))
    runner, url = await server.serve()
    print(url, flush=True)
    loop = asyncio.get_running_loop()
    await loop.run_in_executor(None, sys.stdin.read)  # returns when the parent closes stdin
    server.release_hangs()
    await runner.cleanup()


async def serve_until_stopped(config: StandinConfig, *, host: str = "127.0.0.1", port: int = 0, on_ready: Any = None) -> None:
    """Serve until SIGINT or SIGTERM (the public ``nepotism standin`` command); ``on_ready(url)`` is
    called once the port is bound. Hanging requests are released before the server stops."""
    import signal

    server = StandinServer(config)
    runner, url = await server.serve(host, port)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    if on_ready is not None:
        on_ready(url)
    try:
        await stop.wait()
    finally:
        server.release_hangs()
        await runner.cleanup()


if __name__ == "__main__":
    from nepotism._loop import run

    run(_main(sys.argv[1] if len(sys.argv) > 1 else "{}"))
