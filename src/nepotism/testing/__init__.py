"""Helpers for testing and benchmarking code that talks to models, without a real model.

`nepotism.testing.standin` holds a loopback OpenAI-compatible stand-in server. Nothing here is
imported by the library itself.
"""

__all__: list[str] = []
