"""nepotism: measure, explain and mitigate an LLM judge's favouritism toward itself, its model
family and the models trained on its outputs.

``nepotism.audit(source, references=..., models=..., bootstrap=nepotism.Bootstrap(...))`` audits
recorded judgments (a DataFrame, a file, a store or a run's output folder) and returns
`nepotism.Results` (see `nepotism.api`); ``nepotism.explain(source, judge=..., scope=...)`` gives the
cases behind one judge's verdict. ``audit``, ``explain``, ``Bootstrap``, ``Record`` and ``Results``
are imported on first use, so that ``import nepotism`` (and ``nepotism --help``) stays light.
"""

from typing import Any

from nepotism.errors import InputError, NepotismError, ValidationError
from nepotism.records import Instance, Judgment, Message, Reference, Response, RubricItem

__all__ = [
    "Bootstrap",
    "InputError",
    "Instance",
    "Judgment",
    "Message",
    "NepotismError",
    "Record",
    "Reference",
    "Response",
    "Results",
    "RubricItem",
    "ValidationError",
    "audit",
    "explain",
]
__version__ = "0.1.0"

_LAZY = {
    "audit": "nepotism.api",
    "explain": "nepotism.api",
    "Bootstrap": "nepotism.metrics.bootstrap",
    "Record": "nepotism.results",
    "Results": "nepotism.results",
}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        import importlib

        value = getattr(importlib.import_module(_LAZY[name]), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'nepotism' has no attribute {name!r}")
