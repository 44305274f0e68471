"""The package's shape: no import cycles, no reading of another module's private
names, no module over the size limit, one home for each shared rule.

The import graph is read from the source with :mod:`ast`, imports inside
functions included (they hide cycles from the interpreter, not from a reader).
"""

from __future__ import annotations

import ast
from pathlib import Path

import networkx as nx
import pytest

PKG = Path(__file__).resolve().parents[1] / "gisnet"

#: Largest module, in lines, before it must be split.
MAX_LINES = 800


def _modules() -> dict[str, Path]:
    out = {}
    for path in sorted(PKG.rglob("*.py")):
        rel = path.relative_to(PKG.parent).with_suffix("")
        parts = list(rel.parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out[".".join(parts)] = path
    return out


MODULES = _modules()


def _is_package(name: str) -> bool:
    return MODULES[name].name == "__init__.py"


def _resolve(module: str, node: ast.ImportFrom) -> str:
    if node.level == 0:
        return node.module or ""
    base = module.split(".")
    if not _is_package(module):
        base = base[:-1]
    base = base[: len(base) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


def _owner(target: str) -> str | None:
    """The gisnet module a dotted name lives in (longest known prefix)."""
    parts = target.split(".")
    for k in range(len(parts), 0, -1):
        name = ".".join(parts[:k])
        if name in MODULES:
            return name
    return None


def _imports(module: str) -> list[tuple[str, str | None, int]]:
    """(imported module, imported name or None, line) for every import in a module."""
    tree = ast.parse(MODULES[module].read_text(encoding="utf-8"))
    out: list[tuple[str, str | None, int]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                if a.name.startswith("gisnet"):
                    out.append((a.name, None, node.lineno))
        elif isinstance(node, ast.ImportFrom):
            target = _resolve(module, node)
            if not target.startswith("gisnet"):
                continue
            for a in node.names:
                sub = f"{target}.{a.name}"
                if sub in MODULES:
                    out.append((sub, None, node.lineno))
                else:
                    out.append((target, a.name, node.lineno))
    return out


def _graph() -> nx.DiGraph:
    G = nx.DiGraph()
    G.add_nodes_from(MODULES)
    for m in MODULES:
        for target, _name, line in _imports(m):
            owner = _owner(target)
            if owner is None or owner == m:
                continue
            # a package's __init__ re-exporting its own submodules is not a cycle
            if owner.startswith(m + ".") and _is_package(m):
                continue
            if m.startswith(owner + ".") and _is_package(owner):
                # a submodule importing from its own package's __init__: count it
                # (it is how cycles through re-exports arise)
                pass
            G.add_edge(m, owner, line=line)
    return G


def test_no_import_cycles():
    G = _graph()
    cycles = list(nx.simple_cycles(G))
    shown = ["  " + " -> ".join([*c, c[0]]) for c in sorted(cycles, key=len)[:10]]
    assert not cycles, "import cycles (function-level imports included):\n" + "\n".join(shown)


def test_no_module_reads_another_modules_private_names():
    bad = []
    for m in MODULES:
        pkg = m.rsplit(".", 1)[0] if not _is_package(m) else m
        for target, name, line in _imports(m):
            owner = _owner(target)
            if owner is None or name is None or not name.startswith("_") or name.startswith("__"):
                continue
            # private names are shared freely inside one package (e.g. gisnet.maps.*)
            same_package = pkg != "gisnet" and (owner == pkg or owner.startswith(pkg + "."))
            if owner == m or same_package:
                continue
            bad.append(f"{MODULES[m].relative_to(PKG.parent)}:{line} imports {owner}.{name}")
    assert not bad, "\n".join(bad)


def test_no_attribute_access_to_another_modules_private_names():
    """``tracing._index(...)``-style reads through a module alias."""
    bad = []
    for m, path in MODULES.items():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        aliases = {}
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom):
                target = _resolve(m, node)
                for a in node.names:
                    sub = f"{target}.{a.name}"
                    if sub in MODULES and sub != m:
                        aliases[a.asname or a.name] = sub
            elif isinstance(node, ast.Import):
                for a in node.names:
                    if a.name in MODULES and a.asname:
                        aliases[a.asname] = a.name
        for node in ast.walk(tree):
            if (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name)
                    and node.value.id in aliases and node.attr.startswith("_")
                    and not node.attr.startswith("__")):
                bad.append(f"{path.relative_to(PKG.parent)}:{node.lineno} reads "
                           f"{aliases[node.value.id]}.{node.attr}")
    assert not bad, "\n".join(bad)


@pytest.mark.parametrize("module", sorted(MODULES))
def test_module_size(module):
    n = len(MODULES[module].read_text(encoding="utf-8").splitlines())
    assert n <= MAX_LINES, f"{MODULES[module].relative_to(PKG.parent)} has {n} lines"


def test_data_flows_one_way():
    """Analyses never import the CLI, the service, the maps or the pipeline."""
    G = _graph()
    top = {"gisnet.cli", "gisnet.service", "gisnet.batch", "gisnet.pipeline", "gisnet.maps",
           "gisnet.__main__"}

    def layer(name: str) -> str:
        for t in top:
            if name == t or name.startswith(t + "."):
                return t
        return name

    order = ["gisnet.maps", "gisnet.pipeline", "gisnet.swmm", "gisnet.batch", "gisnet.service",
             "gisnet.cli",
             "gisnet.__main__"]

    def rank(name: str) -> int:
        return order.index(layer(name)) if layer(name) in order else -1

    # analyses < maps < pipeline < service < cli < __main__; maps may be written by the
    # pipeline, the pipeline is called by the service and the CLI, never the reverse
    bad = [f"{u} -> {v}" for u, v in G.edges
           if layer(u) != layer(v) and rank(v) > rank(u) and not u.startswith("gisnet.testing")]
    assert not bad, "lower layers import upper ones:\n" + "\n".join(sorted(bad))


def test_shared_rules_are_defined_once():
    """The rules gisnet/rules.py owns are not defined again anywhere else."""
    owned = {"exceeds", "within", "is_public", "is_active", "is_gravity", "effective_kind",
             "carries_sanitary_flow", "is_eligible_for_connection",
             "LIMIT_RTOL", "DISTANCE_TOLERANCE_FT", "DEFAULT_SNAP_TOLERANCE_FT",
             "SANITARY_KINDS", "FLOW_KINDS", "utilization_class"}
    bad = []
    for m, path in MODULES.items():
        if m == "gisnet.rules":
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in tree.body:
            names = []
            if isinstance(node, ast.FunctionDef | ast.ClassDef):
                names = [node.name]
            elif isinstance(node, ast.Assign):
                names = [t.id for t in node.targets if isinstance(t, ast.Name)]
            elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
                names = [node.target.id]
            for n in names:
                if n in owned:
                    bad.append(f"{path.relative_to(PKG.parent)}:{node.lineno} defines {n}")
    assert not bad, "\n".join(bad)


ARCHITECTURE = PKG.parent / "docs" / "architecture.md"


def _module_rows() -> list[tuple[str, str]]:
    """(first cell, whole row) of each row of the table under ``## Modules``."""
    text = ARCHITECTURE.read_text(encoding="utf-8")
    table = text.split("## Modules\n", 1)[1].split("\n## ", 1)[0]
    rows = []
    for line in table.splitlines():
        if line.startswith("| `"):
            first = line.split("|")[1]
            rows.append((first, line))
    return rows


def test_every_module_is_in_the_architecture_table():
    """docs/architecture.md names every module of the package: a top-level module in
    a row of its own, a module of a package in its package's row (``io/`` ...
    ``reading.py``), a command module by the ``cli/<command>.py`` row."""
    rows = _module_rows()
    firsts = " ".join(first for first, _ in rows)
    missing = []
    for path in sorted(PKG.rglob("*.py")):
        rel = path.relative_to(PKG)
        if len(rel.parts) == 1:
            if f"`{rel.name}`" not in firsts:
                missing.append(str(rel))
            continue
        top = f"`{rel.parts[0]}/`"
        row = next((line for first, line in rows if top in first), None)
        if row is None:
            missing.append(str(rel))
            continue
        if rel.name == "__init__.py":
            continue
        if rel.parts[0] == "cli" and "cli/<command>.py" in row:
            continue
        inner = "/".join(rel.parts[1:])
        if f"`{rel.name}`" not in row and f"`{inner}`" not in row:
            missing.append(str(rel))
    assert not missing, f"modules missing from docs/architecture.md's table: {missing}"
