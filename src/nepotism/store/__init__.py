"""The nepotism store: one SQLite file with runs, instances, responses, model calls and judgments.

`Store` opens (and migrates) the file; its call cache is keyed by the runner's `request_key`
(a hash of the canonical request, opaque to the store) so that re-running an experiment replays
stored calls instead of paying for them again. Credentials never reach the file: every row is scrubbed (`nepotism.credentials.scrub`)
before it is written. `Store.export` writes tables in
the public recorded-judgment formats. This package does not call models or parse their output.
"""

from nepotism.store._migrate import SCHEMA_VERSION, StoreFullError, StoreSchemaError, StoreWriteError
from nepotism.store.calls import CachedCall
from nepotism.store.database import CLAIM_LEASE_S, RUN_STATUSES, TABLES, Store, default_store_path

__all__ = [
    "CLAIM_LEASE_S",
    "RUN_STATUSES",
    "SCHEMA_VERSION",
    "TABLES",
    "CachedCall",
    "Store",
    "StoreFullError",
    "StoreSchemaError",
    "StoreWriteError",
    "default_store_path",
]
