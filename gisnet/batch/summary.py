"""The region summary: one row per town, as GeoPackage, CSV and an index map page.

Files, in the batch output folder:

``region-summary.gpkg``
    layer ``region_summary``: one row per town (columns below), geometry the
    box around the town's parcels and mains in EPSG:4326 (null for a town that
    failed before its layers were read).
``region-summary.csv``
    the same rows without geometry (UTF-8).
``region.html``
    a map of the towns' boxes coloured by status, with a table linking each
    town's pages (``<town>/index.html`` ...); the same page machinery as the
    town maps (:func:`gisnet.maps.render_page`), Leaflet inlined with
    ``--self-contained``.

Columns: ``town`` (output folder name), ``name``, ``status`` (``done``,
``unchanged``, ``failed``), ``error``, ``profile``, ``crs``, ``parcels``,
``mains``, ``obligations_<status>`` (parcels per obligation status),
``connection_points``, ``control_manholes`` (distinct), ``unresolved_points``,
``pipes``, ``pipes_over_threshold``, ``pipes_surcharged``, ``plants``,
``plant_ratio`` (the highest plant flow / design flow of the town),
``plants_over_threshold``, ``quality_errors``, ``quality_warnings``,
``time_<step>_s`` (seconds: load, graph, obligations, tracing, capacity,
write, maps, total), ``out_dir``, ``run_id`` (of the town's manifest),
``worker`` (the Dask worker that ran it).
"""

from __future__ import annotations

import html
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import geopandas as gpd
import pandas as pd

from ..output import atomic_path, atomic_write_text, write_gpkg
from ..output.cells import write_csv
from .task import FAILED, ROW_COLUMNS

SUMMARY_LAYER = "region_summary"
SUMMARY_GPKG = "region-summary.gpkg"
SUMMARY_CSV = "region-summary.csv"
INDEX_PAGE = "region.html"
#: Colour of a town's box by row status.
STATUS_COLOURS = {"done": "#1b9e77", "unchanged": "#7570b3", "failed": "#d95f02"}
#: Columns that count things (integers, null for a town that failed).
COUNT_COLUMNS = ("parcels", "mains", "connection_points", "control_manholes",
                 "unresolved_points", "pipes", "pipes_over_threshold", "pipes_surcharged",
                 "plants", "plants_over_threshold", "quality_errors", "quality_warnings")
STATUS_WORDS = {"done": "ran", "unchanged": "unchanged (skipped)", "failed": "failed"}


def summary_frame(rows: Iterable[Mapping[str, Any]]) -> gpd.GeoDataFrame:
    """The rows as a GeoDataFrame in EPSG:4326, in town order."""
    rows = list(rows)
    cols = [c for c in ROW_COLUMNS if c != "geometry"]
    df = pd.DataFrame([{k: r.get(k) for k in cols} for r in rows], columns=cols)
    geoms = [r.get("geometry") for r in rows]
    for c in df.columns:  # counts stay whole numbers beside a failed town's nulls
        if c in COUNT_COLUMNS or c.startswith("obligations_"):
            df[c] = pd.array(df[c], dtype="Int64")
    return gpd.GeoDataFrame(df, geometry=gpd.GeoSeries(geoms, crs="EPSG:4326"),
                            crs="EPSG:4326")


def write_summary(out_root: str | Path, rows: Iterable[Mapping[str, Any]], *,
                  region_name: str, maps: bool = True, self_contained: bool = False
                  ) -> list[Path]:
    """Write the region summary files (see the module docstring).

    Returns
    -------
    list of Path
        The files written.
    """
    out = Path(out_root)
    gdf = summary_frame(rows)
    written = []
    with atomic_path(out / SUMMARY_GPKG, "region summary GeoPackage") as tmp:
        tmp.unlink()
        write_gpkg(tmp.with_suffix(".gpkg"), {SUMMARY_LAYER: gdf})
        tmp.with_suffix(".gpkg").replace(tmp)
    written.append(out / SUMMARY_GPKG)
    with atomic_path(out / SUMMARY_CSV, "region summary CSV") as tmp:
        write_csv(gdf.drop(columns="geometry"), tmp, encoding="utf-8")
    written.append(out / SUMMARY_CSV)
    if maps:
        written.append(write_index_page(out, gdf, region_name=region_name,
                                        self_contained=self_contained))
    return written


