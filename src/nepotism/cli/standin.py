"""``nepotism standin``: the loopback stand-in server, for trying the engine offline."""

from __future__ import annotations

import click

from nepotism.cli._common import Finite

__all__ = ["command"]


@click.command("standin")
@click.option(
    "--port",
    type=click.IntRange(0, 65535),
    default=8765,
    show_default=True,
    help="TCP port on 127.0.0.1 (0 = any free port; the URL is printed either way).",
)
@click.option("--latency", type=Finite(0.0, 60.0), default=0.05, show_default=True, help="Seconds before each answer.")
@click.option(
    "--fault",
    "faults",
    multiple=True,
    metavar="NAME=RATE",
    help="Inject a fault at a rate, e.g. http_500=0.1 or http_429=0.05 (repeatable); "
    "names: http_500, http_503, http_429, hang, malformed, empty_choices, drop, huge_body "
    "(512 MiB), gzip_bomb (2 MB inflating to 2 GiB), trickle (a byte every 0.5 s).",
)
@click.option("--seed", type=click.IntRange(0), default=0, show_default=True, help="Seed of the fault draws.")
def command(port: int, latency: float, faults: tuple[str, ...], seed: int) -> None:
    """Serve an OpenAI-compatible stand-in on 127.0.0.1 until Ctrl-C or SIGTERM.

    It answers /v1/chat/completions and /v1/completions deterministically from the request (the
    same prompt always gets the same answer and label log-probabilities) after --latency seconds.
    It is no model: use it to try `nepotism run` on examples/standin.toml, which points at port 8765,
    or to rehearse failures with --fault. Prints its base URL on the first line of stdout.
    """
    from nepotism._loop import run
    from nepotism.errors import InputError
    from nepotism.testing.standin import StandinConfig, serve_until_stopped

    rates = {}
    for item in faults:
        name, _, rate = item.partition("=")
        try:
            value = float(rate)
        except ValueError:
            value = float("nan")
        if not 0.0 <= value <= 1.0:
            raise InputError(f"--fault takes NAME=RATE with a rate from 0 to 1, got '{item}'", field="--fault")
        rates[name.strip()] = value
    try:
        config = StandinConfig(latency_s=latency, fault_rates=rates, seed=seed)
    except ValueError as err:
        raise InputError(str(err), field="--fault") from None
    try:
        run(serve_until_stopped(config, port=port, on_ready=lambda url: click.echo(url)))
    except OSError as err:
        raise InputError(
            f"cannot listen on 127.0.0.1:{port} ({err.strerror or err}); pick another --port "
            "and set base_url in the experiment file to match",
            field="--port",
        ) from None
