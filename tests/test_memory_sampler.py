"""The benchmark's cheap sampler of a process tree's proportional set size
(:class:`gisnet.testing.memory.TreePss`) against ``smaps_rollup`` read every time."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest

from gisnet.testing.memory import TreePss, tree_pss_kb

pytestmark = pytest.mark.skipif(not Path("/proc/self/smaps_rollup").exists(),
                                reason="needs Linux /proc/<pid>/smaps_rollup")

# a parent that grows its memory in steps, starts a child that maps a file and
# grows too, then lets the child end
SCRIPT = r"""
import mmap, subprocess, sys, tempfile, time
held = []
child = subprocess.Popen([sys.executable, "-c", '''
import mmap, sys, tempfile, time
f = tempfile.TemporaryFile(); f.truncate(64 << 20)
m = mmap.mmap(f.fileno(), 64 << 20)
held = []
for i in range(4):
    m[i << 24:(i + 1) << 24] = bytes([1]) * (1 << 24)  # 16 MB more of the file resident
    held.append(bytearray(b"x" * (16 << 20)))
    time.sleep(0.1)
time.sleep(0.3)
'''])
for i in range(6):
    held.append(bytearray(b"y" * (24 << 20)))
    time.sleep(0.1)
child.wait()
for i in range(3):
    held.append(bytearray(b"z" * (24 << 20)))
    time.sleep(0.1)
time.sleep(0.3)
"""


def test_tree_pss_estimate_is_never_below_smaps_rollup_and_close_to_it():
    proc = subprocess.Popen([sys.executable, "-c", SCRIPT])
    sampler = TreePss(proc.pid, exact_every_s=10.0)  # the estimate alone after the first
    pairs = []
    try:
        while proc.poll() is None:
            est = sampler.sample(time.monotonic())
            exact = tree_pss_kb(proc.pid)
            if proc.poll() is None and est and exact:
                pairs.append((est, exact))
            time.sleep(0.02)
    finally:
        proc.kill()
        proc.wait()
    assert len(pairs) > 20
    # ran long enough to see the memory grow by 200 MB and more
    assert max(e for _, e in pairs) - min(e for _, e in pairs) > 150 * 1024
    # reads racing the processes' own growth differ by a step (24 MB) at most
    slack = 30 * 1024
    assert all(est >= exact - slack for est, exact in pairs)
    # over: the file the child maps is counted whole, the child's share of the
    # libraries after it ends is the parent's
    assert all(est <= exact + 120 * 1024 for est, exact in pairs)
    assert sampler.busy_s > 0
