"""What a run keeps out of the cyclic garbage collector (:func:`gisnet.memory.long_lived`)
and when it collects (:func:`gisnet.memory.release`, ``collect``)."""

from __future__ import annotations

import gc
import weakref

import pytest

from gisnet.memory import FULL_COLLECTION_AFTER, long_lived, release


class _Node:
    def __init__(self) -> None:
        self.other: _Node | None = None


def _cycle_held() -> _Node:
    a, b = _Node(), _Node()
    a.other, b.other = b, a
    return a


def test_objects_alive_on_entry_are_frozen_and_handed_back_on_exit():
    before = gc.get_threshold()
    kept = [_Node() for _ in range(1000)]
    with long_lived():
        assert gc.get_freeze_count() >= len(kept)
        assert gc.get_threshold() == (before[0], before[1], FULL_COLLECTION_AFTER)
    assert gc.get_freeze_count() == 0 and gc.get_threshold() == before
    with pytest.raises(RuntimeError), long_lived():
        raise RuntimeError("a run that fails")
    assert gc.get_freeze_count() == 0 and gc.get_threshold() == before


def test_what_a_run_makes_in_a_cycle_is_freed_by_release_with_collect():
    with long_lived():
        held = [_cycle_held()]
        gc.collect(1)  # the young generations: the cycle survives them into the oldest
        gone = weakref.ref(held[0])
        held.clear()  # now kept alive only by its cycle
        for _ in range(3):
            gc.collect(1)
        release()
        assert gone() is not None  # young collections and release() leave it
        release(collect=True)
        assert gone() is None


def test_a_frozen_object_without_a_cycle_goes_with_its_last_reference():
    held = [_Node()]
    ref = weakref.ref(held[0])
    with long_lived():
        held.clear()
        assert ref() is None


def test_a_runs_graph_is_freed_when_let_go(sample_dir):
    from gisnet.io import load_town
    from gisnet.pipeline import analyse

    sample_town = load_town(sample_dir)
    with long_lived():
        res = analyse(sample_town)
        graph = weakref.ref(res.graph)
        res.release_follow_ups()
        assert graph() is None
