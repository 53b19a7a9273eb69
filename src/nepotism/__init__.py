"""nepotism: measure, explain and mitigate an LLM judge's favouritism toward itself, its model
family and the models trained on its outputs."""

from nepotism.errors import InputError, NepotismError
from nepotism.records import Instance, Judgment, Message, Reference, Response, RubricItem

__all__ = [
    "InputError",
    "Instance",
    "Judgment",
    "Message",
    "NepotismError",
    "Reference",
    "Response",
    "RubricItem",
]
__version__ = "0.1.0"
