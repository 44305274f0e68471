"""Vector tiles of a map layer: Mapbox Vector Tiles in a PMTiles archive.

A layer too big to embed in a page (see :mod:`gisnet.maps.tiled`) is cut into
tiles of the WebMercatorQuad grid (:mod:`morecantile`) and written as one
PMTiles archive (:mod:`gisnet.maps.archive`: the ``pmtiles`` package's writer, each
tile gzip-compressed with ISA-L), Mapbox Vector Tiles (protobuf schema of
``mapbox-vector-tile``):

``features`` (zoom :data:`DETAIL_ZOOM`)
    every feature with its properties (the popup's fields and the style keys);
    feature id = the row's position in the layer. The page over-zooms these
    tiles up to zoom 20.
``overview`` (zooms :data:`OVERVIEW_MIN_ZOOM` to ``DETAIL_ZOOM - 1``)
    lines: each tile's lines of one style (class, width, dash) merged into one
    feature, simplified to half a pixel; polygons and points: squares of a
    :data:`GRID` x :data:`GRID` grid per tile with the count ``n`` of features
    whose centre falls in them (a million parcels stay readable at town scale).

Memory is bounded whatever the layer's size: the detail zoom (every feature) is
cut block of tiles by block of tiles (:func:`detail_blocks`: runs of whole columns
of tiles, or of rows of one column, each reached by at most :data:`_DETAIL_PAIRS`
(feature, tile) pairs), each tile whole in one block with its features in the same
order, so the tiles' bytes are those of the whole layer cut at once. Polygon and
point layers are held as their reprojected coordinates (the overview needs only each
feature's bounds), their geometries rebuilt block by block; lines keep their
geometries, which the overview simplifies zoom by zoom.

Everything is vectorised over the features of a block or zoom level: tile assignment
from the bounds, one :func:`shapely.clip_by_rect` over all (feature, tile)
pairs (features spanning many tiles are cut down zoom by zoom, so a large
polygon is never clipped thousands of times whole), geometry commands built
with numpy, and the tiles' protobuf bytes too (:mod:`gisnet.maps.mvt`: every
feature's fields as varints in one pass, each tile's values gathered from the
layer's values encoded once). ``mapbox_vector_tile.encode`` costs about
200 µs a feature in pure Python (200 s for a million parcels); filling the
protobuf classes feature by feature about 4 µs, with the GIL held. The numpy
encoder writes the same bytes (``tests/test_tiles.py``) in 1.7-3 µs a feature
(a million parcels 1.7 s, a million control paths with their overview lines
3.1 s), and two threads cut a county's eleven archives in 34.8 s against 53.1 s
on one (45.9 s against 60.3 s with the protobuf classes; ``docs/performance.md``).
"""

from __future__ import annotations

import functools
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import geopandas as gpd
import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import shapely

from .archive import GZIP_LEVEL, gzip_tile, read_tile, write_archive
from .encoding import BLANK_TEXT, Prop, TextCodes, blank_texts, is_missing
from .mvt import (
    EXTENT,
    ValueTable,
    concat_tables,
    encode_tiles,
    number_table,
    text_table,
    value_table,
    zigzag,
)
from .tile_blocks import Mercator, detail_blocks, merged_parts, orient_rings

#: Zoom of the tiles that hold every feature (about 0.3 m a tile unit).
DETAIL_ZOOM = 15
#: Lowest zoom with tiles.
OVERVIEW_MIN_ZOOM = 10
#: Tile units kept around each tile so strokes do not stop at the tile edge.
BUFFER = 64
#: Lines in one overview tile at most (see :func:`layer_tiles`).
MAX_OVERVIEW_LINES = 5_000
#: Overview cells per tile side for polygon and point layers.
GRID = 16
#: (feature, tile) pairs of the detail zoom cut at once, at most (where a single tile
#: does not hold more): bounds the detail zoom's pieces and working arrays whatever the
#: layer's size (:func:`detail_blocks`; 32,768 cut 300,000 parcels a little faster
#: than 131,072, in half the memory: ``docs/performance.md``).
_DETAIL_PAIRS = 32_768
#: Web Mercator half-width (m).
_HALF = 20037508.342789244
_CMD_MOVE, _CMD_LINE, _CMD_CLOSE = 1, 2, 7
_SHAPELY_FAMILY = {0: "point", 4: "point", 1: "line", 2: "line", 5: "line", 3: "polygon",
                   6: "polygon"}


@functools.cache  # (0.3 ms a call, asked for by every block of tiles)
def _tms() -> Any:
    import morecantile

    return morecantile.tms.get("WebMercatorQuad")


def tile_bounds(z: int, x: int, y: int) -> tuple[float, float, float, float]:
    """(left, bottom, right, top) of tile z/x/y in EPSG:3857 metres (morecantile)."""
    from morecantile import Tile

    b = _tms().xy_bounds(Tile(x, y, z))
    return (b.left, b.bottom, b.right, b.top)


@functools.cache
def _grid(z: int) -> tuple[float, float, float]:
    """Left, top and tile size (m) of zoom ``z``, read from morecantile's matrix."""
    left, _, right, top = tile_bounds(z, 0, 0)
    return left, top, right - left


