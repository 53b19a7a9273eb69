"""Cache keys for store tests: the store treats a key as an opaque 64-hex-digit string (the runner's
`request_key` computes real ones), so a hash of a tag is enough here."""

import hashlib


def opaque_key(tag: str) -> str:
    return hashlib.sha256(tag.encode()).hexdigest()
