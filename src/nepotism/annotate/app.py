"""The annotation web app: one annotator, one collection, one pair on screen at a time.

Server-rendered pages (Starlette + Jinja2 with autoescaping on) and one small static script
for the keyboard: ``A``/``B`` choose a response, ``T`` a tie, ``S`` a skip, ``N``/``P`` (or the
arrow keys) move, ``G`` jumps to an item number, ``L`` lists the items. Every label is a plain
HTML form POST, written to the store before the reply is sent (POST, then redirect to the next
unlabelled item), so a reload or a crash never loses a label, and the app works with Tab and
Enter alone as well.

Responses are untrusted text: they are only ever inserted through Jinja2's escaping into
``white-space: pre-wrap`` blocks (never rendered as Markdown or HTML), and every reply carries a
Content-Security-Policy that allows scripts only from this server's own ``/static`` (no inline
script), so a ``<script>`` in a response is shown as text and cannot run. Forms carry a random
per-server token and cross-origin POSTs are refused; the Host header must name the server
(against DNS rebinding). The page never shows model names; each annotator's on-screen order
per item is drawn once and recorded.

What this leaves out: accounts and passwords (bind to 127.0.0.1, the default, and run one
server per annotator), Markdown rendering, editing the pairs from the browser.
"""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import secrets
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from urllib.parse import parse_qs

from jinja2 import Environment, PackageLoader, select_autoescape
from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.middleware import Middleware
from starlette.middleware.trustedhost import TrustedHostMiddleware
from starlette.requests import Request
from starlette.responses import HTMLResponse, PlainTextResponse, RedirectResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from nepotism.errors import InputError
from nepotism.store import Store
from nepotism.store import annotations as ann

__all__ = ["CONTENT_SECURITY_POLICY", "KEYS", "create_app"]

CONTENT_SECURITY_POLICY = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; "
    "connect-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'"
)
#: Form values accepted for a label, mapped to what the store records.
KEYS = {"A": "A", "B": "B", "tie": "tie", "T": "tie", "skip": "skip", "S": "skip"}
_HEADERS = [
    (b"content-security-policy", CONTENT_SECURITY_POLICY.encode()),
    (b"x-content-type-options", b"nosniff"),
    (b"x-frame-options", b"DENY"),
    (b"referrer-policy", b"same-origin"),  # no-referrer would make form POSTs send "Origin: null"
    (b"cross-origin-opener-policy", b"same-origin"),
]
_MAX_BODY = 16_384
_LOOPBACK = ["127.0.0.1", "localhost", "[::1]", "::1"]


