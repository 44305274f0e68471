"""``gisnet import-swmm``: a SWMM model as a gisnet town folder.

:func:`model_layers` turns a :class:`~gisnet.swmm.model.SwmmModel` into the
canonical layers (model names kept as ids) and :func:`write_town` writes them
to one GeoPackage plus a ``gisnet.toml`` that ``gisnet run --layers DIR``
reads as it is.

What becomes what
-----------------
- conduits -> ``mains`` (``main_id`` = conduit name, ``from_node``/``to_node``
  = its nodes, geometry = inlet node, [VERTICES], outlet node), kind
  ``sanitary``; diameter = Geom1 of circular sections; up/down inverts = node
  invert + offset (or the offset itself with ``LINK_OFFSETS ELEVATION``).
  When the model is drawn to scale (every conduit's drawn length within
  :data:`SCALE_RTOL` of its Length) the inverts are the mains' inverts and
  gisnet's slope is theirs over the drawn length; when it is a schematic
  drawing (SWMM's own examples), gisnet would divide the drop by a drawn
  length that is not the pipe's, so the mains get the model's slope
  (drop / Length) and keep the inverts as ``swmm_up_invert_ft`` /
  ``swmm_down_invert_ft``; the node inverts stay on the structures.
- pumps, orifices, weirs, outlets -> ``mains`` of kind ``force`` (non-gravity:
  flow is carried, no Manning capacity), ``swmm_type`` says which; weirs,
  orifices and outlets keep their SWMM parameters
  (:data:`gisnet.swmm.model.LINK_COLUMNS`, US units), which the export writes
  back.
- junctions, outfalls, storage units, dividers -> ``manholes`` (kind manhole,
  outfall, unknown, junction; rim = invert + max depth), outfalls also named
  in ``outlet_nodes``; a node a pump draws from (its wet well) is kind
  ``pump_station``.
- subcatchments -> ``parcels`` (``land_use`` ``swmm_subcatchment``, polygon
  from [POLYGONS], ``swmm_outlet``: the node or subcatchment their runoff goes
  to, not ``outlet_node``); they carry runoff, not sewage: no flow.
- [DWF] inflows -> ``parcels`` (``parcel_id`` ``DWF <node>``, ``land_use``
  ``swmm_dwf``, metered ``flow_gpd`` = the inflow's average, ``outlet_node`` =
  the node): gisnet's capacity adds the flow at that node, as SWMM does
  (:func:`gisnet.capacity.network.node_inflows`), so the conduits arriving there
  do not carry it and the links leaving it share it. The parcel is drawn as a
  small square at the node's end of the conduit leaving it with the lowest
  inlet (else of a conduit arriving there), where its connection point falls.
"""

from __future__ import annotations

import math
import os
import shutil
import tempfile
from pathlib import Path

import geopandas as gpd
import numpy as np
import pandas as pd
import shapely
from pyproj import CRS

from ..errors import ConfigError, CRSError
from ..output.writing import atomic_path, atomic_write_text, ensure_out_dir
from ..townfile import TOWN_FILE
from ..units import feet_per_unit
from .model import LINK_COLUMNS, SwmmModel

__all__ = ["GPKG_NAME", "SCALE_RTOL", "ImportResult", "model_crs", "model_layers",
           "write_town"]

GPKG_NAME = "swmm.gpkg"
#: Relative difference of drawn length and Length under which a model counts as drawn to scale.
SCALE_RTOL = 0.005
STRUCTURE_KIND = {"junction": "manhole", "outfall": "outfall", "storage": None,
                  "divider": "junction"}
DWF_PREFIX = "DWF "


class ImportResult:
    """The layers of an imported model, the town-file settings and the notes."""

    def __init__(self, layers: dict[str, gpd.GeoDataFrame], crs: CRS, snap_tolerance_ft: float,
                 outlets: list[str], to_scale: bool, notes: list[str]) -> None:
        self.layers = layers
        self.crs = crs
        self.snap_tolerance_ft = snap_tolerance_ft
        self.outlets = outlets
        self.to_scale = to_scale
        self.notes = notes


