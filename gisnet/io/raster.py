"""A ground elevation raster (DEM) named in the town file, read with rasterio.

``[elevation] raster = "dem.tif"`` (:class:`gisnet.townfile.ElevationSpec`)
names a raster a town already has. :func:`open_elevation` checks it when the
town is loaded (it opens, has the band, has a CRS, and its vertical unit is
known: the town file's ``units``, else the unit the raster states for the band
or in its vertical CRS; neither is a :class:`~gisnet.errors.ConfigError`, never
a silent guess); :func:`sample_ground` reads the ground (feet) under points
given in any CRS, reprojected to the raster's first (a geographic raster is
never read with projected coordinates). A point outside the raster, or on a
cell holding the nodata value (the town file's ``nodata``, else the raster's
own) or NaN, has no value.

rasterio is the ``raster`` extra (:mod:`gisnet.extras`).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from pyproj import CRS, Transformer

from .. import rules
from ..errors import ConfigError
from ..extras import needs_extra
from ..townfile import ELEVATION_UNITS, ElevationSpec

#: Vertical unit names rasters state (GDAL band unit type, a CRS axis) -> feet in one.
STATED_UNITS: dict[str, float] = {
    "m": ELEVATION_UNITS["m"], "metre": ELEVATION_UNITS["m"], "meter": ELEVATION_UNITS["m"],
    "metres": ELEVATION_UNITS["m"], "meters": ELEVATION_UNITS["m"],
    "ft": 1.0, "foot": 1.0, "feet": 1.0, "international foot": 1.0,
    "us survey foot": 1200 / 3937 / 0.3048, "us-ft": 1200 / 3937 / 0.3048,
    "ftus": 1200 / 3937 / 0.3048, "us_survey_foot": 1200 / 3937 / 0.3048,
}
#: Points sampled per read.
CHUNK = 65536


@dataclass(frozen=True)
class ElevationRaster:
    """A checked elevation raster: where it is and how its values are read.

    Attributes
    ----------
    path
        The raster (as the town file names it, resolved).
    band
        Band read (1 = the first).
    crs_wkt
        The raster's CRS (or the town file's ``crs`` for a raster without one).
    ft_per_z
        Feet in one of the raster's vertical units.
    units_said
        How the vertical unit is known, in words (``"m, as the town file says"``).
    nodata
        Cell value that means no elevation (None: only NaN cells have none).
    nodata_said
        Where the nodata value comes from, in words.
    min_drop_ft
        Least fall of the ground (feet) along a pipe that decides its direction.
    min_drop_default
        ``min_drop_ft`` is :data:`gisnet.rules.DEFAULT_DEM_MIN_DROP_FT` (the town
        file gives none).
    """

    path: str
    band: int
    crs_wkt: str
    ft_per_z: float
    units_said: str
    nodata: float | None
    nodata_said: str
    min_drop_ft: float
    min_drop_default: bool

    @property
    def name(self) -> str:
        """The raster's file name, for messages."""
        return Path(self.path).name

    def describe(self) -> str:
        """What gisnet read from the raster and assumed, in one sentence."""
        drop = (f"{self.min_drop_ft:g} ft (the default; [elevation] min_drop_ft changes it)"
                if self.min_drop_default else f"{self.min_drop_ft:g} ft ([elevation] min_drop_ft)")
        return (f"ground elevations read from {self.name} band {self.band} (vertical unit "
                f"{self.units_said}, converted to ft; nodata {self.nodata_said}); a pipe's "
                f"direction is taken from them only where the ground falls at least {drop} "
                "from one end to the other")


def _stated_unit(src: Any, band: int) -> tuple[float, str] | None:
    """The vertical unit the raster states: the band's unit type, else its CRS's
    vertical axis (a compound CRS)."""
    units = getattr(src, "units", None) or ()
    said = (units[band - 1] or "").strip() if len(units) >= band else ""
    if said:
        f = STATED_UNITS.get(said.lower())
        if f is None:
            raise ConfigError(f"elevation raster {src.name}: band {band} states its unit as "
                              f"{said!r}, which gisnet does not know; say it in the town file "
                              "([elevation] units = \"ft\" or \"m\")")
        return f, f"{said}, as the raster states"
    if src.crs is not None:
        crs = CRS.from_wkt(src.crs.to_wkt())
        for sub in crs.sub_crs_list:
            if sub.is_vertical and sub.axis_info:
                name = sub.axis_info[0].unit_name.lower()
                if name in STATED_UNITS:
                    return STATED_UNITS[name], f"{name}, as the raster's vertical CRS states"
    return None