class _SecurityHeaders:
    """Pure ASGI middleware adding the security headers (and no-store) to every response."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return await self.app(scope, receive, send)

        async def wrapped(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = list(message.get("headers", []))
                names = {name.lower() for name, _ in headers}
                headers += [h for h in _HEADERS if h[0] not in names]
                if b"cache-control" not in names:
                    headers.append((b"cache-control", b"no-store"))
                message = {**message, "headers": headers}
            await send(message)

        return await self.app(scope, receive, wrapped)


class _Annotation:
    """The state behind one app: the store, the items, who is labelling, the form token."""

    def __init__(self, store_path: Path, collection: str, annotator: str, order_seed: int | None, token: str | None) -> None:
        self.store_path = Path(store_path)
        self.collection = collection
        self.annotator = ann.validate_annotator(annotator)
        self.order_seed = order_seed
        self.token = token or secrets.token_urlsafe(24)
        self.store = Store(self.store_path)
        self.items = ann.collection_items(self.store, collection)
        if not self.items:
            self.store.close()
            raise InputError(f"the store holds no collection {collection!r}", path=str(store_path), field="collection")
        self.env = Environment(
            loader=PackageLoader("nepotism.annotate", "templates"),
            autoescape=select_autoescape(default=True, default_for_string=True),
            trim_blocks=True,
            lstrip_blocks=True,
        )

    def draw(self, item_id: str) -> Callable[[], str]:
        def choose() -> str:
            if self.order_seed is None:
                bit = secrets.randbelow(2)
            else:
                text = f"{self.order_seed}:{self.annotator}:{item_id}".encode()
                bit = hashlib.sha256(text).digest()[0] & 1
            return ("model_a", "model_b")[bit]

        return choose

    def latest(self) -> dict[str, ann.Label]:
        labels = ann.latest_labels(self.store, self.collection, self.annotator)
        return {label.item_id: label for label in labels}

    def resume_position(self, latest: dict[str, ann.Label], after: int = 0) -> int | None:
        """The first item after ``after`` (wrapping) with no label; else the first skipped one."""
        n = len(self.items)
        for step in range(n):
            item = self.items[(after + step) % n]
            if item.item_id not in latest:
                return item.position
        if after == 0:
            for item in self.items:
                if latest[item.item_id].winner is None:
                    return item.position
        return None

    def render(self, template: str, **context: object) -> HTMLResponse:
        html = self.env.get_template(template).render(
            collection=self.collection, annotator=self.annotator, total=len(self.items), **context
        )
        return HTMLResponse(html)

    def progress(self, latest: dict[str, ann.Label]) -> dict[str, int]:
        skipped = sum(1 for label in latest.values() if label.winner is None)
        return {"labelled": len(latest) - skipped, "skipped": skipped, "todo": len(self.items) - len(latest)}


def _position(request: Request, state: _Annotation) -> int | None:
    n = request.path_params["n"]
    return n if 1 <= n <= len(state.items) else None


def _same_origin(request: Request) -> bool:
    origin = request.headers.get("origin")
    if origin is None:  # not sent by every client; browsers send it on cross-site POSTs
        return True
    host = request.headers.get("host", "")
    return origin in (f"http://{host}", f"https://{host}")


def create_app(
    store_path: str | Path,
    collection: str,
    annotator: str,
    *,
    order_seed: int | None = None,
    token: str | None = None,
    allowed_hosts: list[str] | None = None,
) -> Starlette:
    """The ASGI app for ``annotator`` labelling ``collection`` (already in the store)."""
    state = _Annotation(Path(store_path), collection, annotator, order_seed, token)

    async def index(request: Request) -> Response:
        latest = await run_in_threadpool(state.latest)
        position = state.resume_position(latest)
        target = f"/item/{position}" if position is not None else "/done"
        return RedirectResponse(target, status_code=303)

    def _show(n: int) -> HTMLResponse:
        item = state.items[n - 1]
        first = ann.shown_first(state.store, collection, item.item_id, state.annotator, state.draw(item.item_id))
        second = "model_b" if first == "model_a" else "model_a"
        latest = state.latest()
        current = latest.get(item.item_id)
        prompt = item.prompt if isinstance(item.prompt, str) else list(item.prompt)
        return state.render(
            "item.html",
            n=n,
            item=item,
            prompt=prompt,
            left=item.text(first),
            right=item.text(second),
            current=current,
            progress=state.progress(latest),
            token=state.token,
        )

    async def show(request: Request) -> Response:
        n = _position(request, state)
        if n is None:
            return PlainTextResponse("no such item", status_code=404)
        return await run_in_threadpool(_show, n)

    async def label(request: Request) -> Response:
        n = _position(request, state)
        if n is None:
            return PlainTextResponse("no such item", status_code=404)
        if not _same_origin(request):
            return PlainTextResponse("cross-origin request refused", status_code=403)
        body = await request.body()
        if len(body) > _MAX_BODY:
            return PlainTextResponse("request too large", status_code=413)
        form = {k: v[-1] for k, v in parse_qs(body.decode("utf-8", "replace")).items()}
        if not hmac.compare_digest(form.get("token", ""), state.token):
            return PlainTextResponse("stale or missing form token: reload the page", status_code=403)
        pressed = KEYS.get(form.get("label", ""))
        if pressed is None:
            return PlainTextResponse("unknown label", status_code=400)
        elapsed = form.get("elapsed_ms", "")
        elapsed_ms = int(elapsed) if elapsed.isdigit() else None
        item = state.items[n - 1]

        def write() -> int | None:
            ann.add_label(state.store, collection, item.item_id, state.annotator, pressed, elapsed_ms)
            return state.resume_position(state.latest(), after=n)

        following = await run_in_threadpool(write)
        target = f"/item/{following}" if following is not None else "/done"
        return RedirectResponse(target, status_code=303)

    async def jump(request: Request) -> Response:
        text = request.query_params.get("n", "").strip()
        if not text.isdigit() or not 1 <= int(text) <= len(state.items):
            return PlainTextResponse(f"give an item number from 1 to {len(state.items)}", status_code=400)
        return RedirectResponse(f"/item/{int(text)}", status_code=303)

    def _listing() -> HTMLResponse:
        latest = state.latest()
        return state.render("items.html", items=state.items, latest=latest, progress=state.progress(latest))

    async def listing(request: Request) -> Response:
        return await run_in_threadpool(_listing)

    def _done() -> HTMLResponse:
        latest = state.latest()
        return state.render("done.html", progress=state.progress(latest), next_position=state.resume_position(latest))

    async def done(request: Request) -> Response:
        return await run_in_threadpool(_done)

    static = Path(__file__).with_name("static")
    routes = [
        Route("/", index),
        Route("/item/{n:int}", show, methods=["GET"]),
        Route("/item/{n:int}", label, methods=["POST"]),
        Route("/jump", jump),
        Route("/items", listing),
        Route("/done", done),
        Route("/favicon.ico", lambda request: Response(status_code=204)),
        Mount("/static", StaticFiles(directory=static), name="static"),
    ]
    middleware = [
        Middleware(_SecurityHeaders),
        Middleware(TrustedHostMiddleware, allowed_hosts=allowed_hosts or _LOOPBACK),
    ]

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        yield
        state.store.close()

    app = Starlette(routes=routes, middleware=middleware, lifespan=lifespan)
    app.state.annotation = state
    return app
