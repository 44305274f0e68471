"""Layer sources that are not a local shapefile: GDAL virtual paths (/vsizip/,
/vsicurl/), URLs, a FileGDB folder, and connection strings on the command line
(the PostGIS server tests are in test_postgis.py)."""

from __future__ import annotations

import functools
import http.server
import threading
import zipfile

import pyogrio
import pytest

from gisnet.errors import LayerError
from gisnet.io import load_town
from gisnet.io.loading import town_file_with_overrides
from gisnet.io.reading import read_layer
from gisnet.townfile import is_virtual_source


@pytest.fixture(scope="module")
def reference(sample_dir):
    return load_town(sample_dir)


def _same_mains(town, reference, tolerance: float = 0) -> None:
    a, b = town.layers["mains"], reference.layers["mains"]
    assert list(a["main_id"]) == list(b["main_id"])
    assert bool(a.geometry.geom_equals_exact(b.geometry, tolerance).all())


def test_vsizip_override(sample_dir, reference, tmp_path):
    z = tmp_path / "town.zip"
    with zipfile.ZipFile(z, "w") as f:
        for p in sample_dir.glob("mains.*"):
            f.write(p, f"gis/{p.name}")
    town = load_town(sample_dir, overrides={"mains": f"/vsizip/{z}/gis/mains.shp"})
    assert town.sources["mains"] == f"/vsizip/{z}/gis/mains.shp"
    _same_mains(town, reference)
    with pytest.raises(LayerError, match="cannot read") as e:
        load_town(sample_dir, overrides={"mains": f"/vsizip/{z}/gis/nope.shp"})
    assert "file not found" not in str(e.value) and "nope.shp" in str(e.value)


def test_fiona_engine_reads_vsizip_and_postgis_the_same_way(sample_dir, reference, tmp_path):
    """fiona's GDAL reads GDAL virtual paths too; a database source goes through psycopg
    whichever engine (neither wheel's GDAL has the PostgreSQL driver)."""
    z = tmp_path / "mains.zip"
    with zipfile.ZipFile(z, "w") as f:
        for p in sample_dir.glob("mains.*"):
            f.write(p, p.name)
    town = load_town(sample_dir, overrides={"mains": f"/vsizip/{z}/mains.shp"},
                     engine="fiona")
    _same_mains(town, reference)
    with pytest.raises(LayerError, match="cannot connect"):
        read_layer("PG:host=127.0.0.1 port=1 dbname=x connect_timeout=2", layer="t",
                   engine="fiona")


def test_filegdb_folder_in_the_town_file(sample_dir, reference, tmp_path):
    if "OpenFileGDB" not in pyogrio.list_drivers() or \
            "w" not in pyogrio.list_drivers()["OpenFileGDB"]:
        pytest.skip("this GDAL cannot write a FileGDB")
    gdb = tmp_path / "town.gdb"
    pyogrio.write_dataframe(pyogrio.read_dataframe(sample_dir / "mains.shp"), gdb,
                            layer="sewer_mains", driver="OpenFileGDB")
    text = (sample_dir / "gisnet.toml").read_text().replace('path = "', f'path = "{sample_dir}/')
    text = text.replace(f'path = "{sample_dir}/mains.shp"',
                        f'path = "{gdb}"\nlayer = "sewer_mains"')
    (tmp_path / "gisnet.toml").write_text(text)
    # FileGDB stores coordinates on a grid (its xy resolution): equal within 0.001 ft
    _same_mains(load_town(tmp_path), reference, tolerance=1e-3)


@pytest.fixture(scope="module")
def http_base(sample_dir):
    """The sample folder served over HTTP on 127.0.0.1 (for /vsicurl/ and URLs)."""
    handler = functools.partial(_QuietHandler, directory=str(sample_dir))
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    t = threading.Thread(target=srv.serve_forever, daemon=True)
    t.start()
    try:
        yield f"http://127.0.0.1:{srv.server_address[1]}"
    finally:
        srv.shutdown()
        srv.server_close()


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args) -> None:
        pass


def test_vsicurl_override(sample_dir, reference, http_base):
    town = load_town(sample_dir, overrides={"mains": f"/vsicurl/{http_base}/mains.shp"})
    _same_mains(town, reference)
    with pytest.raises(LayerError, match="cannot read"):
        read_layer(f"/vsicurl/{http_base}/nothing.shp", role="mains")


@pytest.mark.parametrize("source", ["PG:dbname=town host=db", "postgresql://u@db/town",
                                    "/vsizip//tmp/a.zip/x.shp", "https://h/wfs",
                                    "WFS:https://h/wfs", "OAPIF:https://h/ogc"])
def test_sources_are_kept_as_written(source):
    assert is_virtual_source(source)
    tf = town_file_with_overrides(None, {"mains": source})
    assert str(tf.layers["mains"].path) == source
    assert not is_virtual_source("mains.shp") and not is_virtual_source("C:/gis/mains.shp")


def test_unreachable_database_is_one_line_without_the_password():
    secret = "Open-Sesame-9"
    with pytest.raises(LayerError) as e:
        read_layer(f"PG:host=127.0.0.1 port=1 dbname=town password={secret} "
                   "connect_timeout=2", layer="mains", role="mains")
    msg = str(e.value)
    assert secret not in msg and "password=***" in msg
    assert "cannot connect" in msg and "file not found" not in msg and "\n" not in msg
