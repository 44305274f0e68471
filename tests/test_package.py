"""The wheel is self-contained: built from this tree and installed in a fresh
virtual environment, gisnet runs its sample town from an empty folder, with the
GeoPackage's layer and column descriptions, and copies the sample out.

The wheel is built from a copy of the package's files (so the tree gets no
``build/`` or ``*.egg-info``). The fresh environment reuses the installed
dependencies of the interpreter running the tests through a ``.pth`` file
naming their ``site-packages`` (``.pth`` files inside those folders, such as an
editable install of gisnet, are not processed there), and gets the wheel with
``pip --python VENV install --no-deps``; the commands run with neither
``PYTHONPATH`` nor a checkout in reach, so ``import gisnet`` can only find the
wheel's copy.
"""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import subprocess
import sys
import tomllib
import venv
from importlib import metadata
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

pytestmark = pytest.mark.slow


def _run(cmd: list[str], cwd: Path, env: dict[str, str] | None = None,
         timeout: float = 600) -> subprocess.CompletedProcess[str]:
    return subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=timeout, check=False)


def _ok(proc: subprocess.CompletedProcess[str]) -> str:
    assert proc.returncode == 0, (f"{' '.join(map(str, proc.args))} exited "
                                  f"{proc.returncode}\n{proc.stdout}\n{proc.stderr}")
    return proc.stdout


def _build_backend_installed() -> bool:
    """Whether this interpreter's setuptools satisfies ``[build-system] requires``
    (then the wheel is built without fetching anything)."""
    from packaging.requirements import Requirement

    requires = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    for text in requires["build-system"]["requires"]:
        req = Requirement(text)
        try:
            if metadata.version(req.name) not in req.specifier:
                return False
        except metadata.PackageNotFoundError:
            return False
    return True