def _link(town: str, page: str) -> str:
    return f'<a href="{html.escape(town)}/{page}">{html.escape(page.removesuffix(".html"))}</a>'


def _town_table(gdf: gpd.GeoDataFrame, out: Path) -> str:
    """An HTML table: each town, its status, headline counts and links to its pages."""
    head = ("<tr><th>town</th><th>status</th><th>parcels</th><th>must connect</th>"
            "<th>control manholes</th><th>pipes over threshold</th><th>pages</th></tr>")
    body = []
    for r in gdf.itertuples(index=False):
        pages = sorted(p.name for p in (out / r.town).glob("*.html")) \
            if r.status != FAILED else []
        links = " ".join(_link(r.town, p) for p in pages) or "&mdash;"
        status = STATUS_WORDS.get(r.status, str(r.status))
        if r.status == FAILED:  # the whole error in the tooltip, its start in the cell
            err = str(r.error)
            short = err if len(err) <= 60 else err[:57] + "..."
            status = (f'<span title="{html.escape(err)}">{status}: '
                      f"{html.escape(short)}</span>")

        def num(v: Any) -> str:
            return "&mdash;" if v is None or pd.isna(v) else f"{int(v):,}"

        body.append(f"<tr><td>{html.escape(str(r.town))}</td><td>{status}</td>"
                    f"<td>{num(r.parcels)}</td><td>{num(r.obligations_required)}</td>"
                    f"<td>{num(r.control_manholes)}</td><td>{num(r.pipes_over_threshold)}</td>"
                    f"<td>{links}</td></tr>")
    return ('<div style="max-height:60vh;max-width:42em;overflow:auto">'
            '<table class="gisnet-region" style="border-collapse:collapse;font-size:12px">'
            + head + "".join(body) + "</table></div>")


def write_index_page(out_root: str | Path, gdf: gpd.GeoDataFrame, *, region_name: str,
                     self_contained: bool = False) -> Path:
    """``region.html``: the towns' boxes on a map and a table of links to their pages."""
    from ..maps import MapLayer, Page, encode_layer, render_page

    out = Path(out_root)
    shown = gdf[gdf.geometry.notna()]
    props = {
        "town": [str(x) for x in shown["town"]],
        "status": [STATUS_WORDS.get(s, str(s)) for s in shown["status"]],
        "parcels": [None if pd.isna(v) else f"{int(v):,}" for v in shown["parcels"]],
        "required": [None if pd.isna(v) else f"{int(v):,}"
                     for v in shown["obligations_required"]],
        "page": [f"{t}/index.html" for t in shown["town"]],
        "_c": [str(s) for s in shown["status"]],
    }
    data, n = encode_layer(shown, props, precision=5)
    layer = MapLayer(
        key="towns", name="Towns", data=data, count=n,
        style={"color": "#333333", "weight": 2, "fillOpacity": 0.25},
        classes={k: {"color": c, "fillColor": c} for k, c in STATUS_COLOURS.items()},
        class_key="_c",
        fields=[("Town", "town"), ("Status", "status"), ("Parcels", "parcels"),
                ("Must connect", "required"), ("Pages", "page")],
        popup_title="{town}", tooltip="{town}: {status}", search=["town"],
        legend=[{"label": STATUS_WORDS[k], "color": c, "shape": "polygon"}
                for k, c in STATUS_COLOURS.items()], legend_title="Towns")
    failed = int((gdf["status"] == FAILED).sum())
    title = f"Region: {len(gdf)} towns" + (f", {failed} failed" if failed else "")
    page = Page("region", title, [layer],
                panels=[{"position": "topright", "html": _town_table(gdf, out)}],
                links=[{"href": SUMMARY_CSV, "label": "summary (CSV)"},
                       {"href": SUMMARY_GPKG, "label": "summary (GeoPackage)"}])
    text = render_page(page, town_name=region_name, profile_name="as each town's file says",
                       self_contained=self_contained)
    return atomic_write_text(out / INDEX_PAGE, text, "region index page")
