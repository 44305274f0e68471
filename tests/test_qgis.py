"""QGIS as a client of gisnet's outputs, checked with QGIS's own Python bindings.

gisnet cannot import QGIS (the bindings belong to the system Python:
Debian's ``python3-qgis``), so each check runs a small script with
``/usr/bin/python3`` in a subprocess (``QT_QPA_PLATFORM=offscreen``) and reads its
JSON answer:

- the results GeoPackage's layers show field aliases (labels with units) in
  QGIS 3.22, whose GDAL does not read ``gpkg_data_columns``: the aliases come
  from the default style in ``layer_styles``;
- the written project ``gisnet.qgz`` opens with every layer valid, grouped,
  ordered, styled, read-only, point layers scale-dependent, and still opens
  after the folder is moved (relative paths); a ``register`` table is editable;
- the OGC API collection's style link gives a QML QGIS loads;
- PostGIS output has ``layer_styles`` rows, and QGIS's PostgreSQL provider
  applies them to a result table.

Without QGIS the tests skip with the reason; under CI (``CI=true``) they fail.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import warnings
from pathlib import Path

import pandas as pd
import pytest

from gisnet.output.metadata import column_aliases

SYSTEM_PYTHON = Path("/usr/bin/python3")
ROOT = Path(__file__).resolve().parents[1]
SAMPLE = ROOT / "layers" / "sample"

pytestmark = pytest.mark.slow

_PRELUDE = """
import json, sys
from qgis.core import QgsApplication
app = QgsApplication([], False)
app.initQgis()
out = {}
"""
_END = """
print("GISNET-JSON " + json.dumps(out), flush=True)
import os
os._exit(0)  # QGIS 3.22 can crash in exitQgis() with layers still alive
"""


def _qgis_available() -> str | None:
    """None when the system Python imports qgis.core, else the reason it cannot."""
    if not SYSTEM_PYTHON.exists():
        return f"{SYSTEM_PYTHON} is absent"
    r = subprocess.run([str(SYSTEM_PYTHON), "-c", "import qgis.core"], capture_output=True,
                       text=True, env=_env(), timeout=120)
    return None if r.returncode == 0 else (
        f"{SYSTEM_PYTHON} cannot import qgis (apt-get install python3-qgis): "
        f"{r.stderr.strip().splitlines()[-1] if r.stderr.strip() else r.returncode}")


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME",
                                                            "VIRTUAL_ENV")}
    env["QT_QPA_PLATFORM"] = "offscreen"
    return env


@pytest.fixture(scope="module")
def qgis() -> object:
    """``qgis(script, *args)``: run ``script`` (``out`` filled, ``sys.argv`` the args) with
    QGIS's Python and return ``out``."""
    why = _qgis_available()
    if why is not None:
        if os.environ.get("CI") == "true":
            pytest.fail(f"QGIS is required under CI: {why}")
        pytest.skip(why)

    def run(script: str, *args: str, env: dict[str, str] | None = None) -> dict:
        r = subprocess.run([str(SYSTEM_PYTHON), "-c", _PRELUDE + script + _END, *args],
                           capture_output=True, text=True, timeout=600,
                           env={**_env(), **(env or {})})
        lines = [ln for ln in r.stdout.splitlines() if ln.startswith("GISNET-JSON ")]
        assert r.returncode == 0 and lines, (r.returncode, r.stdout[-2000:], r.stderr[-3000:])
        return json.loads(lines[-1][len("GISNET-JSON "):])

    return run


@pytest.fixture(scope="module")
def results(tmp_path_factory) -> Path:
    """``gisnet run --sample --no-maps`` into a folder: the GeoPackage and gisnet.qgz."""
    from gisnet.cli import main

    out = tmp_path_factory.mktemp("qgis") / "out"
    assert main(["run", "--sample", "--out", str(out), "--no-maps", "-q"]) == 0
    return out


FIELDS = """
from qgis.core import QgsVectorLayer
lyr = QgsVectorLayer(sys.argv[1] + "|layername=obligations", "obligations", "ogr")
out["valid"] = lyr.isValid()
out["aliases"] = {f.name(): f.alias() for f in lyr.fields()}
out["renderer"] = lyr.renderer().type()
out["categories"] = {c.value(): c.label() for c in lyr.renderer().categories()}
"""


def test_obligations_fields_show_their_labels_in_qgis(qgis, results):
    from gisnet.labels import STATUS_LABELS

    got = qgis(FIELDS, str(results / "gisnet-results.gpkg"))
    assert got["valid"] and got["renderer"] == "categorizedSymbol"
    assert got["categories"] == STATUS_LABELS
    aliases = got["aliases"]
    want = column_aliases("obligations", list(aliases))
    assert len(want) >= 20
    assert {k: v for k, v in aliases.items() if v} == want
    assert aliases["distance_ft"] == "Distance (ft)"
    assert aliases["status"] == "Status"
    assert aliases["distance_limit_ft"] == "Connection distance (ft)"