# -- geometry: tiles of each feature, clipping ------------------------------------------------
def _tile_range(bounds: np.ndarray, z: int, buf: float) -> tuple[np.ndarray, ...]:
    left, top, size = _grid(z)
    n = 1 << z
    tx0 = np.clip(np.floor((bounds[:, 0] - buf - left) / size), 0, n - 1).astype(np.int64)
    tx1 = np.clip(np.floor((bounds[:, 2] + buf - left) / size), 0, n - 1).astype(np.int64)
    ty0 = np.clip(np.floor((top - bounds[:, 3] - buf) / size), 0, n - 1).astype(np.int64)
    ty1 = np.clip(np.floor((top - bounds[:, 1] + buf) / size), 0, n - 1).astype(np.int64)
    return tx0, tx1, ty0, ty1


def _clip(geoms: np.ndarray, tx: np.ndarray, ty: np.ndarray, z: int) -> np.ndarray:
    left, top, size = _grid(z)
    buf = size * BUFFER / EXTENT
    out = np.empty(len(geoms), dtype=object)
    if len(geoms) == 0:
        return out
    key = tx * (1 << z) + ty
    order = np.argsort(key, kind="stable")
    starts = np.flatnonzero(np.diff(key[order], prepend=-1))
    stops = np.append(starts[1:], len(order))
    for s, e in zip(starts.tolist(), stops.tolist(), strict=True):
        sel = order[s:e]  # one clip_by_rect call per tile, over that tile's features
        x0 = left + int(tx[sel[0]]) * size - buf
        y1 = top - int(ty[sel[0]]) * size + buf
        out[sel] = shapely.clip_by_rect(geoms[sel], x0, y1 - size - 2 * buf,
                                        x0 + size + 2 * buf, y1)
    return out


def assign_tiles(geoms: np.ndarray, z: int, *, max_span: int = 16,
                 window: tuple[int, int, int, int] | None = None) -> tuple[np.ndarray, ...]:
    """Each feature's pieces in the tiles of zoom ``z`` it touches.

    Parameters
    ----------
    geoms
        Geometries in EPSG:3857 (none missing or empty).
    z
        Zoom level.
    max_span
        Features touching more tiles than this are cut at ``z - 1`` first (and
        so on down), so each clip works on a piece the size of a few tiles.
    window
        ``(x0, x1, y0, y1)``: only the tiles of columns ``x0..x1`` and rows
        ``y0..y1`` (inclusive); default every tile. A piece is the same whatever
        the window (cut down the same zooms to the same tile), so the pieces of
        several windows that cover the tiles once are the pieces of all tiles.

    Returns
    -------
    (feature, tx, ty, piece)
        Position of the feature in ``geoms``, tile column and row, and the
        feature clipped to the tile plus :data:`BUFFER` (the feature itself
        when it lies inside one tile); pairs with nothing left are dropped.
    """
    geoms = np.asarray(geoms, dtype=object)
    if len(geoms) == 0:
        empty = np.zeros(0, dtype=np.int64)
        return empty, empty, empty, np.zeros(0, dtype=object)
    _, _, size = _grid(z)
    buf = size * BUFFER / EXTENT
    bounds = shapely.bounds(geoms)
    tx0, tx1, ty0, ty1 = _tile_range(bounds, z, buf)
    span = (tx1 - tx0 + 1) * (ty1 - ty0 + 1)  # every tile: decides the cuts
    big = (span > max_span) & (z > 6)
    if window is not None:  # the tiles of each feature inside the window
        wx0, wx1, wy0, wy1 = window
        tx0, tx1 = np.maximum(tx0, wx0), np.minimum(tx1, wx1)
        ty0, ty1 = np.maximum(ty0, wy0), np.minimum(ty1, wy1)
    nx, ny = np.maximum(tx1 - tx0 + 1, 0), np.maximum(ty1 - ty0 + 1, 0)
    wspan = nx * ny
    small = np.flatnonzero(~big)
    fi = np.repeat(small, wspan[small])
    start = np.repeat(np.cumsum(wspan[small]) - wspan[small], wspan[small])
    k = np.arange(len(fi)) - start
    tx = tx0[fi] + k % nx[fi]
    ty = ty0[fi] + k // nx[fi]
    pieces = geoms[fi]
    cut = span[fi] > 1
    if cut.any():
        pieces = pieces.copy()
        pieces[cut] = _clip(geoms[fi[cut]], tx[cut], ty[cut], z)
    if big.any():
        bi = np.flatnonzero(big)
        up = None if window is None else (wx0 >> 1, wx1 >> 1, wy0 >> 1, wy1 >> 1)
        pf, px, py, pp = assign_tiles(geoms[bi], z - 1, max_span=max_span, window=up)
        cf = np.repeat(bi[pf], 4)
        cx = np.repeat(px * 2, 4) + np.tile([0, 1, 0, 1], len(pf))
        cy = np.repeat(py * 2, 4) + np.tile([0, 0, 1, 1], len(pf))
        cp = np.repeat(pp, 4)
        if window is not None:
            inside = (cx >= wx0) & (cx <= wx1) & (cy >= wy0) & (cy <= wy1)
            cf, cx, cy, cp = cf[inside], cx[inside], cy[inside], cp[inside]
        cp = _clip(cp, cx, cy, z)
        fi, tx, ty = np.concatenate([fi, cf]), np.concatenate([tx, cx]), np.concatenate([ty, cy])
        pieces = np.concatenate([pieces, cp])
    keep = ~(shapely.is_missing(pieces) | shapely.is_empty(pieces))
    return fi[keep], tx[keep], ty[keep], pieces[keep]


