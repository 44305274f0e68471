"""Every module of the package imports, and the examples in its docstrings run.

The ``[test]`` install has every extra, so the modules of optional features
(service, batch, swmm, notices, figures) import here too. One test per module
(``__main__`` excepted: importing it runs the command line).
"""

from __future__ import annotations

import doctest
import importlib
import pkgutil

import pytest

import gisnet

MODULES = sorted(
    m.name for m in pkgutil.walk_packages(gisnet.__path__, prefix="gisnet.")
    if not m.name.endswith(".__main__")
)
FLAGS = doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE


def examples(name: str) -> list[doctest.DocTest]:
    """The doctests of module ``name`` that hold at least one example."""
    module = importlib.import_module(name)
    tests = doctest.DocTestFinder(exclude_empty=True).find(module, name)
    return [t for t in tests if t.examples]


@pytest.mark.parametrize("name", MODULES)
def test_module_imports_and_its_examples_pass(name):
    report: list[str] = []
    runner = doctest.DocTestRunner(optionflags=FLAGS)
    for test in examples(name):
        runner.run(test, out=report.append)
    result = runner.summarize(verbose=False)
    assert result.failed == 0, "".join(report)


def test_the_package_has_examples():
    # the docstrings' examples are found at all (a finder that sees none passes silently)
    found = sum(len(examples(name)) for name in MODULES)
    assert found >= 16, f"{found} docstrings with examples"