def _dependency_paths() -> list[str]:
    """The running interpreter's site-packages folders, none holding a gisnet
    package (a checkout) itself."""
    out = []
    for entry in sys.path:
        p = Path(entry)
        if p.name in ("site-packages", "dist-packages") and p.is_dir() \
                and not (p / "gisnet" / "__init__.py").exists():
            out.append(str(p.resolve()))
    return list(dict.fromkeys(out))


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """A fresh venv with the wheel built from this tree; its bin, site-packages and
    the environment to run its commands with."""
    tmp = tmp_path_factory.mktemp("package")
    src = tmp / "src"
    src.mkdir()
    for name in ("pyproject.toml", "README.md", "LICENSE"):
        shutil.copy2(ROOT / name, src / name)
    shutil.copytree(ROOT / "gisnet", src / "gisnet",
                    ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    wheels = tmp / "wheels"
    build = [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-input", "-q",
             "-w", str(wheels), str(src)]
    if _build_backend_installed():
        build.insert(4, "--no-build-isolation")
    _ok(_run(build, cwd=tmp))
    (wheel,) = wheels.glob("gisnet-*.whl")

    env_dir = tmp / "venv"
    venv.EnvBuilder(with_pip=False, symlinks=os.name != "nt").create(env_dir)
    bindir = env_dir / ("Scripts" if os.name == "nt" else "bin")
    python = bindir / ("python.exe" if os.name == "nt" else "python")
    site = Path(_ok(_run([str(python), "-c", "import sysconfig; "
                          "print(sysconfig.get_paths()['purelib'])"], cwd=tmp)).strip())
    # the wheel first, into the bare venv (so pip sees no other gisnet), then the deps
    _ok(_run([sys.executable, "-m", "pip", "--python", str(python), "install", "--no-deps",
              "--no-input", "-q", str(wheel)], cwd=tmp))
    (site / "_gisnet_test_dependencies.pth").write_text(
        "\n".join(_dependency_paths()) + "\n", encoding="utf-8")
    env = {k: v for k, v in os.environ.items()
           if k not in ("PYTHONPATH", "PYTHONHOME", "PYTHONSTARTUP", "VIRTUAL_ENV")
           and not k.startswith("PYTEST")}
    env["PATH"] = os.pathsep.join([str(bindir), env.get("PATH", "")])
    return {"bin": bindir, "python": python, "site": site, "env": env, "tmp": tmp}


@pytest.fixture()
def empty(tmp_path: Path) -> Path:
    d = tmp_path / "empty"
    d.mkdir()
    return d


def _files(folder: Path) -> dict[str, int]:
    return {p.name: p.stat().st_size for p in sorted(folder.iterdir())}


def test_gisnet_imports_from_the_wheel(installed: dict, empty: Path) -> None:
    out = _ok(_run([str(installed["python"]), "-c",
                    "import gisnet, geopandas; print(gisnet.__file__)"],
                   cwd=empty, env=installed["env"]))
    where = Path(out.strip()).resolve()
    assert where.is_relative_to(installed["site"].resolve()), where
    pkg = installed["site"] / "gisnet"
    assert (pkg / "sample" / "gisnet.toml").is_file()
    assert (pkg / "data" / "results_schema.json").is_file()
    assert sorted(p.name for p in (pkg / "profiles").glob("*.toml")) == sorted(
        p.name for p in (ROOT / "gisnet" / "profiles").glob("*.toml"))
    for sub in ("profiles/letters", "static/leaflet", "static/protomaps-leaflet",
                "static/swagger-ui"):
        assert _files(pkg / sub) == _files(ROOT / "gisnet" / sub), sub
    assert _files(pkg / "sample") == _files(ROOT / "gisnet" / "sample")


def test_run_sample_from_an_empty_folder(installed: dict, empty: Path) -> None:
    sample = installed["site"] / "gisnet" / "sample"
    _ok(_run([str(installed["bin"] / "gisnet"), "run", "--sample", "--out", "out", "-q"],
             cwd=empty, env=installed["env"]))
    gpkg = empty / "out" / "gisnet-results.gpkg"
    assert gpkg.is_file()
    assert (empty / "out" / "obligations.html").is_file()  # pages made from package data
    # nothing written beside the installed sample
    assert _files(sample) == _files(ROOT / "gisnet" / "sample")
    schema = json.loads((sample.parent / "data" / "results_schema.json").read_text("utf-8"))
    con = sqlite3.connect(gpkg)
    try:
        rows = {c: (n, d) for c, n, d in con.execute(
            "SELECT column_name, name, description FROM gpkg_data_columns "
            "WHERE table_name = 'obligations'")}
        desc = con.execute("SELECT description FROM gpkg_contents "
                           "WHERE table_name = 'obligations'").fetchone()[0]
    finally:
        con.close()
    meaning = {c["name"]: c["meaning"] for c in schema["layers"]["obligations"]["columns"]}
    assert rows["distance_ft"] == ("Distance (ft)", meaning["distance_ft"])
    assert len(meaning["distance_ft"]) > 20
    assert rows["status"][0] == "Status" and rows["status"][1]
    assert desc == schema["layers"]["obligations"]["description"] and len(desc) > 20


def test_sample_copy_runs(installed: dict, empty: Path) -> None:
    gisnet = str(installed["bin"] / "gisnet")
    out = _ok(_run([gisnet, "sample", "town"], cwd=empty, env=installed["env"]))
    assert out.splitlines()[-1] == "next: cd town && gisnet run"
    assert _files(empty / "town") == _files(installed["site"] / "gisnet" / "sample")
    _ok(_run([gisnet, "run", "--layers", "town", "--out", "maps", "--no-maps", "-q"],
             cwd=empty, env=installed["env"]))
    assert (empty / "maps" / "gisnet-results.gpkg").is_file()
    again = _run([gisnet, "sample", "town"], cwd=empty, env=installed["env"])
    assert again.returncode == 2 and "already holds gisnet.toml" in again.stderr
    assert "Traceback" not in again.stderr
