"""End to end: ``gisnet run`` on the bundled sample town."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pyogrio
import pytest

from gisnet.cli import main


def _hashes(folder: Path) -> dict[str, str]:
    return {
        p.name: hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(folder.iterdir())
        if p.is_file()
    }


@pytest.fixture(scope="module")
def run_out(sample_dir: Path, tmp_path_factory: pytest.TempPathFactory):
    out = tmp_path_factory.mktemp("run")
    before = _hashes(sample_dir)
    code = main(["run", "--layers", str(sample_dir), "--out", str(out), "--quiet"])
    return code, out, before


def test_run_exits_zero_and_writes_gpkg_and_maps(run_out):
    code, out, _ = run_out
    assert code == 0
    assert (out / "gisnet-results.gpkg").is_file()
    for page in ("index", "network", "obligations", "sampling", "capacity"):
        assert (out / f"{page}.html").stat().st_size > 1000, page


def test_run_writes_every_result_layer(run_out):
    _, out, _ = run_out
    names = {name for name, _ in pyogrio.list_layers(out / "gisnet-results.gpkg")}
    expected = {
        "quality", "graph_nodes", "graph_edges", "obligations", "obligation_evidence",
        "connection_zone", "frontage", "control_manholes", "control_paths", "sampling_plan",
        "pipes_capacity", "plants",
    }
    assert expected <= names


def test_run_leaves_inputs_byte_identical(run_out, sample_dir: Path):
    _, _, before = run_out
    assert _hashes(sample_dir) == before


def test_run_json_summary_counts_match_layers(sample_dir: Path, tmp_path: Path, capsys):
    code = main(["run", "--layers", str(sample_dir), "--out", str(tmp_path), "--json",
                 "--no-maps"])
    assert code == 0
    s = json.loads(capsys.readouterr().out)
    obligations = pyogrio.read_dataframe(tmp_path / "gisnet-results.gpkg", layer="obligations",
                                         read_geometry=False)
    assert sum(s["obligations"].values()) == len(obligations)
    assert s["obligations"] == obligations["status"].value_counts().sort_index().to_dict()
    pipes = pyogrio.read_dataframe(tmp_path / "gisnet-results.gpkg", layer="pipes_capacity",
                                   read_geometry=False)
    assert s["pipes"]["pipes"] == len(pipes)
    assert s["graph"]["edges"] == len(pipes)


def test_run_on_missing_folder_is_one_clear_error(tmp_path: Path, capsys):
    code = main(["run", "--layers", str(tmp_path / "nowhere"), "--out", str(tmp_path)])
    err = capsys.readouterr().err
    assert code == 2
    assert "nowhere" in err
    assert "Traceback" not in err


def test_run_writes_tables_on_request(sample_dir: Path, tmp_path: Path):
    """--tables csv/geojson/parquet: one file per layer and format, each holding the
    layer's rows; GeoJSON in lon/lat (RFC 7946) and Parquet in the working CRS."""
    import geopandas as gpd
    import pandas as pd
    from pyproj import Transformer

    code = main(["run", "--layers", str(sample_dir), "--out", str(tmp_path), "--no-maps",
                 "--quiet", "--tables", "csv", "--tables", "geojson", "--tables", "parquet"])
    assert code == 0
    gpkg = tmp_path / "gisnet-results.gpkg"
    tables = tmp_path / "tables"
    for name, _ in pyogrio.list_layers(gpkg):
        n = pyogrio.read_info(gpkg, layer=name)["features"]
        assert len(pd.read_csv(tables / f"{name}.csv")) == n, name
        assert len(gpd.read_parquet(tables / f"{name}.parquet")) == n, name
    ob = pyogrio.read_dataframe(gpkg, layer="obligations")
    gj = gpd.read_file(tables / "obligations.geojson")
    assert gj.crs.to_epsg() == 4326 and len(gj) == len(ob)
    # the first parcel's first vertex, reprojected independently with pyproj
    x, y = ob.geometry.iloc[0].exterior.coords[0]
    lon, lat = Transformer.from_crs(ob.crs, 4326, always_xy=True).transform(x, y)
    glon, glat = gj.geometry.iloc[0].exterior.coords[0]
    assert abs(glon - lon) < 1e-7 and abs(glat - lat) < 1e-7
    pq = gpd.read_parquet(tables / "obligations.parquet")
    assert pq.crs == ob.crs
    assert list(pq["parcel_id"]) == list(ob["parcel_id"])
    assert (pq["distance_ft"] - ob["distance_ft"]).abs().max() < 1e-9


def test_unknown_table_format_is_a_config_error(tmp_path: Path):
    import pandas as pd

    from gisnet.errors import ConfigError
    from gisnet.io import write_tables

    with pytest.raises(ConfigError, match="xlsx"):
        write_tables(tmp_path, {"t": pd.DataFrame({"a": [1]})}, ["xlsx"])