def model_crs(model: SwmmModel, crs: str | None) -> CRS:
    """The CRS of the model's coordinates, which the caller must name: a SWMM file
    carries none (a title naming an EPSG code is not evidence enough: swmmio's
    own state-plane example names one its coordinates do not fit).

    Raises
    ------
    ConfigError
        No CRS given.
    CRSError
        Not a CRS, or not projected.
    """
    if not crs:
        raise ConfigError(f"SWMM model {model.path.name} says nothing of its coordinates' "
                          "CRS (SWMM files carry none): give --crs (a projected CRS, "
                          "EPSG:NNNN or a PROJ string)")
    try:
        c = CRS.from_user_input(crs)
    except Exception:
        raise CRSError(f"--crs {crs!r} is not a CRS pyproj knows") from None
    feet_per_unit(c)  # projected, with a linear unit
    return c


def _lines(model: SwmmModel, table: pd.DataFrame, xy: dict[str, tuple[float, float]]
           ) -> np.ndarray:
    out = []
    for name, a, b in zip(table["main_id"], table["from_node"], table["to_node"], strict=True):
        pts = [xy[a], *[tuple(p) for p in model.vertices.get(name, [])], xy[b]]
        out.append(shapely.LineString(pts))
    return np.array(out, dtype=object)


def _square(p: shapely.Point, h: float) -> shapely.Polygon:
    return shapely.box(p.x - h, p.y - h, p.x + h, p.y + h)


def model_layers(model: SwmmModel, crs: CRS) -> ImportResult:
    """The canonical layers of a SWMM model (mains, manholes, parcels) in ``crs``.

    Parameters
    ----------
    model
        From :func:`gisnet.swmm.model.read_model`.
    crs
        The CRS of the model's coordinates (projected).

    Returns
    -------
    ImportResult
    """
    notes = list(model.notes)
    fpu = feet_per_unit(crs)
    nodes = model.nodes
    xy = {n: (x, y) for n, x, y in zip(nodes["node_id"], nodes["x"], nodes["y"], strict=True)}
    c = model.conduits
    cgeom = _lines(model, c, xy)
    drawn_ft = shapely.length(cgeom) * fpu
    to_scale = bool(np.all(np.abs(drawn_ft / c["length_ft"].to_numpy() - 1.0) <= SCALE_RTOL))
    mains = pd.DataFrame({
        "main_id": c["main_id"], "from_node": c["from_node"], "to_node": c["to_node"],
        "kind": "sanitary", "swmm_type": "conduit", "diameter_in": c["diameter_in"],
        "shape": c["shape"], "geom1_ft": c["geom1_ft"], "geom2_ft": c["geom2_ft"],
        "geom3_ft": c["geom3_ft"], "geom4_ft": c["geom4_ft"], "shape_curve": c["shape_curve"],
        "barrels": c["barrels"], "roughness": c["roughness"],
        "swmm_length_ft": c["length_ft"],
    })
    slope = (c["up_invert_ft"] - c["down_invert_ft"]) / c["length_ft"]
    if to_scale:
        mains["up_invert_ft"] = c["up_invert_ft"]
        mains["down_invert_ft"] = c["down_invert_ft"]
        mains["slope"] = np.nan
    else:
        mains["up_invert_ft"] = np.nan
        mains["down_invert_ft"] = np.nan
        mains["slope"] = slope
        mains["swmm_up_invert_ft"] = c["up_invert_ft"]
        mains["swmm_down_invert_ft"] = c["down_invert_ft"]
        ratio = drawn_ft / c["length_ft"].to_numpy()
        notes.append(f"the model is drawn schematically (drawn length / Length from "
                     f"{ratio.min():.2f} to {ratio.max():.2f}): mains carry the model's slope "
                     "(drop / Length), their inverts are kept as swmm_up_invert_ft and "
                     "swmm_down_invert_ft")
    mains = gpd.GeoDataFrame(mains, geometry=gpd.GeoSeries(cgeom, crs=crs), crs=crs)
    if len(model.links):
        lk = model.links
        kept = [c for c in LINK_COLUMNS if c not in ("main_id", "from_node", "to_node",
                                                      "swmm_type", "line")]
        lg = gpd.GeoDataFrame({
            "main_id": lk["main_id"], "from_node": lk["from_node"], "to_node": lk["to_node"],
            "kind": "force", "swmm_type": lk["swmm_type"], **{c: lk[c] for c in kept}},
            geometry=gpd.GeoSeries(_lines(model, lk, xy), crs=crs), crs=crs)
        mains = pd.concat([mains, lg], ignore_index=True)
        counts = lk["swmm_type"].value_counts()
        notes.append("non-gravity links imported as force mains (flow carried, no Manning "
                     "capacity): " + ", ".join(f"{v} {k}(s)" for k, v in counts.items())
                     + f" ({', '.join(lk['main_id'].head(10))}); weirs, orifices and outlets "
                     "keep their SWMM parameters (regulator_type, crest_ft, discharge_coeff... "
                     "in US units), which export-swmm writes back")
    rough = c["roughness"].round(4).unique()
    notes.append(f"conduit roughness in the model: {', '.join(map(str, sorted(rough)[:8]))}; "
                 "gisnet's capacity uses the profile's Manning n (kept as column roughness)")

    kind = nodes["swmm_type"].map(STRUCTURE_KIND)
    if len(model.links):
        # a pump draws from its wet well: the node is a pump station (force mains leave it)
        wells = set(model.links.loc[model.links["swmm_type"] == "pump", "from_node"])
        well = nodes["node_id"].isin(wells) & (nodes["swmm_type"] != "outfall")
        kind = kind.where(~well, "pump_station")
        if well.any():
            notes.append("nodes pumps draw from imported as pump stations (kind pump_station: "
                         "the pumps flow away from them): "
                         + ", ".join(nodes.loc[well, "node_id"].head(10)))
    manholes = gpd.GeoDataFrame({
        "node_id": nodes["node_id"], "kind": kind,
        "swmm_type": nodes["swmm_type"], "invert_ft": nodes["invert_ft"],
        "rim_ft": nodes["rim_ft"], "max_depth_ft": nodes["max_depth_ft"]},
        geometry=gpd.GeoSeries(shapely.points(nodes["x"], nodes["y"]), crs=crs), crs=crs)
    outlets = nodes.loc[nodes["swmm_type"] == "outfall", "node_id"].tolist()

    # Snap tolerance: below half the closest distance of two nodes.
    pts = shapely.points(nodes[["x", "y"]].to_numpy())
    tree = shapely.STRtree(pts)
    _, dist = tree.query_nearest(pts, exclusive=True, return_distance=True, all_matches=False)
    dmin_ft = float(np.min(dist)) * fpu if len(dist) else math.inf
    if dmin_ft == 0:
        raise ConfigError(f"SWMM model {model.path.name}: two nodes share the same coordinates; "
                          "gisnet joins pipes by where they end and would merge them")
    snap = float(min(1.0, dmin_ft * 0.4))

    parcels = _parcels(model, crs, fpu, mains, notes)
    layers = {"mains": mains, "manholes": manholes, "parcels": parcels}
    return ImportResult(layers, crs, snap, outlets, to_scale, notes)


