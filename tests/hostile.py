"""A corpus of damaged towns, each made from a copy of ``layers/sample``.

Every :class:`Damage` names one way a town's files arrive broken, the function
that breaks a fresh copy of the sample town that way, and what ``gisnet
validate`` must then say: either one error line (``error``, a regular
expression the line must match; exit status 2) or a finding (``finding``: its
kind and the id of the feature it must name; the town stays usable unless
``usable=False``). Nothing here is committed as files: the towns are built in
a temporary folder by ``tests/test_hostile_towns.py``.

``python tests/hostile.py OUT`` builds every damaged town under ``OUT`` (to look
at one by hand).

Categories (``Damage.category``): ``files`` (truncated or corrupt), ``geometry``
(wrong types), ``crs`` (wrong CRS / .prj), ``ids``, ``units``, ``values``,
``townfile`` (town-file damage), ``paths`` (FIFO, symlink loop, folder,
missing, traversal), ``plant_flows``.
"""

from __future__ import annotations

import os
import shutil
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import geopandas as gpd
import shapely
from pyproj import CRS

SAMPLE = Path(__file__).resolve().parents[1] / "layers" / "sample"
SHP_PARTS = (".shp", ".shx", ".dbf", ".prj", ".cpg")


@dataclass(frozen=True)
class Damage:
    """One damaged town and what ``gisnet validate`` must say about it.

    Attributes
    ----------
    name
        Short name (the test id).
    category
        One of the categories listed in the module docstring.
    make
        Breaks the copy of the sample town in the folder it is given.
    error
        Regular expression the one ``gisnet: error:`` line must match (exit 2).
    finding
        ``(kind, feature_id)``: a finding of that kind naming that feature id
        (``feature_id`` None: any feature, or none).
    usable
        With ``finding``: whether the town must still be usable (exit 0).
    blocks
        Reading it could block or loop forever: run in a subprocess with a timeout.
    run
        Also run ``gisnet run --no-maps`` and expect the same outcome.
    slow
        Marked ``@pytest.mark.slow``.
    """

    name: str
    category: str
    make: Callable[[Path], None]
    error: str | None = None
    finding: tuple[str, str | None] | None = None
    usable: bool = True
    blocks: bool = False
    run: bool = False
    slow: bool = False


DAMAGES: list[Damage] = []


def damage(category: str, **kw) -> Callable[[Callable[[Path], None]], Callable[[Path], None]]:
    """Register the decorated function as a :class:`Damage` named after it."""
    def deco(fn: Callable[[Path], None]) -> Callable[[Path], None]:
        DAMAGES.append(Damage(fn.__name__, category, fn, **kw))
        return fn
    return deco


def build(d: Damage, folder: Path) -> Path:
    """A copy of the sample town in ``folder/d.name``, damaged by ``d``."""
    town = folder / d.name
    shutil.copytree(SAMPLE, town, symlinks=True)
    d.make(town)
    return town


# ---------------------------------------------------------------- helpers


def edit(town: Path, layer: str, fn: Callable[[gpd.GeoDataFrame], gpd.GeoDataFrame | None]
         ) -> None:
    """Read ``layer.shp``, change it with ``fn`` (in place or returning a new frame), write it."""
    path = town / f"{layer}.shp"
    g = gpd.read_file(path, engine="pyogrio")
    out = fn(g)
    g = g if out is None else out
    for ext in SHP_PARTS[:3]:
        path.with_suffix(ext).unlink()
    g.to_file(path, engine="pyogrio")


def set_value(layer: str, column: str, row: int, value) -> Callable[[Path], None]:
    def make(town: Path) -> None:
        def fn(g):
            if isinstance(value, str) and g[column].dtype != object:
                g[column] = g[column].astype(object)
            g.loc[row, column] = value
        edit(town, layer, fn)
    return make


def sample_id(layer: str, row: int, column: str = "FACILITYID") -> str:
    return str(gpd.read_file(SAMPLE / f"{layer}.shp", engine="pyogrio",
                             columns=[column])[column].iloc[row])


def sample_count(layer: str) -> int:
    """Features in a layer of the sample town (from the .shx index)."""
    return ((SAMPLE / f"{layer}.shx").stat().st_size - 100) // 8


