"""Keep freed memory for reuse in commands that crunch large tables (glibc's malloc only).

glibc serves an allocation above its mmap threshold (32 MiB at most) with a fresh ``mmap`` and
gives it back with ``munmap`` when freed. A metric on a 10M-row table makes hundreds of such
arrays (80 MB per 10M float64 values), so every temporary is mapped and zeroed again, page by
page or in 2 MiB huge pages the kernel may first have to compact: in `nepotism metrics` on 10M
pairwise rows that was 25 of 70 CPU seconds, spent in the kernel. `reuse_freed_memory` asks
malloc to serve every size from its heap (``M_MMAP_MAX`` = 0) and to keep what is freed
(``M_TRIM_THRESHOLD``: up to 2 GiB free at the top of the heap), so that the next temporary
reuses pages already mapped. The cost: memory freed late in a command is not handed back to the
system before the command ends (the peak is measured in docs/scale.md).

What this leaves out: other C libraries (musl, macOS) are left as they are, and the library's
entry points (`nepotism.audit`, ...) never change process-wide settings — only the commands of
`nepotism.cli` that read large tables call this, at their start.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import platform

__all__ = ["reuse_freed_memory"]

_M_TRIM_THRESHOLD = -1  # glibc's mallopt parameter numbers (malloc.h)
_M_MMAP_MAX = -4
_KEEP = 2**31 - 1  # bytes free at the top of the heap before malloc hands them back (mallopt takes an int)


def reuse_freed_memory() -> bool:
    """Set glibc's malloc to keep and reuse freed memory; True when it was set (glibc), else False."""
    if platform.system() != "Linux" or platform.libc_ver()[0] != "glibc":
        return False
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        mallopt = libc.mallopt
    except (OSError, AttributeError):
        return False
    mallopt.argtypes, mallopt.restype = [ctypes.c_int, ctypes.c_int], ctypes.c_int
    return bool(mallopt(_M_MMAP_MAX, 0)) and bool(mallopt(_M_TRIM_THRESHOLD, _KEEP))