def _parcels(model: SwmmModel, crs: CRS, fpu: float, mains: gpd.GeoDataFrame,
             notes: list[str]) -> gpd.GeoDataFrame:
    subs = model.subcatchments
    rows: list[dict] = []
    geoms: list = []
    missing = []
    for r in subs.itertuples():
        ring = r.coords
        if not ring or len(ring) < 3:
            missing.append(r.parcel_id)
            continue
        poly = shapely.make_valid(shapely.Polygon(ring))
        rows.append({"parcel_id": r.parcel_id, "land_use": "swmm_subcatchment",
                     "swmm_outlet": r.outlet, "flow_gpd": np.nan, "area_model": r.area})
        geoms.append(poly)
    if missing:
        notes.append(f"{len(missing)} subcatchment(s) have no [POLYGONS] outline and are left "
                     f"out: {', '.join(missing[:10])}")
    if len(subs) > len(missing):
        notes.append(f"{len(subs) - len(missing)} subcatchment(s) imported as parcels (land use "
                     "swmm_subcatchment, no sanitary flow: SWMM subcatchments make runoff)")
    # DWF: the flow enters at its node (outlet_node), as in SWMM. The parcel is a small
    # square at the node's end of the conduit leaving it whose inlet is lowest (the first
    # in file order among equals), else of a conduit arriving there, else at the node.
    grav = mains[mains["swmm_type"] == "conduit"]
    inlet = model.conduits["up_invert_ft"].to_numpy(float)
    order = np.argsort(inlet, kind="stable")
    first_out = grav.iloc[order].drop_duplicates("from_node").set_index("from_node").geometry
    last_in = grav.drop_duplicates("to_node").set_index("to_node").geometry
    nodes = model.nodes.set_index("node_id")
    for d in model.dwf.itertuples():
        if d.node_id in first_out.index:
            line = first_out.loc[d.node_id]
            along = min(0.05 * line.length, 1.0 / fpu)
            p = shapely.line_interpolate_point(line, along)
            h = max(along * 0.1, 1e-3 / fpu)
        elif d.node_id in last_in.index:
            line = last_in.loc[d.node_id]
            along = min(0.05 * line.length, 1.0 / fpu)
            p = shapely.line_interpolate_point(line, line.length - along)
            h = max(along * 0.1, 1e-3 / fpu)
        else:
            p = shapely.Point(nodes.loc[d.node_id, "x"], nodes.loc[d.node_id, "y"])
            h = 0.05 / fpu
        rows.append({"parcel_id": DWF_PREFIX + d.node_id, "land_use": "swmm_dwf",
                     "outlet_node": d.node_id, "flow_gpd": d.avg_flow_gpd, "area_model": np.nan})
        geoms.append(_square(p, h))
    if len(model.dwf):
        notes.append(f"{len(model.dwf)} [DWF] inflow(s), {model.dwf['avg_flow_gpd'].sum():,.0f} "
                     "gpd in all, imported as parcels with a metered flow_gpd (land use "
                     "swmm_dwf) and their node (outlet_node), where gisnet adds the flow as "
                     "SWMM does")
    cols = ["parcel_id", "land_use", "outlet_node", "swmm_outlet", "flow_gpd", "area_model"]
    return gpd.GeoDataFrame(pd.DataFrame(rows, columns=cols),
                            geometry=gpd.GeoSeries(geoms, crs=crs), crs=crs)


