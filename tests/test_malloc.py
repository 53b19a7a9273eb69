"""`nepotism._malloc.reuse_freed_memory`: a freed large array's pages serve the next one."""

import platform
import subprocess
import sys

import pytest

CHILD = """
import resource, sys
import numpy as np
from nepotism._malloc import reuse_freed_memory
tuned = reuse_freed_memory() if sys.argv[1] == "tuned" else None
for _ in range(2):  # the first round maps the pages; the second shows whether they were kept
    before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    a = np.ones(20_000_000)  # 160 MB, far above glibc's largest mmap threshold
    faults = resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before
    del a
print(tuned, faults)
"""

glibc = pytest.mark.skipif(platform.system() != "Linux" or platform.libc_ver()[0] != "glibc", reason="mallopt is glibc's")


def _second_round_faults(mode: str) -> tuple[str, int]:
    done = subprocess.run([sys.executable, "-c", CHILD, mode], capture_output=True, text=True, check=True)
    tuned, faults = done.stdout.split()
    return tuned, int(faults)


@glibc
def test_a_freed_large_array_is_reused_instead_of_faulted_in_again():
    tuned, faults = _second_round_faults("tuned")
    assert tuned == "True"
    _, plain = _second_round_faults("plain")
    # without it the array is mapped afresh: at least one fault per 2 MiB (transparent huge pages,
    # which numpy asks for) and up to one per 4 KiB page; with it, the pages already mapped serve it
    assert plain >= 20_000_000 * 8 // 2**21
    assert faults * 10 <= plain