def toml(town: Path, old: str, new: str) -> None:
    """Replace ``old`` (which must be there) by ``new`` in the town file."""
    f = town / "gisnet.toml"
    text = f.read_text(encoding="utf-8")
    assert old in text, old
    f.write_text(text.replace(old, new, 1), encoding="utf-8")


def cut(path: Path, keep: float) -> None:
    data = path.read_bytes()
    path.write_bytes(data[: int(len(data) * keep)])


def dbf_count(path: Path, delta: int) -> None:
    b = bytearray(path.read_bytes())
    n = int.from_bytes(b[4:8], "little")
    b[4:8] = (n + delta).to_bytes(4, "little")
    path.write_bytes(bytes(b))


def prj(town: Path, layer: str, epsg: int) -> None:
    (town / f"{layer}.prj").write_text(CRS.from_epsg(epsg).to_wkt("WKT1_ESRI"), encoding="ascii")


def mains_path(town: Path, new: str) -> None:
    toml(town, 'path = "mains.shp"', f'path = "{new}"')


def flows(town: Path, text: str) -> None:
    (town / "plant_flows.csv").write_text(text, encoding="utf-8")


# ---------------------------------------------------------------- files


@damage("files", error=r"mains\.shp: layer 'mains': shapefile is truncated", run=True)
def shp_truncated(town: Path) -> None:
    """mains.shp cut to half its length."""
    cut(town / "mains.shp", 0.5)


@damage("files", error=r"mains\.shx: layer 'mains': shapefile is truncated")
def shx_truncated(town: Path) -> None:
    """mains.shx cut to 60 % of its length."""
    cut(town / "mains.shx", 0.6)


@damage("files", error=r"parcels\.dbf: layer 'parcels': attribute table is truncated")
def dbf_truncated(town: Path) -> None:
    """parcels.dbf cut to 70 % of its length."""
    cut(town / "parcels.dbf", 0.7)


@damage("files", error=r"mains\.dbf: layer 'mains': the shapefile's parts disagree: mains\.shx "
                       r"indexes 466 shapes but mains\.dbf says it holds 366 records", run=True)
def dbf_count_100_lower(town: Path) -> None:
    """mains.dbf header record count lowered by 100 (GDAL would read 366 of 466 mains)."""
    dbf_count(town / "mains.dbf", -100)


@damage("files", error=r"manholes\.dbf: layer 'manholes': attribute table is truncated: its "
                       rf"header says {sample_count('manholes') + 5} records")
def dbf_count_higher(town: Path) -> None:
    """manholes.dbf header record count raised by 5."""
    dbf_count(town / "manholes.dbf", +5)


@damage("files", error=r"parcels\.shp: layer 'parcels': not a shapefile: the \.shp header is "
                       r"missing or damaged")
def shp_bad_magic(town: Path) -> None:
    """parcels.shp file code (bytes 0-3) zeroed."""
    b = bytearray((town / "parcels.shp").read_bytes())
    b[0:4] = b"\0\0\0\0"
    (town / "parcels.shp").write_bytes(bytes(b))


@damage("files", error=r"mains\.shp: layer 'mains': not a shapefile")
def shp_zero_bytes(town: Path) -> None:
    """mains.shp empty (0 bytes)."""
    (town / "mains.shp").write_bytes(b"")


@damage("files", error=r"streets\.dbf: layer 'streets': attribute table \(\.dbf\) header is "
                       r"missing or damaged")
def dbf_zero_bytes(town: Path) -> None:
    """streets.dbf empty (0 bytes)."""
    (town / "streets.dbf").write_bytes(b"")


@damage("files", error=r"mains\.shp: layer 'mains': shapefile is missing its \.shx file")
def shx_missing(town: Path) -> None:
    """mains.shx deleted."""
    (town / "mains.shx").unlink()


@damage("files", error=r"users\.shp: layer 'users': shapefile is missing its \.dbf file")
def dbf_missing(town: Path) -> None:
    """users.dbf deleted."""
    (town / "users.dbf").unlink()


@damage("files", error=r"plants\.shp: layer 'plants': empty layer: no features")
def layer_without_features(town: Path) -> None:
    """plants.shp rewritten with no features."""
    edit(town, "plants", lambda g: g.iloc[:0])


