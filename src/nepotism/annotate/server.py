"""Running the annotation app with uvicorn: in the foreground (the CLI) or in a thread (tests).

The socket is bound here, before uvicorn starts, so that port 0 (any free port) works and the
real address can be printed or returned. What this leaves out: TLS and process management.
"""

from __future__ import annotations

import ipaddress
import socket
import threading
import time
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import uvicorn
    from starlette.types import ASGIApp

__all__ = ["BackgroundServer", "bind", "is_loopback", "run"]


def is_loopback(host: str) -> bool:
    """Whether ``host`` is a loopback address or ``localhost``."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def bind(host: str, port: int) -> socket.socket:
    """A listening TCP socket on ``host:port`` (port 0 = any free port)."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host.strip("[]"), port))
    except OSError:
        sock.close()
        raise
    sock.listen(128)
    sock.set_inheritable(True)
    return sock


def _server(app: ASGIApp) -> uvicorn.Server:
    import uvicorn

    config = uvicorn.Config(app, log_level="warning", access_log=False, lifespan="on")
    return uvicorn.Server(config)


def _url(sock: socket.socket) -> str:
    host, port = sock.getsockname()[:2]
    shown = f"[{host}]" if ":" in host else host
    return f"http://{shown}:{port}"


def run(app: ASGIApp, sock: socket.socket) -> None:
    """Serve ``app`` on ``sock`` until interrupted (Ctrl-C)."""
    _server(app).run(sockets=[sock])


class BackgroundServer:
    """``app`` served on 127.0.0.1 (a free port by default) from a daemon thread.

    Use as a context manager or call `start` and `stop`; ``url`` is the base address.
    """

    def __init__(self, app: ASGIApp, host: str = "127.0.0.1", port: int = 0) -> None:
        self._sock = bind(host, port)
        self.url = _url(self._sock)
        self._server = _server(app)
        self._thread = threading.Thread(target=self._server.run, kwargs={"sockets": [self._sock]}, daemon=True)

    def start(self, timeout: float = 15.0) -> BackgroundServer:
        self._thread.start()
        deadline = time.monotonic() + timeout
        while not self._server.started:
            if not self._thread.is_alive() or time.monotonic() > deadline:
                raise RuntimeError("the annotation server did not start")
            time.sleep(0.01)
        return self

    def stop(self, timeout: float = 15.0) -> None:
        self._server.should_exit = True
        if self._thread.is_alive():
            self._thread.join(timeout)
        self._sock.close()

    def __enter__(self) -> BackgroundServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
