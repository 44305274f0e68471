"""gisnet's own threads: as many as the cores, fewer where processes share them."""

from __future__ import annotations

import pytest

from gisnet.threads import (
    MAX_THREADS,
    THREADS_ENV,
    available_cores,
    default_threads,
    in_background,
    thread_limit,
)


def test_default_is_the_cores_at_most_the_cap(monkeypatch) -> None:
    monkeypatch.delenv(THREADS_ENV, raising=False)
    assert default_threads() == min(MAX_THREADS, available_cores())


def test_a_limit_holds_within_its_block_only(monkeypatch) -> None:
    monkeypatch.delenv(THREADS_ENV, raising=False)
    before = default_threads()
    with thread_limit(1):
        assert default_threads() == 1
        with thread_limit(3):
            assert default_threads() == 3
        assert default_threads() == 1
    assert default_threads() == before
    with thread_limit(None):
        assert default_threads() == before
    with thread_limit(100):
        assert default_threads() == MAX_THREADS


def test_environment_variable_caps_the_threads(monkeypatch) -> None:
    monkeypatch.setenv(THREADS_ENV, "1")
    assert default_threads() == 1
    with thread_limit(2):  # an explicit limit wins
        assert default_threads() == 2
    for bad in ("0", "-2", "two", ""):  # not a positive integer: ignored
        monkeypatch.setenv(THREADS_ENV, bad)
        assert default_threads() == min(MAX_THREADS, available_cores())


def test_a_limit_below_one_is_an_error() -> None:
    with pytest.raises(ValueError, match="at least 1"), thread_limit(0):
        pass


def test_work_in_background_keeps_the_limit_and_raises_where_it_is_awaited(
        monkeypatch) -> None:
    import threading

    monkeypatch.delenv(THREADS_ENV, raising=False)
    seen: dict[str, object] = {}

    def work() -> int:
        seen["thread"] = threading.current_thread().name
        seen["threads"] = default_threads()
        return 7

    with thread_limit(2):
        later = in_background(work)
    assert later() == 7
    assert seen == {"thread": "gisnet-background", "threads": 2}
    # with one thread to use, the work waits to be asked for, on the caller's thread
    seen.clear()
    with thread_limit(1):
        later = in_background(work)
        assert seen == {}
        assert later() == 7 and later() == 7
    assert seen == {"thread": threading.current_thread().name, "threads": 1}
    # a job kept to one core: its own thread, and one thread for its parallel steps
    seen.clear()
    with thread_limit(2):
        later = in_background(work, threads=1)
        assert default_threads() == 2
    assert later() == 7
    assert seen == {"thread": "gisnet-background", "threads": 1}

    def fails() -> None:
        raise ValueError("no mains")

    failing = in_background(fails)
    with pytest.raises(ValueError, match="no mains"):
        failing()