@damage("files", error=r"manholes\.shp: layer 'manholes': no feature has a geometry")
def shp_garbage_after_header(town: Path) -> None:
    """Every byte of manholes.shp after its header is 0xff."""
    p = town / "manholes.shp"
    b = bytearray(p.read_bytes())
    b[100:] = b"\xff" * (len(b) - 100)
    p.write_bytes(bytes(b))


# ---------------------------------------------------------------- geometry


@damage("geometry", error=r"mains\.shp: layer 'mains': Point geometries where mains must be "
                          r"lines \(all 466 features")
def mains_are_points(town: Path) -> None:
    """Every main replaced by its centroid."""
    edit(town, "mains", lambda g: g.set_geometry(g.geometry.centroid))


@damage("geometry", error=r"parcels\.shp: layer 'parcels': (Multi)?LineString geometries where "
                          r"parcels must be polygons")
def parcels_are_lines(town: Path) -> None:
    """Every parcel replaced by its boundary line."""
    edit(town, "parcels", lambda g: g.set_geometry(g.geometry.boundary))


@damage("geometry", error=r"parcels\.shp: layer 'manholes': Polygon geometries where manholes "
                          r"must be "
                          r"points \(all 3000 features")
def manholes_file_is_parcels(town: Path) -> None:
    """The town file points manholes at parcels.shp."""
    toml(town, 'path = "manholes.shp"', 'path = "parcels.shp"')
    toml(town, 'node_id = "FACILITYID"\n', "")


@damage("geometry", finding=("null_geometry", sample_id("mains", 7)))
def main_without_geometry(town: Path) -> None:
    """One main with a null geometry."""
    def fn(g):
        g.loc[7, "geometry"] = None
    edit(town, "mains", fn)


@damage("geometry", finding=("invalid_geometry_dropped", sample_id("mains", 9)))
def main_of_one_point(town: Path) -> None:
    """One main a line of two identical points."""
    def fn(g):
        p = g.geometry.iloc[9].coords[0]
        g.loc[9, "geometry"] = shapely.LineString([p, p])
    edit(town, "mains", fn)


@damage("geometry", finding=("invalid_geometry_repaired", sample_id("parcels", 4, "PRINT_KEY")))
def bowtie_parcel(town: Path) -> None:
    """One parcel a self-intersecting bow-tie."""
    def fn(g):
        x0, y0, x1, y1 = g.geometry.iloc[4].bounds
        g.loc[4, "geometry"] = shapely.Polygon([(x0, y0), (x1, y1), (x1, y0), (x0, y1)])
    edit(town, "parcels", fn)


@damage("geometry", finding=("multipart_exploded", sample_id("mains", 11)))
def main_in_two_parts(town: Path) -> None:
    """One main a multi-line of two parts that do not touch."""
    def fn(g):
        line = g.geometry.iloc[11]
        shifted = shapely.affinity.translate(line, 500, 500)
        g.loc[11, "geometry"] = shapely.MultiLineString([line, shifted])
    edit(town, "mains", fn)


@damage("geometry", finding=("wrong_geometry_type", sample_id("manholes", 3)))
def one_manhole_is_a_line(town: Path) -> None:
    """A GeoPackage takes mixed geometry types (a shapefile cannot)."""
    g = gpd.read_file(town / "manholes.shp", engine="pyogrio")
    p = g.geometry.iloc[3]
    geoms = list(g.geometry)
    geoms[3] = shapely.LineString([(p.x, p.y), (p.x + 5, p.y + 5)])
    g = g.set_geometry(gpd.GeoSeries(geoms, crs=g.crs))
    g.to_file(town / "manholes.gpkg", engine="pyogrio", geometry_type="Unknown")
    toml(town, 'path = "manholes.shp"', 'path = "manholes.gpkg"')


# ---------------------------------------------------------------- crs


@damage("crs", error=r"parcels\.shp: layer 'parcels': coordinates do not fit the CRS its \.prj "
                     r"declares, EPSG:4326 \(WGS 84\)", run=True)
def parcels_prj_says_wgs84(town: Path) -> None:
    """parcels.prj declares EPSG:4326 over state-plane feet."""
    prj(town, "parcels", 4326)


@damage("crs", error=r"mains\.shp: layer 'mains': the mains layer lies 187 miles from the "
                     r"town's other layers .* \(EPSG:2261\) is likely wrong")
