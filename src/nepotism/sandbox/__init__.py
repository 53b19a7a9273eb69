"""A sandbox for generated code: run untrusted Python with its tests and classify the outcome.

`run` executes a candidate program and its tests in a contained child (network, mount and pid
namespaces, a fresh unnamed uid when root, rlimits, a private /tmp, a minimal environment) and
returns a `SandboxResult`; `sandbox_capabilities` says what isolation this machine allows. It does
not judge code quality, and it does not stop a candidate from gaming its own tests.
"""

from __future__ import annotations

from nepotism.sandbox.capabilities import sandbox_capabilities
from nepotism.sandbox.runner import STATUSES, SandboxError, SandboxResult, run

__all__ = ["STATUSES", "SandboxError", "SandboxResult", "run", "sandbox_capabilities"]
