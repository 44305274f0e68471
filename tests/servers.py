"""Start ``gisnet serve`` in a subprocess for a test, on a free loopback port."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextmanager
def gisnet_serve(args: list[str], *, timeout_s: float = 300,
                 stdout=subprocess.DEVNULL) -> Iterator[tuple[str, subprocess.Popen]]:
    """Run ``gisnet serve ARGS --host 127.0.0.1 --port P -q`` until the block ends.

    Yields the base URL and the process once ``/health`` answers 200; fails the test
    with the server's stderr if it exits first or does not answer in ``timeout_s``.
    """
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "gisnet", "serve", *args, "--host", "127.0.0.1",
         "--port", str(port), "-q"],
        stdout=stdout, stderr=subprocess.PIPE, text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT), "PYTHONWARNINGS": "ignore"})
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + timeout_s
        while True:
            if proc.poll() is not None:
                pytest.fail(f"gisnet serve exited {proc.returncode}: {proc.stderr.read()}")
            try:
                with urllib.request.urlopen(base + "/health", timeout=2) as r:
                    if r.status == 200:
                        break
            except OSError:
                pass
            if time.monotonic() > deadline:
                pytest.fail(f"gisnet serve did not answer /health within {timeout_s:.0f} s")
            time.sleep(0.3)
        yield base, proc
    finally:
        proc.terminate()
        try:
            proc.wait(15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(15)
        for stream in (proc.stdout, proc.stderr):
            if stream:
                stream.close()