def _toml_str(s: str) -> str:
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"'


def town_file_text(model: SwmmModel, res: ImportResult, profile: str) -> str:
    """The ``gisnet.toml`` of an imported model."""
    lines = [f"# Imported from the SWMM model {model.path.name} by 'gisnet import-swmm'.",
             f"# Flow units {model.flow_units}; lengths converted to ft, flows to gpd."]
    lines += [f"# note: {n}" for n in res.notes]
    lines += [f"name = {_toml_str(model.path.stem)}", f"profile = {_toml_str(profile)}",
              f"crs = {_toml_str(res.crs.to_string())}",
              f"snap_tolerance_ft = {res.snap_tolerance_ft:.6g}",
              "outlet_nodes = [" + ", ".join(_toml_str(o) for o in res.outlets) + "]", "",
              "# the model this town came from: 'gisnet check-swmm' compares with SWMM's run of it",
              "[swmm]", f"model = {_toml_str(str(model.path.resolve()))}", ""]
    for role in ("mains", "manholes", "parcels"):
        lines += [f"[layers.{role}]", f'path = "{GPKG_NAME}"', f'layer = "{role}"']
        if role == "mains":
            lines.append('inverts = "upstream_downstream"')
        lines.append("")
    return "\n".join(lines)


def write_town(model: SwmmModel, res: ImportResult, out_dir: str | Path, profile: str, *,
               force: bool = False) -> Path:
    """Write the layers to ``DIR/swmm.gpkg`` and ``DIR/gisnet.toml`` (each atomically).

    A town already in ``DIR`` is kept: its town file and an existing
    ``swmm.gpkg`` are replaced only with ``force``, and never a file that town
    reads (:func:`gisnet.output.guard.guard_outputs`), nor the model itself.

    Returns the town file's path.

    Raises
    ------
    ConfigError
        An output would replace a town file or layer (without ``force``) or an
        input of the town in ``DIR`` (even with ``force``).
    """
    from ..output.guard import Output, guard_outputs

    folder = Path(out_dir)
    prof = Path(profile) if Path(profile).is_file() else None
    guard_outputs([Output(folder / TOWN_FILE, "town_file"), Output(folder / GPKG_NAME, "layer")],
                  inputs=[model.path, prof], force=force, force_option="--force",
                  town_dirs=[folder], what="imported town")
    out = ensure_out_dir(out_dir, "town folder")
    gpkg = out / GPKG_NAME
    # written under its own name (GDAL wants a .gpkg extension) in a private folder
    # beside it, then moved onto DIR/swmm.gpkg in one step
    with atomic_path(gpkg, "GeoPackage") as tmp:
        work = Path(tempfile.mkdtemp(prefix=".swmm-import-", dir=out))
        try:
            part = work / GPKG_NAME
            for role, df in res.layers.items():
                df.to_file(part, layer=role, driver="GPKG", engine="pyogrio")
            os.replace(part, tmp)
        finally:
            shutil.rmtree(work, ignore_errors=True)
    return atomic_write_text(out / TOWN_FILE, town_file_text(model, res, profile), "town file")