def mains_prj_neighbouring_zone(town: Path) -> None:
    """mains.prj declares NY Central (EPSG:2261) for NY East coordinates."""
    prj(town, "mains", 2261)


@damage("crs", error=r"manholes\.shp: layer 'manholes': the manholes layer lies [\d,]+ miles "
                     r".*\(EPSG:32633\) is likely wrong")
def manholes_prj_utm_33n(town: Path) -> None:
    """manholes.prj declares UTM 33N (EPSG:32633)."""
    prj(town, "manholes", 32633)


@damage("crs", error=r"streets\.prj: layer 'streets': the \.prj is not a CRS GDAL can read")
def prj_garbage(town: Path) -> None:
    """streets.prj holds text that is not a CRS."""
    (town / "streets.prj").write_text("this is not a projection\n", encoding="ascii")


@damage("crs", finding=("crs_assumed", None))
def prj_missing_town_crs_given(town: Path) -> None:
    """buildings.prj deleted; the town file names crs."""
    (town / "buildings.prj").unlink()


@damage("crs", error=r"buildings\.shp: layer 'buildings': shapefile is missing its \.prj file")
def prj_missing_no_town_crs(town: Path) -> None:
    """buildings.prj deleted and the town file names no crs."""
    (town / "buildings.prj").unlink()
    toml(town, 'crs = "EPSG:2260"\n', "")


@damage("crs", error=r"gisnet\.toml: key 'crs': the working CRS must be projected")
def town_crs_geographic(town: Path) -> None:
    """Town file crs = EPSG:4326."""
    toml(town, 'crs = "EPSG:2260"', 'crs = "EPSG:4326"')


@damage("crs", error=r"gisnet\.toml: key 'crs': not a CRS pyproj knows")
def town_crs_unknown(town: Path) -> None:
    """Town file crs = EPSG:999999."""
    toml(town, 'crs = "EPSG:2260"', 'crs = "EPSG:999999"')


# ---------------------------------------------------------------- ids


@damage("ids", finding=("duplicate_id", "SM000002"), blocks=True, run=True)
def id_suffix_clash(town: Path) -> None:
    """Row 0 = SM000002 (so SM000002 twice) and row 2 = SM000002#2: the loop that
    made repeats unique once never ended here."""
    def fn(g):
        g.loc[0, "FACILITYID"] = "SM000002"
        g.loc[2, "FACILITYID"] = "SM000002#2"
    edit(town, "mains", fn)


@damage("ids", finding=("duplicate_id", "SM000149"))
def unique_id_looks_like_a_suffix(town: Path) -> None:
    """A main whose own id is SM000149#2 (unique) keeps it; the repeat of SM000149
    becomes SM000149#3."""
    def fn(g):
        g.loc[4, "FACILITYID"] = "SM000149#2"
    edit(town, "mains", fn)


@damage("ids", finding=("generated_id", None))
def constant_ids(town: Path) -> None:
    """Every main has the id X: not an id column; ids from row numbers, one finding."""
    edit(town, "mains", lambda g: g.assign(FACILITYID="X"))


@damage("ids", finding=("generated_id", None))
def empty_ids(town: Path) -> None:
    """Every main's FACILITYID empty: ids from row numbers, one finding."""
    edit(town, "mains", lambda g: g.assign(FACILITYID=None))


@damage("ids", finding=("duplicate_id", sample_id("manholes", 1)))
def manhole_id_twice(town: Path) -> None:
    """A manhole id used twice."""
    set_value("manholes", "FACILITYID", 5, sample_id("manholes", 1))(town)


@damage("ids", finding=("duplicate_id", sample_id("parcels", 0, "PRINT_KEY")))
def parcel_id_twice(town: Path) -> None:
    """A parcel id used twice."""
    set_value("parcels", "PRINT_KEY", 9, sample_id("parcels", 0, "PRINT_KEY"))(town)


@damage("ids", error=r"layer 'mains': column 'NOPE' mapped to main_id does not exist")
def id_column_mapped_to_nothing(town: Path) -> None:
    """main_id mapped to a column that does not exist."""
    toml(town, 'main_id = "FACILITYID"', 'main_id = "NOPE"')