# -- geometry commands (MVT 2.1, section 4.3), vectorised -------------------------------------
def commands(xy: np.ndarray, part_sizes: np.ndarray, part_feature: np.ndarray, family: str,
             n_features: int) -> tuple[np.ndarray, np.ndarray]:
    """MVT geometry commands of many features at once.

    Parameters
    ----------
    xy
        Integer tile coordinates (y down) of every part, parts one after the
        other; rings without their closing coordinate, no repeated coordinate.
    part_sizes
        Coordinates of each part (points: 1).
    part_feature
        Output feature of each part (non-decreasing: a feature's parts are
        consecutive).
    family
        ``point``, ``line`` or ``polygon`` (parts are rings: exterior
        clockwise on screen, holes after their exterior).
    n_features
        Number of output features.

    Returns
    -------
    (cmds, offsets)
        uint32 command stream and the start of each feature's commands in it
        (``n_features + 1`` offsets; a feature with no parts has none).
    """
    xy = np.asarray(xy, dtype=np.int64).reshape(-1, 2)
    sizes = np.asarray(part_sizes, dtype=np.int64)
    pfeat = np.asarray(part_feature, dtype=np.int64)
    nparts = len(sizes)
    part_of = np.repeat(np.arange(nparts), sizes)
    first_coord = np.cumsum(sizes) - sizes
    k = np.arange(len(xy)) - first_coord[part_of]
    d = np.diff(xy, axis=0, prepend=np.zeros((1, 2), dtype=np.int64))
    feat_first = np.ones(nparts, dtype=bool)
    feat_first[1:] = pfeat[1:] != pfeat[:-1]
    reset = first_coord[feat_first]  # the cursor starts at (0, 0) in each feature
    d[reset] = xy[reset]
    zz = zigzag(d).astype(np.uint32)  # tile coordinate deltas fit 32 bits
    if family == "point":
        # one MoveTo per feature with all its points
        fsizes = np.bincount(pfeat, weights=sizes, minlength=n_features).astype(np.int64)
        flen = np.where(fsizes > 0, 1 + 2 * fsizes, 0)
        offsets = np.concatenate([[0], np.cumsum(flen)])
        out = np.zeros(offsets[-1], dtype=np.uint32)
        has = fsizes > 0
        out[offsets[:-1][has]] = (fsizes[has] << 3) | _CMD_MOVE
        cfeat = pfeat[part_of]
        kf = np.arange(len(xy)) - (np.cumsum(fsizes) - fsizes)[cfeat]
        pos = offsets[cfeat] + 1 + 2 * kf
        out[pos], out[pos + 1] = zz[:, 0], zz[:, 1]
        return out, offsets
    closed = family == "polygon"
    plen = 4 + 2 * (sizes - 1) + (1 if closed else 0)
    pstart = np.cumsum(plen) - plen
    out = np.zeros(int(plen.sum()), dtype=np.uint32)
    out[pstart] = (1 << 3) | _CMD_MOVE
    out[pstart + 3] = ((sizes - 1) << 3) | _CMD_LINE
    if closed:
        out[pstart + plen - 1] = (1 << 3) | _CMD_CLOSE
    pos = pstart[part_of] + np.where(k == 0, 1, 2 * k + 2)
    out[pos], out[pos + 1] = zz[:, 0], zz[:, 1]
    flen = np.bincount(pfeat, weights=plen, minlength=n_features).astype(np.int64)
    offsets = np.concatenate([[0], np.cumsum(flen)])
    return out, offsets


def _tile_coords(coords: np.ndarray, tx: np.ndarray, ty: np.ndarray, z: int) -> np.ndarray:
    left, top, size = _grid(z)
    scale = EXTENT / size
    x = np.round((coords[:, 0] - (left + tx * size)) * scale)
    y = np.round(((top - ty * size) - coords[:, 1]) * scale)
    return np.column_stack([x, y]).astype(np.int64)


