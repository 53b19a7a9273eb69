"""Report which isolation the sandbox can apply on this machine, by running a trivial program.

The answer comes from a real run (what the launcher managed to apply), not from guessing at kernel
settings, so it is true for this host, this user and this interpreter. It leaves out performance
measurements and any check of the container the host itself runs in.
"""

from __future__ import annotations

import os
import sys
from typing import Any

from nepotism.sandbox.runner import SandboxError, run

__all__ = ["sandbox_capabilities"]


def sandbox_capabilities(python: str = sys.executable) -> dict[str, Any]:
    """What a sandbox run here gets: namespaces, uid drop, private /tmp, rlimits, and caveats."""
    try:
        result = run("print('ok')", timeout=10.0, python=python)
    except SandboxError as err:
        return {"usable": False, "euid": os.geteuid(), "python": python, "error": str(err)}
    iso = result.isolation
    ns = {name: bool(info.get("applied")) for name, info in iso["namespaces"].items()}
    mounts = iso["mounts"]
    uid_drop = bool(iso["user"]["dropped"])
    notes = []
    if not iso["network"]["isolated"]:
        notes.append("NO network isolation: sandboxed code can reach the network (" + iso["network"]["why"] + ")")
    if not uid_drop:
        notes.append(
            "runs as the invoking uid: it can read that user's files and signal its processes unless the pid namespace holds"
        )
    if not ns.get("pid"):
        notes.append("no pid namespace: orphans are reaped through a subreaper, /proc shows the host")
    if not ns.get("mount"):
        notes.append("no mount namespace: /tmp is shared; files are swept afterwards by uid")
    return {
        "usable": result.status == "passed" and result.stdout.strip() == "ok",
        "euid": os.geteuid(),
        "python": python,
        "network_isolated": iso["network"]["isolated"],
        "network_why": iso["network"]["why"],
        "namespaces": ns,
        "uid_drop": uid_drop,
        "private_tmp": "private /tmp" in mounts,
        "read_only_root": mounts.get("read-only /") == "ok",
        "fresh_proc": mounts.get("fresh /proc") == "ok",
        "hidden": iso["hidden"],
        "rlimits": sorted(iso["rlimits"]),
        "kill_all_contained": uid_drop or ns.get("pid", False),
        "notes": notes,
    }
