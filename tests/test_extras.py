"""A command whose extra is missing says which extra to install (one line, exit 2).

Each test hides the extra's modules (``sys.modules[name] = None`` makes ``import
name`` fail as if the package were not installed) and calls the command line's
``main``: the message names the extra and the ``pip install`` that brings it, and
no traceback reaches the user.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from gisnet.cli import main
from gisnet.errors import ConfigError
from gisnet.extras import EXTRAS, needs_extra, require


def hide(monkeypatch: pytest.MonkeyPatch, *modules: str) -> None:
    """Make ``import m`` fail for each module, as if its package were missing."""
    for m in modules:
        monkeypatch.setitem(sys.modules, m, None)


def install_line(extra: str) -> str:
    return f"needs the '{extra}' extra: pip install 'gisnet[{extra}]'"


def one_error_line(capsys: pytest.CaptureFixture[str], subject: str, extra: str) -> str:
    err = capsys.readouterr().err
    lines = [ln for ln in err.splitlines() if ln.startswith("gisnet: error:")]
    assert len(lines) == 1, err
    assert f"gisnet: error: {subject} {install_line(extra)}" in lines[0], err
    assert "Traceback" not in err
    return lines[0]


def test_the_extras_match_pyproject():
    import tomllib

    project = tomllib.loads((Path(__file__).resolve().parents[1] / "pyproject.toml")
                            .read_text(encoding="utf-8"))["project"]
    groups = project["optional-dependencies"]
    assert set(EXTRAS) <= set(groups)
    assert groups["all"] == [f"gisnet[{','.join(EXTRAS)}]"]
    core = " ".join(project["dependencies"]).lower()
    for extra, modules in EXTRAS.items():
        listed = " ".join(groups[extra]).lower()
        for m in modules:
            assert m in listed, (extra, m)
            assert m not in core, f"{m} is in the core and in the {extra!r} extra"


def test_serve_without_service(monkeypatch, capsys):
    hide(monkeypatch, "fastapi")
    assert main(["serve", "--sample"]) == 2
    one_error_line(capsys, "gisnet serve", "service")


def test_serve_maps_without_uvicorn(monkeypatch, capsys, tmp_path):
    hide(monkeypatch, "uvicorn")
    assert main(["serve", "--maps", str(tmp_path)]) == 2
    line = one_error_line(capsys, "gisnet serve", "service")
    assert "uvicorn" in line


def test_batch_without_dask(monkeypatch, capsys, tmp_path):
    hide(monkeypatch, "distributed")
    assert main(["batch", str(tmp_path / "region"), "--out", str(tmp_path / "out")]) == 2
    one_error_line(capsys, "gisnet batch", "dask")


def test_import_swmm_without_swmm(monkeypatch, capsys, tmp_path):
    hide(monkeypatch, "swmmio")
    model = tmp_path / "model.inp"
    model.write_text("[TITLE]\n", encoding="utf-8")
    assert main(["import-swmm", str(model), str(tmp_path / "town"),
                 "--profile", "berlin-nh", "--crs", "EPSG:2260"]) == 2
    one_error_line(capsys, "gisnet import-swmm", "swmm")


def test_check_swmm_without_swmm(monkeypatch, capsys, tmp_path):
    hide(monkeypatch, "pyswmm")
    assert main(["check-swmm", "--sample", "--out", str(tmp_path)]) == 2
    one_error_line(capsys, "gisnet check-swmm", "swmm")
    assert not any(tmp_path.iterdir()), "stopped before any work"


@pytest.mark.parametrize("module", ["reportlab", "pypdf", "matplotlib"])
def test_notices_without_pdf(monkeypatch, capsys, tmp_path, module):
    hide(monkeypatch, module)
    assert main(["notices", "--sample", "--out", str(tmp_path)]) == 2
    assert module in one_error_line(capsys, "gisnet notices", "pdf")


def test_figure_without_pdf(monkeypatch, capsys, tmp_path):
    hide(monkeypatch, "matplotlib")
    assert main(["figure", "obligations", "--sample", "--out", str(tmp_path / "f.pdf")]) == 2
    one_error_line(capsys, "gisnet figure", "pdf")
    assert not (tmp_path / "f.pdf").exists()


def test_postgis_source_without_postgis(monkeypatch, capsys, tmp_path):
    hide(monkeypatch, "psycopg")
    (tmp_path / "gisnet.toml").write_text(
        'profile = "berlin-nh"\n'
        '[layers.mains]\npath = "postgresql://gis@127.0.0.1:9/town"\nlayer = "public.mains"\n',
        encoding="utf-8")
    assert main(["graph", "--layers", str(tmp_path), "--out", str(tmp_path / "out")]) == 2
    one_error_line(capsys, "reading or writing PostGIS", "postgis")


def test_postgis_output_without_postgis(monkeypatch, capsys):
    hide(monkeypatch, "psycopg")
    assert main(["run", "--sample", "-q", "--out",
                 "postgresql://gis@127.0.0.1:9/town?schema=gisnet"]) == 2
    one_error_line(capsys, "reading or writing PostGIS", "postgis")


def test_the_library_names_the_extra_too(monkeypatch, tmp_path):
    from gisnet.swmm import read_model, run_swmm

    hide(monkeypatch, "swmmio", "pyswmm")
    model = Path(__file__).resolve().parent / "data" / "swmm" / "Example1.inp"
    with pytest.raises(ConfigError, match=r"reading a SWMM model .* needs the 'swmm' extra"):
        read_model(model)
    with pytest.raises(ConfigError, match=r"running SWMM \(gisnet check-swmm\) needs"):
        run_swmm(tmp_path / "model.inp", {})


def test_the_service_package_names_its_extra():
    code = ("import sys; sys.modules['fastapi'] = None\n"
            "from gisnet.errors import ConfigError\n"
            "try:\n    import gisnet.service\n"
            "except ConfigError as exc:\n    print(exc)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=120, check=True).stdout
    assert install_line("service") in out


def test_a_gisnet_module_that_fails_is_not_blamed_on_an_extra():
    with pytest.raises(ImportError, match=r"gisnet\.no_such_module"), \
            needs_extra("pdf", "gisnet figure"):
        import gisnet.no_such_module  # type: ignore[import-not-found]  # noqa: F401


def test_unknown_extra():
    with pytest.raises(ConfigError, match="unknown extra 'nope'"):
        require("nope", "something")