@damage("ids", finding=("duplicate_id", "SM000012:1"))
def id_clashes_with_a_part_suffix(town: Path) -> None:
    """Main SM000012 in two parts (SM000012:1, :2) and another main whose own id is
    SM000012:1: that main keeps its id; the part yields (SM000012:1#2)."""
    def fn(g):
        line = g.geometry.iloc[11]
        g.loc[11, "geometry"] = shapely.MultiLineString(
            [line, shapely.affinity.translate(line, 500, 500)])
        g.loc[20, "FACILITYID"] = "SM000012:1"
    edit(town, "mains", fn)


@damage("ids", finding=("duplicate_id", "J000001"))
def manholes_named_like_junctions(town: Path) -> None:
    """Manholes named J000001 (twice) and J000001~, the graph's junction ids: the
    junctions take other ids, no node is lost."""
    def fn(g):
        g.loc[0, "FACILITYID"] = "J000001"
        g.loc[1, "FACILITYID"] = "J000001~"
        g.loc[2, "FACILITYID"] = "J000001"
    edit(town, "manholes", fn)


# ---------------------------------------------------------------- units


@damage("units", finding=("diameter_unit_mixup", "SM000001"), run=True)
def diameters_in_mm(town: Path) -> None:
    """Every diameter in mm in the inch column (a 21-in main reads 533)."""
    edit(town, "mains", lambda g: g.assign(DIAMETER=(g["DIAMETER"] * 25.4).round()))


@damage("units", finding=("diameter_unit_mixup", "SM000001"))
def diameters_in_inches_said_mm(town: Path) -> None:
    """The town file says diameter = "mm" over inch values."""
    toml(town, 'slope = "percent"', 'slope = "percent"\ndiameter = "mm"')


@damage("units", finding=("implausible_diameter", "SM000001"))
def one_diameter_in_mm(town: Path) -> None:
    """One diameter 533 (mm) in the inch column."""
    set_value("mains", "DIAMETER", 0, 533.0)(town)


@damage("units", finding=("implausible_diameter", "SM000004"))
def diameter_half_inch(town: Path) -> None:
    """One diameter 0.5 in."""
    set_value("mains", "DIAMETER", 3, 0.5)(town)


@damage("units", finding=("implausible_slope", "SM000006"))
def slope_80_percent(town: Path) -> None:
    """One stored slope 80 % (0.8 ft/ft)."""
    set_value("mains", "SLOPE", 5, 80.0)(town)


@damage("units", finding=("slope_unit_mixup", "SM000001"))
def slopes_percent_said_ft_per_ft(town: Path) -> None:
    """The town file says slope = "ft/ft" over percent values."""
    toml(town, 'slope = "percent"', 'slope = "ft/ft"')
    edit(town, "mains", lambda g: g.assign(SLOPE=g["SLOPE"] * 10))


@damage("units", finding=("non_numeric", "SM000008"))
def diameter_in_furlongs(town: Path) -> None:
    """One diameter "8 furlongs"."""
    set_value("mains", "DIAMETER", 7, "8 furlongs")(town)


@damage("units", finding=("implausible_slope", "SM000010"))
def inverts_give_steep_slope(town: Path) -> None:
    """One main without a stored slope whose inverts differ by 1,000 ft."""
    def fn(g):
        g.loc[9, "SLOPE"] = None
        g.loc[9, "UPELEV"] = float(g.loc[9, "DOWNELEV"]) + 1000.0
    edit(town, "mains", fn)


# ---------------------------------------------------------------- values


@damage("values", finding=("coordinates_out_of_range", "SM000006"), run=True)
def vertex_at_1e20(town: Path) -> None:
    """One vertex of a main at (1e20, 1e20)."""
    def fn(g):
        c = list(g.geometry.iloc[5].coords)
        c[1] = (1e20, 1e20)
        g.loc[5, "geometry"] = shapely.LineString(c)
    edit(town, "mains", fn)


@damage("values", finding=("null_geometry", "MH000004"))
def manhole_at_not_a_number(town: Path) -> None:
    """One manhole's x and y NaN in the .shp's bytes (no writer lets NaN through)."""
    import struct

    p = town / "manholes.shp"
    b = bytearray(p.read_bytes())
    assert int.from_bytes(b[32:36], "little") == 1  # point shapefile: 28-byte records
    at = 100 + 3 * 28 + 8 + 4
    b[at:at + 16] = struct.pack("<dd", float("nan"), float("nan"))
    p.write_bytes(bytes(b))