def open_elevation(spec: ElevationSpec, town_file: Path | None = None) -> ElevationRaster:
    """Check the town file's elevation raster and settle how it is read.

    Parameters
    ----------
    spec
        The town file's ``[elevation]`` table.
    town_file
        The town file, named in errors.

    Raises
    ------
    ConfigError
        rasterio is not installed (the message names the ``raster`` extra), the
        raster cannot be opened, has no such band, has no CRS (and the town file
        names none), or its vertical unit is stated neither in the town file nor
        in the raster.
    """
    with needs_extra("raster", "an elevation raster ([elevation] in the town file)"):
        import rasterio
        from rasterio.errors import RasterioError
    where = f"elevation raster {spec.raster}"
    try:
        with rasterio.open(spec.raster) as src:
            if spec.band > src.count:
                raise ConfigError(f"{where}: [elevation] band {spec.band}, but the raster has "
                                  f"{src.count} band(s)", path=town_file)
            if src.crs is None and spec.crs is None:
                raise ConfigError(f"{where}: the raster has no CRS; name it in the town file "
                                  "([elevation] crs = \"EPSG:...\")", path=town_file)
            crs_wkt = src.crs.to_wkt() if src.crs is not None else CRS.from_user_input(
                spec.crs).to_wkt()
            stated = _stated_unit(src, spec.band)
            own_nodata = src.nodatavals[spec.band - 1]
    except RasterioError as exc:
        raise ConfigError(f"{where}: cannot be read as a raster ({exc})", path=town_file) from None
    if spec.units is not None:
        ft_per_z = ELEVATION_UNITS[spec.units]
        said = f"{spec.units}, as the town file says"
        if stated is not None and not np.isclose(stated[0], ft_per_z, rtol=1e-5):
            said += f" (the raster states {stated[1].split(',')[0]}; the town file is followed)"
    elif stated is not None:
        ft_per_z, said = stated
    else:
        raise ConfigError(f"{where}: the raster does not state its vertical unit; say it in "
                          "the town file ([elevation] units = \"ft\" or \"m\")", path=town_file)
    if spec.nodata is not None:
        nodata, nodata_said = spec.nodata, f"{spec.nodata:g}, as the town file says"
    elif own_nodata is not None:
        nodata, nodata_said = float(own_nodata), f"{float(own_nodata):g}, the raster's own"
    else:
        nodata, nodata_said = None, "none stated (only NaN cells have no value)"
    return ElevationRaster(
        path=str(spec.raster), band=spec.band, crs_wkt=crs_wkt, ft_per_z=ft_per_z,
        units_said=said, nodata=nodata, nodata_said=nodata_said,
        min_drop_ft=(rules.DEFAULT_DEM_MIN_DROP_FT if spec.min_drop_ft is None
                     else spec.min_drop_ft),
        min_drop_default=spec.min_drop_ft is None)


def sample_ground(raster: ElevationRaster, xy: np.ndarray, crs: Any) -> np.ndarray:
    """The ground elevation (feet) under each point: the value of the raster cell
    holding it, NaN outside the raster and on nodata or NaN cells.

    Parameters
    ----------
    raster
        A checked raster (:func:`open_elevation`).
    xy
        Points, shape (n, 2), in ``crs``.
    crs
        The points' CRS (anything pyproj reads); they are reprojected to the
        raster's CRS before they are read.
    """
    with needs_extra("raster", "an elevation raster ([elevation] in the town file)"):
        import rasterio
        from rasterio.errors import RasterioError
        from rasterio.windows import Window
    xy = np.asarray(xy, dtype=float).reshape(-1, 2)
    out = np.full(len(xy), np.nan)
    if len(xy) == 0:
        return out
    to = Transformer.from_crs(CRS.from_user_input(crs), CRS.from_wkt(raster.crs_wkt),
                              always_xy=True)
    x, y = to.transform(xy[:, 0], xy[:, 1])
    x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    try:
        with rasterio.open(raster.path) as src:
            t = src.transform  # x = a col + b row + c, y = d col + e row + f
            det = t.a * t.e - t.b * t.d
            dx, dy = x - t.c, y - t.f
            with np.errstate(invalid="ignore"):
                col = np.floor((t.e * dx - t.b * dy) / det)
                row = np.floor((t.a * dy - t.d * dx) / det)
            finite = np.isfinite(col) & np.isfinite(row)
            col = np.where(finite, col, -1).astype(np.int64)
            row = np.where(finite, row, -1).astype(np.int64)
            inside = (finite & (col >= 0) & (col < src.width)
                      & (row >= 0) & (row < src.height))
            idx = np.flatnonzero(inside)
            idx = idx[np.argsort(row[idx], kind="stable")]  # each read a strip of rows
            for k in range(0, len(idx), CHUNK):
                part = idx[k:k + CHUNK]
                r0, r1 = int(row[part].min()), int(row[part].max()) + 1
                c0, c1 = int(col[part].min()), int(col[part].max()) + 1
                window = Window(c0, r0, c1 - c0, r1 - r0)
                if (r1 - r0) * (c1 - c0) <= 4 * 1024 * 1024:
                    block = src.read(raster.band, window=window)
                    vals = block[row[part] - r0, col[part] - c0]
                else:  # points spread over a large raster: one cell each
                    vals = np.array([v[0] for v in src.sample(
                        zip(x[part], y[part], strict=True), indexes=raster.band)])
                out[part] = np.asarray(vals, dtype=float)
    except RasterioError as exc:
        raise ConfigError(f"elevation raster {raster.path}: cannot be read ({exc})") from None
    if raster.nodata is not None:
        out[np.isclose(out, raster.nodata, rtol=0.0, atol=1e-6 * max(1.0, abs(raster.nodata)))] \
            = np.nan
    return out * raster.ft_per_z
