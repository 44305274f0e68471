"""A QGIS project of the results: ``gisnet.qgz`` beside ``gisnet-results.gpkg``.

gisnet cannot import QGIS at run time, so the project is written as QGIS's own
XML (a ``.qgs`` document, zipped as ``.qgz``), read from the GeoPackage with
:mod:`sqlite3` alone:

- every layer of the GeoPackage (not ``layer_styles``) as a layer of the
  project, its source the GeoPackage by a **relative** path
  (``./gisnet-results.gpkg|layername=obligations``), so the folder can be moved
  or shared whole;
- grouped by what they answer (:data:`GROUPS`: obligations, control manholes and
  sampling, capacity, the sewer graph, data quality, the register), drawn points
  over lines over areas (the layer order), the graph layers off at first;
- styled as the GeoPackage's default styles (:func:`gisnet.output.styles.style_children`:
  the web maps' classes and colours, field aliases with units);
- point layers shown only from 1:25,000 in (:data:`POINT_MIN_SCALE`: a town's
  manholes drawn at county scale are a smear), the treatment plants always;
- result layers read-only; a ``register`` table (the connection register, when the
  GeoPackage has one) editable;
- the project's CRS the results' working CRS, its first view the results' extent.

:func:`gisnet.output.writing.write_project` writes the file atomically (a
temporary file, then :func:`os.replace`) and deterministically: two runs with equal results write
equal bytes (no dates, ids from layer names). Tested with QGIS's own bindings
(tests/test_qgis.py).
"""

from __future__ import annotations

import io
import sqlite3
import zipfile
from pathlib import Path
from xml.etree import ElementTree as ET

from .guard import PROJECT_FILE
from .metadata import layer_docs
from .styles import STYLES_TABLE, geometry_code, style_children

__all__ = ["EDITABLE_LAYERS", "GROUPS", "POINT_MIN_SCALE", "PROJECT_FILE", "project_bytes",
           "project_xml"]

#: Group title -> layers, top to bottom in QGIS's layer panel.
GROUPS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("Obligations", ("obligations", "obligation_evidence", "frontage", "connection_zone")),
    ("Control manholes and sampling", ("sampling_plan", "control_manholes", "control_paths")),
    ("Capacity", ("plants", "plant_increase", "pipes_capacity")),
    ("Data quality", ("quality",)),
    ("Sewer graph", ("graph_nodes", "graph_edges")),
    ("Register", ("register",)),
)
#: Layers shown unchecked when the project opens (the graph repeats pipes_capacity).
HIDDEN_LAYERS = frozenset({"graph_nodes", "graph_edges"})
#: Layers people edit in QGIS; every other layer is read-only (a run replaces it).
EDITABLE_LAYERS = frozenset({"register"})
#: Point layers are drawn from this scale in (1:25,000), except :data:`ALWAYS_SHOWN`.
POINT_MIN_SCALE = 25_000
#: Point layers drawn at every scale (few features).
ALWAYS_SHOWN = frozenset({"plants"})
_OTHER_GROUP = "Other results"
_QGIS_VERSION = "3.22.0-gisnet"


def _layers(gpkg: Path) -> list[dict[str, object]]:
    """Each layer of the GeoPackage: name, geometry column and type, SRS, extent, columns."""
    con = sqlite3.connect(f"file:{gpkg}?mode=ro", uri=True)
    try:
        rows = con.execute(
            "SELECT c.table_name, c.data_type, c.min_x, c.min_y, c.max_x, c.max_y, "
            "g.column_name, g.geometry_type_name, s.organization, "
            "s.organization_coordsys_id, s.definition, s.srs_name FROM gpkg_contents c "
            "LEFT JOIN gpkg_geometry_columns g ON g.table_name = c.table_name "
            "LEFT JOIN gpkg_spatial_ref_sys s ON s.srs_id = g.srs_id "
            "ORDER BY c.table_name").fetchall()
        out = []
        for (name, dtype, x0, y0, x1, y1, gcol, gtype, org, code, wkt, srs_name) in rows:
            if name == STYLES_TABLE or dtype not in ("features", "attributes"):
                continue
            cols = [r[1] for r in con.execute(f'PRAGMA table_info("{name}")')]
            fid = next((r[1] for r in con.execute(f'PRAGMA table_info("{name}")') if r[5]),
                       None)
            out.append({"name": name, "geom": gcol, "type": gtype if gcol else None,
                        "authid": f"{org}:{code}" if org and code is not None else "",
                        "wkt": wkt or "", "srs_name": srs_name or "",
                        "extent": (x0, y0, x1, y1),
                        "fields": [c for c in cols if c not in (gcol, fid)]})
        return out
    finally:
        con.close()


