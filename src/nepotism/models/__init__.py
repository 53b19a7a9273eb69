"""The model registry: which names denote which model, and how a judge relates to a model.

A registry is one or more TOML files (the bundled ``data/registry.toml`` plus the user's own) that
describe models by family, series, aliases and documented lineage (``parent`` = fine-tuned from,
``teachers`` = trained on their outputs). `load_registry` validates and merges them;
`Registry.relation` classifies a (judge, model) pair. Guessing lineage from names, or fetching model
metadata from a hub, is deliberately left out.
"""

from __future__ import annotations

from nepotism.models.loading import BUNDLED_REGISTRY, default_registry, load_registry
from nepotism.models.registry import (
    AUDITED_SCOPES,
    NOT_RELATED,
    SCOPE_LADDER,
    SCOPES,
    ModelInfo,
    Registry,
    Relation,
    less_related,
    related_scope,
    untagged,
)

__all__ = [
    "AUDITED_SCOPES",
    "BUNDLED_REGISTRY",
    "NOT_RELATED",
    "SCOPES",
    "SCOPE_LADDER",
    "ModelInfo",
    "Registry",
    "Relation",
    "default_registry",
    "less_related",
    "load_registry",
    "related_scope",
    "untagged",
]