@damage("values", finding=("coordinates_out_of_range", "MH000004"))
def manhole_at_zero(town: Path) -> None:
    """One manhole at (0, 0)."""
    def fn(g):
        g.loc[3, "geometry"] = shapely.Point(0.0, 0.0)
    edit(town, "manholes", fn)


@damage("values", finding=("coordinates_out_of_range", sample_id("parcels", 2, "PRINT_KEY")))
def parcel_moved_far_away(town: Path) -> None:
    """One parcel moved 4,000,000 ft east."""
    def fn(g):
        g.loc[2, "geometry"] = shapely.affinity.translate(g.geometry.iloc[2], 4e6, 0)
    edit(town, "parcels", fn)


@damage("values", finding=("negative_value", "SM000003"))
def negative_diameter(town: Path) -> None:
    """One diameter -8."""
    set_value("mains", "DIAMETER", 2, -8.0)(town)


@damage("values", finding=("negative_value", "WWTP-01"))
def negative_plant_capacity(town: Path) -> None:
    """The plant's design capacity -2 mgd."""
    set_value("plants", "DESIGNCAP", 0, -2.0)(town)


@damage("values", finding=("unknown_value", "SM000002"))
def unknown_main_kind(town: Path) -> None:
    """One main of kind "Lemonade"."""
    set_value("mains", "WATERTYPE", 1, "Lemonade")(town)


@damage("values", finding=("non_numeric", sample_id("parcels", 1, "PRINT_KEY")))
def bedrooms_as_words(town: Path) -> None:
    """One parcel's bedrooms "three"."""
    set_value("parcels", "NBR_BEDRM", 1, "three")(town)


@damage("values", finding=("missing_diameter", "SM000013"))
def diameter_missing(town: Path) -> None:
    """One diameter null."""
    set_value("mains", "DIAMETER", 12, None)(town)


# ---------------------------------------------------------------- town file


@damage("townfile", finding=("working_crs", None))
def town_file_with_bom(town: Path) -> None:
    """A UTF-8 byte-order mark before gisnet.toml."""
    f = town / "gisnet.toml"
    f.write_bytes(b"\xef\xbb\xbf" + f.read_bytes())


@damage("townfile", error=r"gisnet\.toml: not a usable town file: its tables or arrays are "
                          r"nested too deeply to read")
def town_file_nested_100000(town: Path) -> None:
    """gisnet.toml of 100,000 nested [ ."""
    (town / "gisnet.toml").write_text("a = " + "[" * 100_000, encoding="utf-8")


@damage("townfile", error=r"gisnet\.toml: not valid TOML")
def town_file_not_toml(town: Path) -> None:
    """A table header without its ]."""
    toml(town, "[layers.parcels]", "[layers.parcels")


@damage("townfile", error=r"gisnet\.toml: key 'snap_tolerence_ft': unknown key")
def town_file_misspelt_key(town: Path) -> None:
    """snap_tolerence_ft."""
    toml(town, "snap_tolerance_ft", "snap_tolerence_ft")


@damage("townfile", error=r"gisnet\.toml: key 'layers\.sewers': unknown layer role")
def town_file_unknown_role(town: Path) -> None:
    """[layers.sewers]."""
    toml(town, "[layers.mains]\n", "[layers.sewers]\n")


@damage("townfile", error=r"gisnet\.toml: not UTF-8 text")
def town_file_latin1(town: Path) -> None:
    """A Latin-1 byte in gisnet.toml."""
    f = town / "gisnet.toml"
    f.write_bytes(f.read_bytes().replace(b"(synthetic)", b"(synth\xe9tic)"))


@damage("townfile", error=r"gisnet\.toml: key 'snap_tolerance_ft': must be a finite number >= 0")
def town_file_negative_tolerance(town: Path) -> None:
    """snap_tolerance_ft = -1.0."""
    toml(town, "snap_tolerance_ft = 1.0", "snap_tolerance_ft = -1.0")


@damage("townfile", error=r"gisnet\.toml: key 'layers\.mains\.path': missing")
def town_file_layer_without_path(town: Path) -> None:
    """[layers.mains] without path."""
    toml(town, 'path = "mains.shp"\n', "")


