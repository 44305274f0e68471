"""The project's own files agree: the README's commands, CI and the pinned versions."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TEST_COMMAND = ("python3 -m venv .venv && .venv/bin/pip install -q -c constraints.txt "
                "-e '.[test]' && .venv/bin/pytest -q -p no:cacheprovider")
RUN_COMMAND = ("python3 -m venv .venv && .venv/bin/pip install -q -e . && "
               ".venv/bin/gisnet run --sample")


def _name(requirement: str) -> str:
    """The normalised project name of a requirement (PEP 503)."""
    name = re.match(r"[A-Za-z0-9][A-Za-z0-9._-]*", requirement.strip())
    assert name, requirement
    return re.sub(r"[-_.]+", "-", name.group(0)).lower()


def _extra_requirements(project: dict, extra: str) -> list[str]:
    """The requirements ``gisnet[extra]`` installs beyond the core, its own extras followed."""
    groups = project["optional-dependencies"]
    out: list[str] = []
    todo, seen = [extra], set()
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        for r in groups[name]:
            if r.startswith("gisnet["):
                todo += r[len("gisnet["):].rstrip("]").split(",")
            else:
                out.append(r)
    return out


def test_ci_runs_the_readmes_test_command_verbatim():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert TEST_COMMAND in readme
    assert RUN_COMMAND in readme  # the run command installs the core only
    assert TEST_COMMAND in ci
    assert "set -euo pipefail" in ci
    checks = [ln.strip() for ln in ci.splitlines()
              if ln.strip() and not ln.lstrip().startswith("#")]
    tests_at = next(i for i, ln in enumerate(checks) if TEST_COMMAND in ln)
    # after the tests: lint, types, and the service against its OpenAPI document
    assert checks[tests_at + 1:] == [
        ".venv/bin/ruff check .", ".venv/bin/mypy",
        'PYTHON="$PWD/.venv/bin/python" SCHEMATHESIS="$PWD/.venv/bin/schemathesis" '
        "sh scripts/schemathesis.sh 30"]


def test_constraints_pin_every_requirement():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    pins = {}
    for line in (ROOT / "constraints.txt").read_text(encoding="utf-8").splitlines():
        line = line.split("#", 1)[0].strip()
        if line:
            name, sep, version = line.partition("==")
            assert sep and version, f"constraints.txt: {line!r} is not an exact pin"
            pins[_name(name)] = version
    wanted = list(project["dependencies"]) + _extra_requirements(project, "test")
    missing = sorted({_name(r) for r in wanted} - set(pins))
    assert not missing, f"not in constraints.txt (refresh it, CONTRIBUTING.md): {missing}"


def test_every_requirement_has_a_lower_bound():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    reqs = list(project["dependencies"])
    for group in project["optional-dependencies"].values():
        reqs += [r for r in group if not r.startswith("gisnet[")]
    assert all(">=" in r for r in reqs), [r for r in reqs if ">=" not in r]
