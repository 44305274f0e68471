"""Progress on stderr: a rich bar on a terminal, a line per step otherwise, nothing with -q."""

from __future__ import annotations

import io
import json
import re
from pathlib import Path

import pytest
from rich.console import Console

from gisnet.cli import main
from gisnet.io import load_town
from gisnet.pipeline import run
from gisnet.progress import (
    CallbackReporter,
    LineReporter,
    Reporter,
    TerminalReporter,
    as_reporter,
    reporter,
)
from gisnet.townfile import default_layers_dir


def test_terminal_bar_shows_each_step_with_count_and_time() -> None:
    buf = io.StringIO()
    rep = TerminalReporter(Console(file=buf, force_terminal=True, width=120))
    rep.plan(2)
    with rep.step("obligations", "measuring connection obligations", count=1_000_000,
                  unit="parcels"):
        pass
    with pytest.raises(RuntimeError), rep.step("control", "control", count=3, unit="parcels"):
        raise RuntimeError("boom")
    rep.close()
    raw = buf.getvalue()
    assert "\x1b[" in raw  # a terminal: styled, redrawn
    out = re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", raw)
    assert "measuring connection obligations (1,000,000 parcels)" in out
    assert "✓ obligations" in out and "1,000,000 parcels" in out
    assert "✗ control" in out
    assert set(rep.timings_s) == {"obligations", "control"}


def test_lines_when_not_a_terminal_and_nothing_when_quiet() -> None:
    buf = io.StringIO()  # not a TTY
    rep = reporter(stream=buf)
    assert isinstance(rep, LineReporter)
    with rep.step("graph", "building the sewer graph", count=466, unit="mains"):
        pass
    with rep.step("publish", "publishing"):
        pass
    lines = buf.getvalue().splitlines()
    assert len(lines) == 2
    assert re.fullmatch(r"gisnet: graph \d+\.\d s \(466 mains; CPU \d+\.\d s\)", lines[0])
    assert re.fullmatch(r"gisnet: publish \d+\.\d s \(CPU \d+\.\d s\)", lines[1])
    quiet = reporter(quiet=True, stream=buf)
    with quiet.step("graph", "x"):
        pass
    assert buf.getvalue().count("\n") == 2
    assert type(quiet) is Reporter
    assert isinstance(reporter(stream=io.StringIO(), terminal=True), TerminalReporter)


def test_callable_progress_still_gets_each_message() -> None:
    seen: list[str] = []
    rep = as_reporter(seen.append)
    assert isinstance(rep, CallbackReporter)
    with rep.step("graph", "building the sewer graph"):
        pass
    assert seen == ["building the sewer graph"]
    with pytest.raises(TypeError):
        as_reporter(42)


def test_run_reports_every_step_in_order(tmp_path: Path) -> None:
    town = load_town(default_layers_dir())
    buf = io.StringIO()
    res = run(town, tmp_path / "out", maps=False, progress=LineReporter(buf))
    names = [line.split()[1] for line in buf.getvalue().splitlines()]
    assert names == ["obligations", "graph", "control", "capacity", "write", "publish"]
    assert f"({len(town.layers['parcels']):,} parcels; CPU " in buf.getvalue()
    assert set(res.timings_s) >= {"graph", "obligations", "control", "capacity", "write"}


def test_cli_json_unchanged_progress_on_stderr(tmp_path: Path, capsys) -> None:
    assert main(["run", "--sample", "--no-maps", "--json", "--out", str(tmp_path / "a")]) == 0
    cap = capsys.readouterr()
    summary = json.loads(cap.out)  # stdout is the JSON alone
    assert "timings_s" in summary
    steps = [line.split()[1] for line in cap.err.splitlines() if line.startswith("gisnet: ")
             and line.endswith((" s", ")")) and " s" in line and "WARNING" not in line]
    assert steps[:3] == ["load", "obligations", "graph"] and steps[-1] == "publish"
    assert main(["run", "--sample", "--no-maps", "--json", "-q",
                 "--out", str(tmp_path / "b")]) == 0
    cap = capsys.readouterr()
    assert "gisnet: graph" not in cap.err and "gisnet: load" not in cap.err
