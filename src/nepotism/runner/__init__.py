"""The runner: executes an experiment's model calls through the store's cache.

`Runner` generates missing responses and judges planned tasks; `CallExecutor` runs calls with
bounded concurrency per model (`Limiter`: semaphore plus token-bucket requests/tokens per minute),
retries transient failures (`RetryPolicy`) and commits every call to the store before it is used,
so that a killed run resumes without repeating a completed call. `run_experiment` drives a whole
experiment file; `dry_run` prices its plan without calling anything. Judging protocols are
passed in as functions; metrics are not computed here.
"""

from nepotism.runner.calls import (
    CallExecutor,
    CallResult,
    Endpoint,
    PlannedCall,
    call_record,
    completion_from_cached,
    plan_call,
    request_key,
)
from nepotism.runner.engine import GenerationOutcome, GenerationSpec, JudgingOutcome, Runner
from nepotism.runner.limits import Limiter, TokenBucket, estimate_prompt_tokens, estimate_tokens
from nepotism.runner.progress import ProgressView, RunStats
from nepotism.runner.retry import RETRYABLE, RetryPolicy, is_retryable

__all__ = [
    "RETRYABLE",
    "CallExecutor",
    "CallResult",
    "Endpoint",
    "GenerationOutcome",
    "GenerationSpec",
    "JudgingOutcome",
    "Limiter",
    "PlannedCall",
    "ProgressView",
    "RetryPolicy",
    "RunStats",
    "Runner",
    "TokenBucket",
    "call_record",
    "completion_from_cached",
    "estimate_prompt_tokens",
    "estimate_tokens",
    "is_retryable",
    "plan_call",
    "request_key",
]
