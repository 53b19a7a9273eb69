"""Program the sandboxed interpreter runs (passed to ``python -I -B -c``); stdlib only.

``argv[1]`` is a read-only fd holding the JSON payload ``{"code", "tests", "token"}``; ``argv[2]``
is the status fd. The candidate code runs first, then the tests, both in one fresh ``__main__``
namespace. On success the driver writes ``{"token", "done": true}`` to the status fd and leaves with
``os._exit(0)`` (skipping the candidate's atexit hooks and non-daemon threads); on an exception it
writes the exception's type, phase and errno, prints the traceback to stderr and exits with 1.

What it leaves out: a candidate that inspects this driver's frames can learn the token and forge a
pass. The sandbox contains what code can *do* to the machine; it does not certify that a candidate
did not game its own tests.
"""

import os
import sys


def _report(fd: int, token: str, fields: dict[str, object]) -> None:
    parts = ['"token": "%s"' % token]
    for key, value in fields.items():
        if isinstance(value, bool):
            parts.append('"%s": %s' % (key, "true" if value else "false"))
        elif isinstance(value, int):
            parts.append('"%s": %d' % (key, value))
        else:
            parts.append('"%s": "%s"' % (key, "".join(c for c in str(value) if c.isalnum() or c in "._")))
    try:
        os.write(fd, ("{" + ", ".join(parts) + "}\n").encode())
    except OSError:
        pass


def _main() -> None:
    import json

    payload_fd, status_fd = int(sys.argv[1]), int(sys.argv[2])
    with os.fdopen(payload_fd, "rb") as fh:
        payload = json.loads(fh.read().decode("utf-8"))
    token, code, tests = payload["token"], payload["code"], payload["tests"]
    del payload
    sys.argv = ["candidate.py"]
    namespace = {"__name__": "__main__", "__builtins__": __builtins__}
    phase = "code"
    try:
        exec(compile(code, "candidate.py", "exec"), namespace)
        if tests is not None:
            phase = "tests"
            exec(compile(tests, "tests.py", "exec"), namespace)
    except SystemExit:
        raise
    except BaseException as exc:  # noqa: BLE001 - classify every way the candidate can fail
        _report(
            status_fd,
            token,
            {
                "phase": phase,
                "exc": type(exc).__name__,
                "errno": getattr(exc, "errno", None) or 0,
                "assertion": isinstance(exc, AssertionError),
                "memory": isinstance(exc, MemoryError),
            },
        )
        import traceback

        try:
            traceback.print_exc()
        except BaseException:  # noqa: BLE001 - printing may itself fail under MemoryError
            pass
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except BaseException:  # noqa: BLE001 - a closed or broken stream is not our failure
                pass
        os._exit(1)
    _report(status_fd, token, {"done": True})
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except BaseException:  # noqa: BLE001 - a closed or broken stream is not a failure here
            pass
    os._exit(0)


_main()