PROJECT = """
from qgis.core import QgsProject
prj = QgsProject.instance()
out["read"] = prj.read(sys.argv[1])
out["crs"] = prj.crs().authid()
out["layers"] = {}
for lyr in prj.mapLayers().values():
    fields = lyr.fields()
    out["layers"][lyr.name()] = {
        "valid": lyr.isValid(), "readOnly": lyr.readOnly(), "n": lyr.featureCount(),
        "renderer": lyr.renderer().type() if lyr.isSpatial() else None,
        "scaled": lyr.hasScaleBasedVisibility(), "minScale": lyr.minimumScale(),
        "source": lyr.source(),
        "aliases": {f.name(): f.alias() for f in fields}}
    if lyr.name() == "register":
        out["edit"] = lyr.startEditing()
        feat = __import__("qgis.core", fromlist=["QgsFeature"]).QgsFeature(fields)
        feat.setAttribute("parcel_id", "P-NEW")
        out["added"] = lyr.addFeature(feat)
        out["committed"] = lyr.commitChanges()
        out["register_n"] = lyr.featureCount()
root = prj.layerTreeRoot()
out["groups"] = [[g.name(), [c.name() for c in g.children()]] for g in root.children()]
out["checked"] = {n.name(): n.isVisible() for n in root.findLayers()}
out["order"] = [lyr.name() for lyr in root.layerOrder()]
"""


def _open_project(qgis, path: Path) -> dict:
    return qgis(PROJECT, str(path))


def test_the_project_opens_in_qgis_grouped_ordered_styled(qgis, results, tmp_path):
    from gisnet.output.qgis_project import POINT_MIN_SCALE

    assert (results / "gisnet.qgz").is_file()
    # moved elsewhere, folder whole: the project names the GeoPackage relatively
    moved = tmp_path / "elsewhere"
    shutil.copytree(results, moved)
    got = _open_project(qgis, moved / "gisnet.qgz")
    assert got["read"] and got["crs"] == "EPSG:2260"
    layers = got["layers"]
    valid = [n for n, lyr in layers.items() if lyr["valid"]]
    assert len(valid) >= 5 and set(valid) == set(layers)
    for name, lyr in layers.items():
        assert lyr["source"].startswith(str(moved / "gisnet-results.gpkg")), name
        assert lyr["readOnly"], name  # results are replaced by the next run
        # every layer but those a first run may leave empty holds features (and
        # plant_increase: the sample's plant flows carry no analyses)
        assert lyr["n"] > 0 or name in {"changes", "overdue", "plant_increase"}, name
    assert layers["obligations"]["renderer"] == "categorizedSymbol"
    assert layers["pipes_capacity"]["renderer"] == "categorizedSymbol"
    assert layers["obligations"]["aliases"]["distance_ft"] == "Distance (ft)"
    # points only from 1:25,000 in (plants always)
    assert layers["control_manholes"]["scaled"]
    assert layers["control_manholes"]["minScale"] == POINT_MIN_SCALE
    assert not layers["plants"]["scaled"] and not layers["obligations"]["scaled"]
    groups = dict((g, c) for g, c in got["groups"])
    assert groups["Obligations"][0] == "obligations"
    assert "pipes_capacity" in groups["Capacity"]
    assert not got["checked"]["graph_nodes"] and got["checked"]["obligations"]
    order = got["order"]  # points over lines over areas, the zone at the bottom
    assert order.index("control_manholes") < order.index("pipes_capacity") \
        < order.index("obligations") < order.index("connection_zone") == len(order) - 1
    # two writes of equal results give equal bytes
    from gisnet.output.qgis_project import project_bytes

    gpkg = results / "gisnet-results.gpkg"
    assert project_bytes(gpkg) == project_bytes(gpkg) == (results / "gisnet.qgz").read_bytes()


def test_a_register_table_is_editable_in_the_project(qgis, results, tmp_path):
    from gisnet.output import write_results

    folder = tmp_path / "with-register"
    shutil.copytree(results, folder)
    reg = pd.DataFrame({"parcel_id": ["P1", "P2"], "connected_on": ["2026-01-05", None]})
    write_results(folder, {"register": reg})  # gisnet.qgz written again beside it
    got = _open_project(qgis, folder / "gisnet.qgz")
    assert got["layers"]["register"]["valid"]
    assert not got["layers"]["register"]["readOnly"]
    assert got["edit"] and got["added"] and got["committed"] and got["register_n"] == 3
    assert dict((g, c) for g, c in got["groups"])["Register"] == ["register"]


LOAD_QML = """
from qgis.core import QgsVectorLayer
lyr = QgsVectorLayer(sys.argv[1] + "|layername=pipes_capacity", "pipes", "ogr")
lyr.loadNamedStyle(sys.argv[2], True)  # wipe the default style first
msg, ok = lyr.loadNamedStyle(sys.argv[3])
out["ok"] = ok
out["renderer"] = lyr.renderer().type()
out["aliases"] = {f.name(): f.alias() for f in lyr.fields()}
"""