def _parts(geoms: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``shapely.get_parts(geoms, return_index=True)`` without copying the single-part
    geometries (most pieces: a million copies cost seconds)."""
    multi = shapely.get_type_id(geoms) >= 4
    if not multi.any():
        return geoms, np.arange(len(geoms))
    sub, sidx = shapely.get_parts(geoms[multi], return_index=True)
    one = np.flatnonzero(~multi)
    idx = np.concatenate([one, np.flatnonzero(multi)[sidx]])
    order = np.argsort(idx, kind="stable")
    return np.concatenate([geoms[one], sub])[order], idx[order]


def _oriented_rings(polys: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The rings of polygons, exteriors clockwise and holes counter-clockwise (y up),
    read straight from the coordinates (no ring or polygon is copied).

    Returns ``(coords, ring_of_coord, polygon_of_ring, exterior)``: every ring's
    coordinates (closing one included), polygon by polygon, exterior first, as
    ``shapely.get_rings(shapely.orient_polygons(polys, exterior_cw=True))`` gives them.
    """
    nint = shapely.get_num_interior_rings(polys)
    nr = 1 + nint
    first = np.cumsum(nr) - nr
    sizes = np.empty(int(nr.sum()), dtype=np.int64)
    holed = nint > 0
    sizes[first[~holed]] = shapely.get_num_coordinates(polys[~holed])
    if holed.any():
        rings, ri = shapely.get_rings(polys[holed], return_index=True)
        k = np.arange(len(ri)) - (np.cumsum(nr[holed]) - nr[holed])[ri]
        sizes[first[np.flatnonzero(holed)[ri]] + k] = shapely.get_num_coordinates(rings)
    ring = np.repeat(np.arange(len(sizes)), sizes)
    exterior = np.zeros(len(sizes), dtype=bool)
    exterior[first] = True
    coords = orient_rings(shapely.get_coordinates(polys), ring, sizes, exterior)
    return coords, ring, np.repeat(np.arange(len(polys)), nr), exterior


def _unclosed(coords: np.ndarray, ring: np.ndarray, sizes: np.ndarray
              ) -> tuple[np.ndarray, np.ndarray]:
    """Rings' coordinates (``ring``: each one's ring, of ``sizes``) without each ring's
    closing coordinate."""
    keep = np.ones(len(coords), dtype=bool)
    keep[(np.cumsum(sizes) - 1)[sizes > 0]] = False
    return coords[keep], ring[keep]


def _unrepeated(xy: np.ndarray, part: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Tile coordinates (``part``: each one's part) without a part's repeats in a row
    (coordinates that rounding made the same)."""
    same = np.zeros(len(xy), dtype=bool)
    same[1:] = (xy[1:] == xy[:-1]).all(axis=1) & (part[1:] == part[:-1])
    return xy[~same], part[~same]


def simple_parts(merc: Mercator, feats: np.ndarray, tx: np.ndarray, ty: np.ndarray,
                 z: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """:func:`geometry_parts` of features ``feats`` of ``merc`` that are simple
    (:attr:`Mercator.simple`) and lie inside one tile of zoom ``z`` (``tx``, ``ty``),
    read from their coordinates: their pieces are the features themselves, which are
    then not made (a county's parcels and taps are most of the detail zoom's)."""
    coords, size = merc.coords(feats)
    n = len(feats)
    piece = np.repeat(np.arange(n), size)
    if merc.family == "point":
        return _tile_coords(coords, tx, ty, z), size, np.arange(n)
    coords = orient_rings(coords, piece, size, np.ones(n, dtype=bool))
    coords, piece = _unclosed(coords, piece, size)
    xy, piece = _unrepeated(_tile_coords(coords, tx[piece], ty[piece], z), piece)
    sizes = np.bincount(piece, minlength=n)
    ok = sizes >= 3
    return xy[ok[piece]], sizes[ok], np.flatnonzero(ok)


def geometry_parts(pieces: np.ndarray, tx: np.ndarray, ty: np.ndarray, z: int,
                   family: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Tile coordinates of pieces (EPSG:3857) as parts for :func:`commands`.

    Returns
    -------
    (xy, part_sizes, part_piece)
        Coordinates (rings without the closing one, repeats after rounding
        removed), coordinates per part, and the piece each part belongs to.
        Parts that collapse (a line under 2 points, a ring under 3) are
        dropped; so are the holes of a dropped exterior.
    """
    parts, pidx = _parts(pieces)
    ptypes = shapely.get_type_id(parts)
    want = {"point": (0,), "line": (1, 2), "polygon": (3,)}[family]
    keep = np.isin(ptypes, want) & ~shapely.is_empty(parts)
    parts, pidx = parts[keep], pidx[keep]
    if family == "polygon":
        # exterior clockwise in EPSG:3857 = counter-clockwise once y points down, the
        # positive area MVT 2.1 (4.3.4.4) asks of an exterior ring
        coords, cidx, ridx, exterior = _oriented_rings(parts)
        owner = pidx[ridx]
        poly_of_ring = ridx
        coords, cidx = _unclosed(coords, cidx, np.bincount(cidx, minlength=len(ridx)))
        unit_piece = owner
        min_size = 3
    else:
        if family == "line":
            coords, cidx = shapely.get_coordinates(parts, return_index=True)
        else:
            coords = shapely.get_coordinates(parts)
            cidx = np.arange(len(parts))
        unit_piece = pidx
        min_size = 2 if family == "line" else 1
    xy = _tile_coords(coords, tx[unit_piece[cidx]], ty[unit_piece[cidx]], z)
    if family != "point":
        xy, cidx = _unrepeated(xy, cidx)
    sizes = np.bincount(cidx, minlength=len(unit_piece))
    ok = sizes >= min_size
    if family == "polygon":  # (exterior and poly_of_ring: set for polygons above)
        bad_poly = np.unique(poly_of_ring[exterior & ~ok])
        ok &= ~np.isin(poly_of_ring, bad_poly)
    sel = ok[cidx]
    return xy[sel], sizes[ok], unit_piece[ok]


# -- properties -------------------------------------------------------------------------------
@dataclass
class _Columns:
    names: list[str]
    codes: np.ndarray  # (n, ncols) value id (position in table), -1 = missing; int32
    # (int64 beyond 2**31 values)
    table: ValueTable  # every column's distinct values, column after column
    formats: dict[str, list[Any]] = field(default_factory=dict)
    constants: dict[str, Any] = field(default_factory=dict)


def _without_blanks(codes: np.ndarray, uniques: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Text values' codes with the blank values (empty or spaces) made missing (-1)."""
    blank = blank_texts(uniques)
    if not blank.any():
        return codes, uniques
    new = np.where(blank, -1, np.cumsum(~blank) - 1)
    return np.where(codes >= 0, new[np.maximum(codes, 0)], -1), uniques[~blank]


def _without_blank_texts(codes: np.ndarray, texts: pa.Array) -> tuple[np.ndarray, pa.Array]:
    """:func:`_without_blanks` of texts held in Arrow (:data:`BLANK_TEXT`, in RE2)."""
    blank = pc.match_substring_regex(texts, BLANK_TEXT).to_numpy(zero_copy_only=False)
    if not blank.any():
        return codes, texts
    new = np.where(blank, -1, np.cumsum(~blank) - 1)
    return np.where(codes >= 0, new[np.maximum(codes, 0)], -1), texts.filter(pa.array(~blank))


def property_columns(props: Mapping[str, Any], rows: np.ndarray) -> _Columns:
    """Columns of ``props`` (rows ``rows``) as value ids; one-valued columns apart.

    Text stays text; a :class:`~gisnet.maps.encoding.Prop` keeps its number
    (its display format goes to ``formats`` for the page). A column with one
    value on every row is a constant (kept once, not in the tiles), as in
    :func:`gisnet.maps.encoding.encode_layer`.
    """
    from .encoding import format_value

    names: list[str] = []
    cols: list[np.ndarray] = []
    tables: list[ValueTable] = []
    nvalues = 0
    formats: dict[str, list[Any]] = {}
    constants: dict[str, Any] = {}
    for name, col in props.items():
        fmt = col.fmt if isinstance(col, Prop) else None
        numeric = False
        if isinstance(col, TextCodes):
            # the codes of these rows renumbered in order of first appearance: the
            # codes and values pd.factorize gives for the texts themselves
            sub = col.codes[rows]
            present = sub >= 0
            seen, first = pd.factorize(sub[present])
            codes = np.full(len(sub), -1, dtype=np.int64)
            codes[present] = seen
            # the texts stay in Arrow (blanks found by RE2, bytes read from its buffers)
            codes, uniques = _without_blank_texts(codes, col.uniques.take(
                pa.array(first.astype(np.int64, copy=False))))
        else:
            if isinstance(col, Prop):
                arr, kind = col.floats()[rows], "floating"
            else:
                arr = np.asarray(list(col), dtype=object)[rows]
                kind = pd.api.types.infer_dtype(arr, skipna=True)
            numeric = fmt is not None or kind in ("floating", "integer",
                                                  "mixed-integer-float", "decimal")
            if numeric:  # numbers stay numbers (a Prop's display format goes to the page)
                if arr.dtype.kind != "f":
                    arr = pd.to_numeric(pd.Series(arr, dtype=object),
                                        errors="coerce").to_numpy(float)
                codes, uniques = pd.factorize(arr, use_na_sentinel=True)
                uniques = np.asarray(uniques, dtype=float)
            elif kind in ("string", "empty"):
                # distinct values first, then blanks among them: a million ids are
                # hashed once instead of stripped one by one
                codes, uniques = pd.factorize(pd.Series(arr, dtype=object),
                                              use_na_sentinel=True)
                codes, uniques = _without_blanks(codes, np.asarray(uniques, dtype=object))
            else:
                miss = np.array([is_missing(v) for v in arr], dtype=bool)
                arr = arr.astype(object)
                arr[miss] = None
                codes, uniques = pd.factorize(pd.Series(arr, dtype=object).astype(object),
                                              use_na_sentinel=True)
                uniques = np.array([str(u) for u in uniques], dtype=object)
        if len(uniques) == 0:
            continue
        if len(uniques) == 1 and (codes >= 0).all():
            one = float(uniques[0]) if numeric else \
                uniques[0].as_py() if isinstance(uniques, pa.Array) else str(uniques[0])
            constants[name] = format_value(one, fmt)
            continue
        names.append(name)
        # value ids as int32 while they fit (a million rows: 4 MB a column, not 8)
        small = nvalues + len(uniques) < np.iinfo(np.int32).max
        cols.append(np.where(codes >= 0, codes + nvalues, -1).astype(
            np.int32 if small else np.int64, copy=False))
        tables.append(number_table(uniques) if numeric else text_table(
            uniques if isinstance(uniques, pa.Array) else list(uniques)))
        nvalues += len(uniques)
        if fmt is not None:
            formats[name] = list(fmt)
    codes = np.column_stack(cols) if cols else np.zeros((len(rows), 0), dtype=np.int32)
    return _Columns(names, codes, concat_tables(tables), formats, constants)


# -- tiles and archive ------------------------------------------------------------------------
@dataclass
class TileStats:
    """What :func:`write_layer_tiles` wrote."""

    path: Path
    features: int
    tiles: int
    bytes: int
    seconds: float
    family: str
    formats: dict[str, list[Any]]
    constants: dict[str, Any]
    bounds: list[list[float]]
    overview_max: dict[str, int]


def _family(geoms: np.ndarray) -> str:
    fams = {_SHAPELY_FAMILY.get(int(t), "mixed") for t in np.unique(shapely.get_type_id(geoms))}
    if len(fams) != 1 or "mixed" in fams:
        raise ValueError("a tiled layer must hold one geometry family")
    return fams.pop()


def two_point_lines(geoms: np.ndarray) -> np.ndarray:
    """Which of ``geoms`` are two-point flat lines: Douglas-Peucker keeps a line's ends,
    so such a line is its own simplification at every tolerance (a county's mains and
    control paths are mostly these)."""
    return (shapely.get_type_id(geoms) == 1) & (shapely.get_num_coordinates(geoms) == 2) \
        & ~shapely.has_z(geoms)


def strongest_per_tile(tile: np.ndarray, rank: np.ndarray, length: np.ndarray,
                       limit: int) -> np.ndarray:
    """Which pieces to keep so that no tile holds more than ``limit``: in each tile
    the highest ``rank`` first, then the longest (ties: the first)."""
    keep = np.ones(len(tile), dtype=bool)
    if len(tile) == 0:
        return keep
    counts = np.bincount(np.unique(tile, return_inverse=True)[1].reshape(-1))
    if counts.max() <= limit:
        return keep
    order = np.lexsort((np.arange(len(tile)), -length, -rank, tile))
    t = tile[order]
    first = np.r_[True, t[1:] != t[:-1]]
    start = np.maximum.accumulate(np.where(first, np.arange(len(t)), 0))
    keep[order] = (np.arange(len(t)) - start) < limit
    return keep


def layer_tiles(gdf: gpd.GeoDataFrame, props: Mapping[str, Any] | None = None, *,
                style_keys: tuple[str, ...] = (), rank_key: str | None = None,
                max_lines: int | None = None, min_zoom: int = OVERVIEW_MIN_ZOOM,
                detail_zoom: int = DETAIL_ZOOM,
                gzip_level: int | None = None) -> tuple[dict[tuple[int, int, int], bytes],
                                                        dict[str, Any]]:
    """Tiles of one layer: ``{(z, x, y): MVT bytes}`` and facts about them.

    Parameters
    ----------
    gdf
        Features in any projected or geographic CRS (rows without a geometry
        are left out; a feature's id in the tiles is its row position).
    props
        Property name -> one value per row (text list or
        :class:`~gisnet.maps.encoding.Prop`), as for
        :func:`~gisnet.maps.encoding.encode_layer`.
    style_keys
        Properties that decide how a line is drawn: the overview merges a
        tile's lines that share them.
    rank_key, max_lines
        Lines: an overview tile holds at most ``max_lines`` lines (default
        :data:`MAX_OVERVIEW_LINES`), those of the highest ``rank_key`` (a
        numeric property, e.g. the drawn width of a main: the trunks) first,
        then the longest; the others appear at the zooms where a tile holds few
        enough (a browser decoding a county's 300,000 mains at town zoom takes
        seconds). Every line is in the detail tiles.
    min_zoom, detail_zoom
        Overview zooms are ``min_zoom .. detail_zoom - 1``.
    gzip_level
        None: the tiles' bytes uncompressed. A level (0-3, :func:`gzip_tile`): each
        tile gzip-compressed as it is made (an archive's tiles are then held
        compressed, a third of the memory or less).
    """
    max_lines = MAX_OVERVIEW_LINES if max_lines is None else max_lines

    props = dict(props or {})
    geoms = np.asarray(gdf.geometry.array, dtype=object)
    rows = np.flatnonzero(~(shapely.is_missing(geoms) | shapely.is_empty(geoms)))
    if gdf.crs is None:
        from ..errors import ConfigError

        raise ConfigError("layer has no CRS; cannot cut it into map tiles")
    info: dict[str, Any] = {"features": len(rows), "overview_max": {}}
    if len(rows) == 0:
        info.update(family="point", formats={}, constants={}, bounds=None)
        return {}, info
    family = _family(geoms[rows])
    # lines keep their geometry for the overview; polygons and points need only each
    # feature's bounds there, and are rebuilt block by block for the detail zoom
    merc = Mercator(geoms[rows], gdf.crs, family, whole=family == "line")
    bb = merc.bounds
    cols = property_columns(props, rows)
    b = [float(np.nanmin(bb[:, 0])), float(np.nanmin(bb[:, 1])),  # shapely.total_bounds
         float(np.nanmax(bb[:, 2])), float(np.nanmax(bb[:, 3]))]
    ll = gpd.GeoSeries(shapely.points([b[0], b[2]], [b[1], b[3]]), crs="EPSG:3857") \
        .to_crs("EPSG:4326")
    info.update(family=family, formats=cols.formats, constants=cols.constants,
                bounds=[[round(ll.iloc[0].y, 6), round(ll.iloc[0].x, 6)],
                        [round(ll.iloc[1].y, 6), round(ll.iloc[1].x, 6)]])
    out: dict[tuple[int, int, int], bytes] = {}

    def emit(z: int, name: str, tile: np.ndarray, *layer: Any) -> None:
        mask = (1 << z) - 1  # tile ids are x * 2**z + y
        for key, data in encode_tiles(name, tile, *layer):
            out[(z, key >> z, key & mask)] = data if gzip_level is None else \
                gzip_tile(data, gzip_level)

    # detail: every feature with its properties, block of tiles by block of tiles (each
    # tile whole in one block, its features in the same order: the same bytes as all at
    # once); a feature reaching several blocks is cut to each block's tiles in turn
    _, _, size = _grid(detail_zoom)
    tx0, tx1, ty0, ty1 = _tile_range(bb, detail_zoom, size * BUFFER / EXTENT)
    # a simple feature inside one tile (with its buffer) is its own piece there: its
    # parts are read from its coordinates, the rest are made and cut
    one = None if merc.simple is None else merc.simple & (tx0 == tx1) & (ty0 == ty1)
    for x0, x1, y0, y1 in detail_blocks(tx0, tx1, ty0, ty1, _DETAIL_PAIRS):
        sel = np.flatnonzero((tx0 <= x1) & (tx1 >= x0) & (ty0 <= y1) & (ty1 >= y0))
        quick = sel[:0]
        if one is not None:
            quick, sel = sel[one[sel]], sel[~one[sel]]
        fi, tx, ty, pieces = assign_tiles(merc.take(sel), detail_zoom,
                                          window=(x0, x1, y0, y1))
        if len(fi) + len(quick) == 0:
            continue  # the features only pass near the block's tiles
        nq = len(quick)
        fi = np.concatenate([quick, sel[fi]])
        tx, ty = np.concatenate([tx0[quick], tx]), np.concatenate([ty0[quick], ty])
        order = np.lexsort((fi, ty, tx))
        if nq:  # each set's parts, then all in the pieces' order
            place = np.empty(len(order), dtype=np.int64)
            place[order] = np.arange(len(order))
            xy, psizes, ppiece = merged_parts(
                place, nq, simple_parts(merc, quick, tx[:nq], ty[:nq], detail_zoom),
                geometry_parts(pieces, tx[nq:], ty[nq:], detail_zoom, family))
            fi, tx, ty = fi[order], tx[order], ty[order]
        else:
            fi, tx, ty, pieces = fi[order], tx[order], ty[order], pieces[order]
            xy, psizes, ppiece = geometry_parts(pieces, tx, ty, detail_zoom, family)
        cmds, offs = commands(xy, psizes, ppiece, family, len(fi))
        emit(detail_zoom, "features", tx * (1 << detail_zoom) + ty, fi, family, cmds, offs,
             cols.names, cols.codes[fi], cols.table)
        del fi, tx, ty, pieces, xy, psizes, ppiece, cmds, offs
    del tx0, tx1, ty0, ty1
    # overview
    style_idx = [cols.names.index(k) for k in style_keys if k in cols.names]
    if family == "line":
        g = merc.take(np.arange(len(rows)))  # (held whole: no copy)
        if style_idx:
            style_code = np.zeros(len(g), dtype=np.int64)
            for j in style_idx:  # one integer per combination (np.unique(axis=0) is slow)
                c = cols.codes[:, j] + 1
                style_code = style_code * (int(c.max()) + 1) + c
            style_code = np.unique(style_code, return_inverse=True)[1].reshape(-1)
        else:
            style_code = np.zeros(len(g), dtype=np.int64)
        rank = np.zeros(len(g))
        if rank_key is not None and rank_key in props:
            col = props[rank_key]
            num = col.floats() if isinstance(col, Prop) else pd.to_numeric(
                pd.Series(list(col), dtype=object), errors="coerce").to_numpy(float)
            rank = np.nan_to_num(num[rows], nan=-np.inf)
        length = shapely.length(g)
        bare = two_point_lines(g)
        cx, cy = (bb[:, 0] + bb[:, 2]) / 2, (bb[:, 1] + bb[:, 3]) / 2
        info["overview_lines_left_out"] = {}
        for z in range(detail_zoom - 1, min_zoom - 1, -1):
            left, top, size = _grid(z)
            # first by the tile holding each line's centre (before any line is
            # simplified or cut), then by every tile a kept line reaches
            home = np.floor((cx - left) / size).astype(np.int64) * (1 << z) \
                + np.floor((top - cy) / size).astype(np.int64)
            sub = np.flatnonzero(strongest_per_tile(home, rank, length, max_lines))
            gz = g[sub]
            more = np.flatnonzero(~bare[sub])  # (the others are their own simplification)
            if len(more):
                gz[more] = shapely.simplify(gz[more], size / 512.0, preserve_topology=False)
            fi, tx, ty, pieces = assign_tiles(gz, z)
            fi = sub[fi]
            keep = strongest_per_tile(tx * (1 << z) + ty, rank[fi], length[fi], max_lines)
            info["overview_lines_left_out"][str(z)] = int(len(g) - len(sub) + len(keep)
                                                          - keep.sum())
            fi, tx, ty, pieces = fi[keep], tx[keep], ty[keep], pieces[keep]
            grp_key = (tx * (1 << z) + ty) * (int(style_code.max()) + 1) + style_code[fi]
            order = np.argsort(grp_key, kind="stable")
            fi, tx, ty, pieces, grp_key = fi[order], tx[order], ty[order], pieces[order], \
                grp_key[order]
            _, grp = np.unique(grp_key, return_inverse=True)
            xy, psizes, ppiece = geometry_parts(pieces, tx, ty, z, family)
            ngroups = int(grp.max()) + 1 if len(grp) else 0
            cmds, offs = commands(xy, psizes, grp[ppiece], family, ngroups)
            first = np.flatnonzero(np.diff(grp, prepend=-1))
            codes = cols.codes[fi[first]][:, style_idx] if style_idx else \
                np.zeros((len(first), 0), dtype=np.int64)
            emit(z, "overview", tx[first] * (1 << z) + ty[first], np.arange(len(first)),
                 family, cmds, offs, [cols.names[i] for i in style_idx], codes, cols.table)
    else:
        cx, cy = (bb[:, 0] + bb[:, 2]) / 2, (bb[:, 1] + bb[:, 3]) / 2
        for z in range(detail_zoom - 1, min_zoom - 1, -1):
            left, top, size = _grid(z)
            cell = size / GRID
            gx = np.floor((cx - left) / cell).astype(np.int64)
            gy = np.floor((top - cy) / cell).astype(np.int64)
            # one int64 per cell, ordered by tile then cell (np.unique(axis=0) is slow)
            ntile = 1 << z
            key = (((gx // GRID) * ntile + gy // GRID) * GRID + gx % GRID) * GRID + gy % GRID
            ukey, counts = np.unique(key, return_counts=True)
            tile_id, cell = ukey // (GRID * GRID), ukey % (GRID * GRID)
            cells = np.column_stack([tile_id // ntile, tile_id % ntile,
                                     (tile_id // ntile) * GRID + cell // GRID,
                                     (tile_id % ntile) * GRID + cell % GRID])
            info["overview_max"][str(z)] = int(counts.max())
            u = EXTENT // GRID
            lx, ly = (cells[:, 2] % GRID) * u, (cells[:, 3] % GRID) * u
            sq = np.stack([np.column_stack([lx, ly]), np.column_stack([lx + u, ly]),
                           np.column_stack([lx + u, ly + u]), np.column_stack([lx, ly + u])],
                          axis=1).reshape(-1, 2)
            n = len(cells)
            cmds, offs = commands(sq, np.full(n, 4), np.arange(n), "polygon", n)
            ucount, code = np.unique(counts, return_inverse=True)
            emit(z, "overview", cells[:, 0] * (1 << z) + cells[:, 1], np.arange(n), "polygon",
                 cmds, offs, ["n"], code.reshape(-1, 1), number_table(ucount))
    return out, info


def write_layer_tiles(path: str | os.PathLike[str], gdf: gpd.GeoDataFrame,
                      props: Mapping[str, Any] | None = None, *, name: str = "",
                      style_keys: tuple[str, ...] = (),
                      rank_key: str | None = None) -> TileStats:
    """Cut a layer into tiles (:func:`layer_tiles`) and write its PMTiles archive."""
    import time

    t0 = time.perf_counter()
    tiles, info = layer_tiles(gdf, props, style_keys=style_keys, rank_key=rank_key,
                              gzip_level=GZIP_LEVEL)
    meta = {"name": name, "format": "pbf", "generator": "gisnet",
            "bounds": info["bounds"],
            "vector_layers": [{"id": "features", "minzoom": DETAIL_ZOOM,
                               "maxzoom": DETAIL_ZOOM},
                              {"id": "overview", "minzoom": OVERVIEW_MIN_ZOOM,
                               "maxzoom": DETAIL_ZOOM - 1}],
            "gisnet": {"family": info["family"], "formats": info["formats"],
                       "constants": info["constants"], "overview_max": info["overview_max"],
                       "overview_lines_left_out": info.get("overview_lines_left_out", {})}}
    size = write_archive(path, tiles, meta, compressed=True)
    return TileStats(Path(path), info["features"], len(tiles), size,
                     time.perf_counter() - t0, info["family"], info["formats"],
                     info["constants"], info["bounds"] or [], info["overview_max"])


__all__ = ["BUFFER", "DETAIL_ZOOM", "EXTENT", "GRID", "GZIP_LEVEL", "OVERVIEW_MIN_ZOOM",
           "TileStats", "assign_tiles", "commands", "encode_tiles", "geometry_parts",
           "gzip_tile", "layer_tiles",
           "property_columns", "read_tile", "tile_bounds", "value_table", "write_archive",
           "write_layer_tiles"]