@damage("townfile", error=r"gisnet\.toml: the town file names no layers")
def town_file_empty(town: Path) -> None:
    """gisnet.toml empty."""
    (town / "gisnet.toml").write_text("", encoding="utf-8")


@damage("townfile", error=r"gisnet\.toml: key 'units\.slope': must be one of")
def town_file_slope_in_degrees(town: Path) -> None:
    """[units] slope = "degrees"."""
    toml(town, 'slope = "percent"', 'slope = "degrees"')


@damage("townfile", error=r"gisnet\.toml: key 'profile': profile file .*nope\.toml does not exist")
def town_file_profile_missing(town: Path) -> None:
    """profile = "nope.toml" (no such file)."""
    toml(town, 'profile = "poughkeepsie-fourth-ward"', 'profile = "nope.toml"')


@damage("townfile", error=r"gisnet\.toml: is a folder, not a file")
def town_file_is_a_folder(town: Path) -> None:
    """gisnet.toml is a folder."""
    (town / "gisnet.toml").unlink()
    (town / "gisnet.toml").mkdir()


@damage("townfile", error=r"gisnet\.toml: is a FIFO \(named pipe\), not a regular file",
        blocks=True)
def town_file_is_a_fifo(town: Path) -> None:
    """gisnet.toml is a FIFO."""
    (town / "gisnet.toml").unlink()
    os.mkfifo(town / "gisnet.toml")


# ---------------------------------------------------------------- paths


@damage("paths", error=r"fifo\.shp: layer 'mains': is a FIFO \(named pipe\), not a regular "
                       r"file; refusing to read it", blocks=True, run=True)
def layer_path_is_a_fifo(town: Path) -> None:
    """The mains path is a FIFO (once blocked forever)."""
    os.mkfifo(town / "fifo.shp")
    mains_path(town, "fifo.shp")


@damage("paths", error=r"mains\.dbf: layer 'mains': is a FIFO \(named pipe\)", blocks=True)
def sidecar_is_a_fifo(town: Path) -> None:
    """mains.dbf is a FIFO."""
    (town / "mains.dbf").unlink()
    os.mkfifo(town / "mains.dbf")


@damage("paths", error=r"null: layer 'mains': is a device, not a regular file", blocks=True)
def layer_path_is_a_device(town: Path) -> None:
    """The mains path is /dev/null."""
    mains_path(town, "/dev/null")


@damage("paths", error=r"loop\.shp: layer 'mains': is a symbolic link loop")
def layer_path_symlink_loop(town: Path) -> None:
    """The mains path is a symbolic link to itself."""
    os.symlink("loop.shp", town / "loop.shp")
    mains_path(town, "loop.shp")


@damage("paths", error=r"gone\.shp: layer 'mains': is a broken symbolic link")
def layer_path_broken_symlink(town: Path) -> None:
    """The mains path is a link to nothing."""
    os.symlink("nowhere.shp", town / "gone.shp")
    mains_path(town, "gone.shp")


@damage("paths", error=r"layer 'mains': is a folder; a layer path must name a file")
def layer_path_is_the_folder(town: Path) -> None:
    """Mains path = "." (the town folder)."""
    mains_path(town, ".")


@damage("paths", error=r"nothere\.shp: layer 'mains': file not found")
def layer_path_missing(town: Path) -> None:
    """The mains path names no file."""
    mains_path(town, "nothere.shp")


@damage("paths", error=r"layer 'mains': cannot read")
def layer_path_traversal(town: Path) -> None:
    """The mains path climbs out of the town (../../etc/hostname): not GIS data."""
    mains_path(town, "../" * 30 + "etc/hostname" if Path("/etc/hostname").is_file()
               else "../" * 30 + "etc/passwd")


@damage("paths", error=r"plant_flows\.csv: layer 'plant_flows': is a FIFO", blocks=True)
def plant_flows_is_a_fifo(town: Path) -> None:
    """plant_flows.csv is a FIFO."""
    (town / "plant_flows.csv").unlink()
    os.mkfifo(town / "plant_flows.csv")


@damage("paths", error=r"layers folder does not exist")
def layers_folder_missing(town: Path) -> None:
    """The town folder does not exist."""
    shutil.rmtree(town)