def test_ogc_collection_links_a_style_qgis_loads(qgis, results, sample_dir, tmp_path):
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=".*httpx2.*")
        from fastapi.testclient import TestClient

    from gisnet.io import load_town
    from gisnet.service import TownState, create_app

    client = TestClient(create_app(TownState.from_town(load_town(sample_dir))))
    doc = client.get("/collections/pipes_capacity").json()
    (link,) = [ln for ln in doc["links"] if ln["rel"] == "describedby"]
    assert link["type"] == "application/vnd.qgis.qml+xml"
    r = client.get(link["href"].replace("http://testserver", ""))
    assert r.status_code == 200 and r.text.startswith("<!DOCTYPE qgis")
    qml = tmp_path / "pipes.qml"
    qml.write_text(r.text, encoding="utf-8")
    blank = tmp_path / "blank.qml"
    blank.write_text("<!DOCTYPE qgis PUBLIC 'http://mrcc.com/qgis.dtd' 'SYSTEM'>"
                     "<qgis version='3.22.0'/>", encoding="utf-8")
    got = qgis(LOAD_QML, str(results / "gisnet-results.gpkg"), str(blank), str(qml))
    assert got["ok"] and got["renderer"] == "categorizedSymbol"
    assert got["aliases"]["capacity_gpd"] == "Full-flow capacity (gpd)"
    # input layers have no style
    assert not [ln for ln in client.get("/collections/input_mains").json()["links"]
                if ln["rel"] == "describedby"]
    assert client.get("/collections/input_mains/styles/gisnet").status_code == 404


@pytest.fixture(scope="module")
def cluster():
    import pg

    c = pg.start_cluster()
    try:
        yield c
    finally:
        pg.stop_cluster(c)


PG_LAYER = """
from qgis.core import QgsDataSourceUri, QgsVectorLayer
uri = QgsDataSourceUri()
uri.setConnection("127.0.0.1", sys.argv[1], sys.argv[2], sys.argv[3], "")
uri.setDataSource("results", "obligations", "geom", "", "fid")
lyr = QgsVectorLayer(uri.uri(False), "obligations", "postgres")
out["valid"] = lyr.isValid()
out["n"] = lyr.featureCount()
out["renderer"] = lyr.renderer().type() if lyr.isValid() else None
out["aliases"] = {f.name(): f.alias() for f in lyr.fields()}
from qgis.core import QgsWkbTypes
uri.setWkbType(QgsWkbTypes.Polygon)  # as QGIS's browser names a table: with its type
typed = QgsVectorLayer(uri.uri(False), "obligations", "postgres")
out["typed_renderer"] = typed.renderer().type() if typed.isValid() else None
"""


def test_postgis_output_has_layer_styles_qgis_applies(cluster, qgis, tmp_path):
    import sys

    r = subprocess.run([sys.executable, "-m", "gisnet", "run", "--layers", str(SAMPLE),
                        "--out", f"{cluster.url}?schema=results", "--no-maps", "-q"],
                       capture_output=True, text=True, timeout=300,
                       env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert r.returncode == 0, r.stderr
    with cluster.connect() as conn:
        rows = conn.execute(
            "SELECT f_table_catalog, f_table_schema, f_table_name, f_geometry_column, "
            "stylename, useasdefault, type, styleqml::text FROM public.layer_styles "
            "ORDER BY f_table_name").fetchall()
        # every table of one geometry type has its style; an empty layer (no changes
        # since the previous run, nothing overdue) has a generic column and none
        tables = {t for (t,) in conn.execute(
            "SELECT f_table_name FROM geometry_columns WHERE f_table_schema = 'results' "
            "AND upper(type) <> 'GEOMETRY'")}
    assert {row[2] for row in rows} == tables and len(rows) >= 10
    for cat, schema, _, geom, name, default, kind, qml in rows:
        assert (cat, schema, geom, name, default, kind) == (
            "town", "results", "geom", "gisnet", True, None)
        assert "<renderer-v2" in qml and "<aliases>" in qml
    # a second run replaces gisnet's rows, never adds to them
    r = subprocess.run([sys.executable, "-m", "gisnet", "run", "--layers", str(SAMPLE),
                        "--out", f"{cluster.url}?schema=results", "--no-maps", "-q"],
                       capture_output=True, text=True, timeout=300,
                       env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert r.returncode == 0, r.stderr
    with cluster.connect() as conn:
        n = conn.execute("SELECT count(*) FROM public.layer_styles").fetchone()[0]
    assert n == len(rows)
    import pg

    got = qgis(PG_LAYER, str(cluster.port), pg.DATABASE, pg.USER,
               env={"PGPASSFILE": str(cluster.pgpass)})
    assert got["valid"] and got["n"] == 3000
    assert got["renderer"] == got["typed_renderer"] == "categorizedSymbol"
    assert got["aliases"]["distance_ft"] == "Distance (ft)"
