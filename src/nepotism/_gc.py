"""Keeping Python's cyclic garbage collector out of the way of planning and sending calls.

`pause` / `resume` bracket the synchronous loops (building a plan, rendering and keying a
window of judge calls, replaying cached calls) that make many long-lived objects and no cycles:
each collection meanwhile would rescan everything built so far. `freeze` / `thaw` bracket the
sending of live calls: what exists then (the plan, the tasks) is moved out of the collector's
reach (`gc.freeze`) and the young generation is collected less often, so collections look at
what the calls in flight allocate, not at the whole plan again and again.

`resume` moves the objects made while paused straight to the oldest generation (`gc.freeze`
then `gc.unfreeze`: no scan) unless frozen objects exist, which that would thaw. Whether any do
is known without asking the collector while this module's own `freeze` is in force:
``gc.get_freeze_count()`` walks the whole frozen list (≈ 9 ms a million objects), and a run
resumed the collector several times per window of judge calls with its plan frozen (≈ 3 ms a
time, ≈ 12 µs per call on the event loop).
"""

from __future__ import annotations

import gc

__all__ = ["LIVE_GEN0", "freeze", "pause", "resume", "thaw"]

#: young-generation threshold while calls are in flight (Python's default is 700). The calls in
#: flight hold tens of thousands of young containers (parsed answers, the HTTP client's
#: per-request objects), so a threshold below that collects every few hundred calls and each
#: young collection scans all of them; above it, the scans are rare and no larger.
LIVE_GEN0 = 100_000

#: `freeze` calls in force (not yet thawed): while above 0 the frozen list is known non-empty
_frozen_here = 0


def pause() -> bool:
    """Turn the collector off; return whether it was on (for `resume`)."""
    was = gc.isenabled()
    gc.disable()
    return was


def resume(was: bool) -> None:
    """Turn the collector back on if `pause` found it on; the objects made meanwhile go to the
    oldest generation unscanned when nothing is frozen (see the module docstring)."""
    if was:
        if not _frozen_here and gc.get_freeze_count() == 0:
            gc.freeze()
            gc.unfreeze()
        gc.enable()


def freeze() -> tuple[int, int, int] | None:
    """While calls are sent: freeze every object made so far and raise the young generation's
    threshold to `LIVE_GEN0`. Returns what `thaw` restores; None (a no-op) when someone else has
    frozen objects or the collector is off."""
    global _frozen_here
    if not gc.isenabled() or _frozen_here or gc.get_freeze_count():
        return None
    thresholds = gc.get_threshold()
    gc.freeze()
    _frozen_here += 1
    gc.set_threshold(max(thresholds[0], LIVE_GEN0), *thresholds[1:])
    return thresholds


def thaw(thresholds: tuple[int, int, int] | None) -> None:
    """Undo `freeze`: the frozen objects go back to the oldest generation, as usual."""
    global _frozen_here
    if thresholds is not None:
        gc.set_threshold(*thresholds)
        gc.unfreeze()
        _frozen_here -= 1