# ---------------------------------------------------------------- plant flows


@damage("plant_flows", error=r"plant_flows\.csv: layer 'plant_flows': feature WWTP-01: month "
                             r"2025-01 is given 2 times for plant WWTP-01 \(rows 2, 14: 1, 100 "
                             r"mgd\)", run=True)
def month_given_twice(town: Path) -> None:
    """plant_flows.csv gives 2025-01 twice (1.0 and 100 mgd)."""
    text = (town / "plant_flows.csv").read_text(encoding="utf-8").splitlines()
    rows = [r for r in text[1:] if r]
    rows[0] = "WWTP-01,2025-01,1.0"
    flows(town, "\n".join([text[0], *rows, "WWTP-01,2025-01,100"]) + "\n")


@damage("plant_flows", error=r"plant_flows\.csv: layer 'plant_flows': feature WWTP-01: row 3: "
                             r"needs a plant_id, a month YYYY-MM")
def month_13(town: Path) -> None:
    """A month 2025-13."""
    flows(town, "plant_id,month,avg_flow_mgd\nWWTP-01,2025-01,1.2\nWWTP-01,2025-13,1.3\n")


@damage("plant_flows", error=r"layer 'plant_flows': feature WWTP-01: row 2: needs")
def negative_flow(town: Path) -> None:
    """A flow of -1.2 mgd."""
    flows(town, "plant_id,month,avg_flow_mgd\nWWTP-01,2025-01,-1.2\n")


@damage("plant_flows", error=r"layer 'plant_flows': missing column\(s\) avg_flow_mgd")
def flow_column_missing(town: Path) -> None:
    """No avg_flow_mgd column."""
    flows(town, "plant_id,month,flow\nWWTP-01,2025-01,1.2\n")


@damage("plant_flows", finding=("unknown_plant", "WWTP-99"))
def flows_of_an_unknown_plant(town: Path) -> None:
    """Flows for WWTP-99, not in the plants layer."""
    with (town / "plant_flows.csv").open("a", encoding="utf-8") as fh:
        fh.write("WWTP-99,2025-01,0.5\n")


@damage("plant_flows", error=r"layer 'plant_flows': cannot read CSV")
def flows_file_empty(town: Path) -> None:
    """plant_flows.csv empty."""
    flows(town, "")


#: Section titles of the categories, in the order docs/reliability.md lists them.
CATEGORIES = {
    "files": "Truncated or corrupt files",
    "geometry": "Wrong geometry types",
    "crs": "Wrong CRS or .prj",
    "ids": "Ids (duplicates, empty, constant, clashing suffixes)",
    "units": "Units",
    "values": "Values",
    "townfile": "Town-file damage",
    "paths": "Paths (FIFO, symlink loop, folder, missing, traversal)",
    "plant_flows": "Plant flows",
}


def markdown() -> str:
    """The corpus as the tables of docs/reliability.md (``python tests/hostile.py --doc``)."""
    import inspect

    out = []
    for cat, title in CATEGORIES.items():
        out += [f"### {title}", "", "| case | damage | `gisnet validate` must give |",
                "|---|---|---|"]
        for d in DAMAGES:
            if d.category != cat:
                continue
            what = (inspect.getdoc(d.make) or "").split("\n\n")[0].replace("\n", " ")
            if d.error:
                res = f"error line (exit 2) matching `{d.error}`"
            else:
                kind, fid = d.finding
                res = f"finding `{kind}`" + (f" naming `{fid}`" if fid else "")
                res += "; usable (exit 0)" if d.usable else ""
            if d.run:
                res += "; `gisnet run --no-maps` the same"
            if d.blocks:
                res += "; run in a subprocess with a timeout: must not block"
            out.append(f"| `{d.name}` | {what.replace('|', '/')} | {res.replace('|', '/')} |")
        out.append("")
    return "\n".join(out)


def main(out: str) -> None:  # pragma: no cover - a tool for looking at the corpus
    if out == "--doc":
        print(markdown())
        return
    folder = Path(out)
    folder.mkdir(parents=True, exist_ok=True)
    for d in DAMAGES:
        build(d, folder)
        print(d.category, d.name, d.error or d.finding)


if __name__ == "__main__":  # pragma: no cover
    main(sys.argv[1])