def _srs(parent: ET.Element, layer: dict[str, object]) -> None:
    """A ``<spatialrefsys>`` of the layer's CRS inside ``parent``."""
    srs = ET.SubElement(parent, "spatialrefsys")
    ET.SubElement(srs, "wkt").text = str(layer["wkt"])
    ET.SubElement(srs, "authid").text = str(layer["authid"])
    ET.SubElement(srs, "description").text = str(layer["srs_name"])


def _extent(parent: ET.Element, tag: str, box: tuple[float, ...]) -> None:
    e = ET.SubElement(parent, tag)
    for k, v in zip(("xmin", "ymin", "xmax", "ymax"), box, strict=True):
        ET.SubElement(e, k).text = repr(float(v))


def _wkb_name(gtype: object) -> str:
    g = str(gtype or "").upper()
    for name in ("MultiPolygon", "MultiLineString", "MultiPoint", "Polygon", "LineString",
                 "Point"):
        if g == name.upper():
            return name
    return "Unknown"


def _order_key(layer: dict[str, object], group_rank: dict[str, int]) -> tuple[int, int, str]:
    """Drawing order: points over lines over areas, the connection zone last."""
    code = geometry_code(layer["type"] if layer["geom"] else None)  # type: ignore[arg-type]
    rank = {"0": 0, "1": 1, "2": 2}.get(code, 3)
    if layer["name"] == "connection_zone":
        rank = 4
    return rank, group_rank.get(str(layer["name"]), 99), str(layer["name"])


