"""A test hook: the process kills itself at a named point of writing its outputs.

The kill-during-write tests (``tests/hostile.py``) set :data:`KILL_HOOK` to show
that a run killed at any point leaves the previous outputs whole. Nothing else
sets it; it is not part of gisnet's interface.
"""

from __future__ import annotations

import os
import signal

#: Environment variable naming a point at which the process kills itself with
#: SIGKILL (``staging``, ``gpkg``, ``tables``, ``maps``, ``commit``,
#: ``publish``): the kill-during-write tests set it; nothing else does.
KILL_HOOK = "GISNET_TEST_KILL_AT"


def kill_point(name: str) -> None:
    """Kill this process with SIGKILL if :data:`KILL_HOOK` names ``name`` (tests only)."""
    if os.environ.get(KILL_HOOK) == name:
        os.kill(os.getpid(), signal.SIGKILL)