def project_xml(gpkg: str | Path, *, source: str | None = None, title: str = "") -> str:
    """The ``.qgs`` document of the layers of the GeoPackage ``gpkg``.

    Parameters
    ----------
    gpkg
        The results GeoPackage (read with :mod:`sqlite3`).
    source
        The GeoPackage's path as the project names it (default
        ``./<file name>``: beside the project).
    title
        The project's title.

    Returns
    -------
    str
        The XML text of the project.
    """
    gpkg = Path(gpkg)
    src = source or f"./{gpkg.name}"
    layers = _layers(gpkg)
    docs = layer_docs()
    placed = {n for _, names in GROUPS for n in names}
    groups = [(t, [n for n in names if any(lyr["name"] == n for lyr in layers)])
              for t, names in GROUPS]
    extra = [str(lyr["name"]) for lyr in layers if lyr["name"] not in placed]
    if extra:
        groups.append((_OTHER_GROUP, extra))
    groups = [(t, names) for t, names in groups if names]
    group_rank = {n: i for i, (_, names) in enumerate(groups) for n in names}
    by_name = {str(lyr["name"]): lyr for lyr in layers}
    spatial = [lyr for lyr in layers if lyr["geom"]]
    crs_of = spatial[0] if spatial else None

    root = ET.Element("qgis", projectname=title, version=_QGIS_VERSION)
    ET.SubElement(root, "homePath", path="")
    ET.SubElement(root, "title").text = title
    if crs_of is not None:
        _srs(ET.SubElement(root, "projectCrs"), crs_of)
    tree = ET.SubElement(root, "layer-tree-group")
    ET.SubElement(tree, "customproperties")
    for title_, names in groups:
        g = ET.SubElement(tree, "layer-tree-group", name=title_, checked="Qt::Checked",
                          expanded="1" if title_ != "Sewer graph" else "0")
        ET.SubElement(g, "customproperties")
        for n in names:
            ET.SubElement(g, "layer-tree-layer", id=n, name=n, providerKey="ogr",
                          source=f"{src}|layername={n}", expanded="1",
                          checked="Qt::Unchecked" if n in HIDDEN_LAYERS else "Qt::Checked")
    order = sorted(layers, key=lambda lyr: _order_key(lyr, group_rank))
    custom = ET.SubElement(tree, "custom-order", enabled="1")
    for lyr in order:
        ET.SubElement(custom, "item").text = str(lyr["name"])

    pl = ET.SubElement(root, "projectlayers")
    for n in (n for _, names in groups for n in names):
        lyr = by_name[n]
        gtype = str(lyr["type"]) if lyr["geom"] else None
        code = geometry_code(gtype)
        scaled = code == "0" and n not in ALWAYS_SHOWN
        attrs = {"type": "vector", "geometry": {"0": "Point", "1": "Line", "2": "Polygon"}
                 .get(code, "No geometry"), "wkbType": _wkb_name(gtype) if gtype else "NoGeometry",
                 "readOnly": "0" if n in EDITABLE_LAYERS else "1",
                 "hasScaleBasedVisibilityFlag": "1" if scaled else "0",
                 "minScale": str(POINT_MIN_SCALE) if scaled else "0", "maxScale": "0",
                 "styleCategories": "AllStyleCategories"}
        ml = ET.SubElement(pl, "maplayer", attrs)
        if gtype and None not in lyr["extent"]:  # type: ignore[operator]
            _extent(ml, "extent", lyr["extent"])  # type: ignore[arg-type]
        ET.SubElement(ml, "id").text = n
        ET.SubElement(ml, "datasource").text = f"{src}|layername={n}"
        ET.SubElement(ml, "layername").text = n
        if gtype:
            _srs(ET.SubElement(ml, "srs"), lyr)
        meta = ET.SubElement(ml, "resourceMetadata")
        ET.SubElement(meta, "title").text = n
        ET.SubElement(meta, "abstract").text = docs[n].description if n in docs else ""
        ET.SubElement(ml, "provider", encoding="UTF-8").text = "ogr"
        ml.extend(style_children(n, gtype, list(lyr["fields"])))  # type: ignore[call-overload]
    lo = ET.SubElement(root, "layerorder")
    for lyr in order:
        ET.SubElement(lo, "layer", id=str(lyr["name"]))
    props = ET.SubElement(root, "properties")
    paths = ET.SubElement(props, "Paths")
    ET.SubElement(paths, "Absolute", type="bool").text = "false"
    if crs_of is not None:  # QGIS reads <projectCrs> only with projections enabled
        ET.SubElement(ET.SubElement(props, "SpatialRefSys"), "ProjectionsEnabled",
                      type="int").text = "1"
    boxes = [lyr["extent"] for lyr in spatial if None not in lyr["extent"]]  # type: ignore
    if crs_of is not None and boxes:
        box = (min(b[0] for b in boxes), min(b[1] for b in boxes),  # type: ignore[index]
               max(b[2] for b in boxes), max(b[3] for b in boxes))  # type: ignore[index]
        canvas = ET.SubElement(root, "mapcanvas", name="theMapCanvas")
        _extent(canvas, "extent", box)
        _srs(ET.SubElement(canvas, "destinationsrs"), crs_of)
        view = ET.SubElement(root, "ProjectViewSettings", UseProjectScales="0", rotation="0")
        _srs(ET.SubElement(view, "DefaultViewExtent", xmin=repr(box[0]), ymin=repr(box[1]),
                           xmax=repr(box[2]), ymax=repr(box[3])), crs_of)
    ET.indent(root, space=" ")
    body = ET.tostring(root, encoding="unicode")
    return "<!DOCTYPE qgis PUBLIC 'http://mrcc.com/qgis.dtd' 'SYSTEM'>\n" + body + "\n"


def project_bytes(gpkg: str | Path, name: str = PROJECT_FILE, *,
                  title: str = "gisnet results") -> bytes:
    """The ``.qgz`` file (a zip holding ``<stem>.qgs``, as QGIS writes it) of the
    GeoPackage ``gpkg``, for a project file called ``name`` beside it.

    The zip entry has a fixed date, so equal results give equal bytes.
    :func:`gisnet.output.writing.write_project` writes it atomically.
    """
    gpkg = Path(gpkg)
    text = project_xml(gpkg, title=title)
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as z:
        info = zipfile.ZipInfo(f"{Path(name).stem}.qgs", date_time=(1980, 1, 1, 0, 0, 0))
        info.compress_type = zipfile.ZIP_DEFLATED
        z.writestr(info, text.encode("utf-8"))
    return buf.getvalue()
