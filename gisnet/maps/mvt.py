"""Mapbox Vector Tile protobuf bytes built with numpy (MVT 2.1, ``vector_tile.proto``).

:func:`encode_tiles` writes every tile of one layer at one zoom in one pass: each
feature's fields (``id``, ``tags``, ``type``, ``geometry``) as varints of one
array, each tile's ``values`` gathered from the layer's values encoded once
(:func:`value_table`), fields in field-number order: the bytes the protobuf
classes of ``mapbox-vector-tile`` give for the same message
(``tests/test_tiles.py`` compares them byte for byte). Filling those classes
costs a Python call per feature with the GIL held (about 4 µs); this costs
1.7-3 µs a feature, in numpy (see :mod:`gisnet.maps.tiles`).
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import Any

import numpy as np

#: Tile coordinate extent (MVT default).
EXTENT = 4096
#: ``Feature.type`` of each geometry family.
FAMILY_TYPES = {"point": 1, "line": 2, "polygon": 3}
#: Features encoded together (bounds the working arrays: a few tens of MB).
_CHUNK_FEATURES = 65_536
#: Text values encoded together.
_CHUNK_VALUES = 131_072
_MAX_VARINT_BYTES = 10


def _varint_sizes(v: np.ndarray) -> np.ndarray:
    """Bytes of each unsigned value as a protobuf varint."""
    v = np.asarray(v, dtype=np.uint64)
    n = np.ones(len(v), dtype=np.int64)
    for k in range(1, _MAX_VARINT_BYTES):
        more = v >= np.uint64(1 << (7 * k)) if 7 * k < 64 else np.zeros(len(v), dtype=bool)
        if not more.any():
            break
        n += more
    return n


def _varints(v: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Unsigned values as consecutive protobuf varints: (bytes, start of each value)."""
    v = np.asarray(v, dtype=np.uint64)
    size = _varint_sizes(v)
    start = np.cumsum(size) - size
    out = np.empty(int(size.sum()), dtype=np.uint8)
    more = size > 1
    out[start] = ((v & np.uint64(0x7F)) | (more.astype(np.uint64) << np.uint64(7))).astype(
        np.uint8)
    idx = np.flatnonzero(more)  # the values with bytes left, narrowed byte by byte
    rest = v[idx] >> np.uint64(7)
    k = 1
    while len(idx):
        more = size[idx] > k + 1
        out[start[idx] + k] = ((rest & np.uint64(0x7F))
                               | (more.astype(np.uint64) << np.uint64(7))).astype(np.uint8)
        idx, rest = idx[more], rest[more] >> np.uint64(7)
        k += 1
    return out, start


def _varint(n: int) -> bytes:
    """One unsigned value as a protobuf varint."""
    out = bytearray()
    while n >= 0x80:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def _field(tag: int, payload: bytes) -> bytes:
    return bytes([tag]) + _varint(len(payload)) + payload


@dataclass
class ValueTable:
    """Every value of a layer as a ``Layer.values`` field (tag 4, a ``Value`` message):
    bytes ``buf[start[i]:start[i] + size[i]]`` for value ``i``."""

    buf: np.ndarray
    start: np.ndarray
    size: np.ndarray


def _message_fields(msg_size: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray,
                                                   np.ndarray]:
    """Room for ``values`` fields (tag 4, length-delimited) around messages of
    ``msg_size`` bytes: (buffer with tags and lengths written, field start, field size,
    where each message begins)."""
    msg_size = msg_size.astype(np.uint64)
    head = _varint_sizes(msg_size)
    size = 1 + head + msg_size.astype(np.int64)
    start = np.cumsum(size) - size
    buf = np.zeros(int(size.sum()), dtype=np.uint8)
    buf[start] = 0x22
    hb, _ = _varints(msg_size)
    buf[_spread(start + 1, head)] = hb
    return buf, start, size, start + 1 + head


def _utf8_of_arrow(texts: Any) -> tuple[np.ndarray, np.ndarray]:
    """Each text's UTF-8 length and all their bytes, read from the buffers of an Arrow
    ``string`` / ``large_string`` array without nulls (no Python string made)."""
    import pyarrow as pa

    if texts.null_count:
        raise ValueError("text values must not be null")
    offs_type = np.int64 if pa.types.is_large_string(texts.type) else np.int32
    _, obuf, dbuf = texts.buffers()
    n, at = len(texts), texts.offset
    offs = np.frombuffer(obuf, dtype=offs_type, count=at + n + 1)[at:].astype(np.int64)
    data = np.frombuffer(dbuf, dtype=np.uint8) if dbuf is not None and dbuf.size \
        else np.zeros(0, dtype=np.uint8)
    return np.diff(offs), data[offs[0]:offs[-1]]


def text_table(texts: Any) -> ValueTable:
    """Text values as ``Value.string_value`` (field 1): a list of ``str``, or an
    Arrow string array (read from its buffers: no Python string per value)."""
    if len(texts) > _CHUNK_VALUES:  # bounds the index arrays (8 bytes per text byte)
        return concat_tables([text_table(texts[i:i + _CHUNK_VALUES])
                               for i in range(0, len(texts), _CHUNK_VALUES)])
    if not isinstance(texts, list):
        tlen, utf8 = _utf8_of_arrow(texts)
        return _text_fields(tlen, utf8)
    joined = "".join(texts)
    raw = joined.encode("utf-8")
    if len(raw) == len(joined):  # ASCII: a byte per character
        tlen = np.fromiter(map(len, texts), dtype=np.int64, count=len(texts))
    else:
        tlen = np.fromiter((len(t.encode("utf-8")) for t in texts), dtype=np.int64,
                           count=len(texts))
    return _text_fields(tlen, np.frombuffer(raw, dtype=np.uint8))


def _text_fields(tlen: np.ndarray, utf8: np.ndarray) -> ValueTable:
    """``values`` fields of texts of UTF-8 lengths ``tlen``, bytes ``utf8`` end to end."""
    lsize = _varint_sizes(tlen)
    buf, start, size, body = _message_fields(1 + lsize + tlen)
    buf[body] = 0x0A
    lb, _ = _varints(tlen)
    buf[_spread(body + 1, lsize)] = lb
    buf[_spread(body + 1 + lsize, tlen)] = utf8
    return ValueTable(buf, start, size)


def number_table(nums: np.ndarray) -> ValueTable:
    """Numbers as ``Value.sint_value`` (field 6, zigzag varint) when whole and below
    2**53, else ``Value.double_value`` (field 3, 8 bytes little-endian)."""
    num = np.asarray(nums, dtype=float)
    whole = np.isfinite(num) & (num == np.round(num)) & (np.abs(num) < 2.0 ** 53)
    zz = zigzag(np.where(whole, num, 0).astype(np.int64))
    zsize = _varint_sizes(zz)
    buf, start, size, body = _message_fields(np.where(whole, 1 + zsize, 9))
    w, d = np.flatnonzero(whole), np.flatnonzero(~whole)
    buf[body[w]] = 0x30
    zb, _ = _varints(zz[w])
    buf[_spread(body[w] + 1, zsize[w])] = zb
    buf[body[d]] = 0x19
    buf[_spread(body[d] + 1, np.full(len(d), 8))] = num[d].astype("<f8").view(np.uint8)
    return ValueTable(buf, start, size)


def concat_tables(tables: list[ValueTable]) -> ValueTable:
    if not tables:
        return ValueTable(np.zeros(0, dtype=np.uint8), np.zeros(0, dtype=np.int64),
                           np.zeros(0, dtype=np.int64))
    shift = np.cumsum([0] + [len(t.buf) for t in tables[:-1]])
    return ValueTable(np.concatenate([t.buf for t in tables]),
                       np.concatenate([t.start + s for t, s in zip(tables, shift, strict=True)]),
                       np.concatenate([t.size for t in tables]))


def value_table(values: list[Any]) -> ValueTable:
    """Encode ``values`` (text, or numbers: whole ones as ``sint_value``, others as
    ``double_value``) once for all the tiles of a layer."""
    is_text = np.fromiter((isinstance(v, str) for v in values), dtype=bool, count=len(values))
    ti, ni = np.flatnonzero(is_text), np.flatnonzero(~is_text)
    t = concat_tables([text_table([values[i] for i in ti.tolist()]),
                        number_table(np.array([float(values[i]) for i in ni.tolist()]))])
    order = np.argsort(np.concatenate([ti, ni]), kind="stable")  # back to the given order
    return ValueTable(t.buf, t.start[order], t.size[order])


def _spread(start: np.ndarray, size: np.ndarray) -> np.ndarray:
    """Positions ``start[i], start[i] + 1, ..., start[i] + size[i] - 1`` for every i."""
    total = int(size.sum())
    if total == 0:
        return np.zeros(0, dtype=np.int64)
    first = np.cumsum(size) - size
    return np.arange(total) - np.repeat(first - start, size)


def zigzag(v: np.ndarray) -> np.ndarray:
    """Signed integers zigzag-encoded (protobuf ``sint``, MVT parameter integers)."""
    v = np.asarray(v).astype(np.int64)
    return ((v << 1) ^ (v >> 63)).astype(np.uint64)


def encode_tiles(name: str, tile: np.ndarray, fid: np.ndarray, family: str, cmds: np.ndarray,
                 offsets: np.ndarray, keys: list[str], codes: np.ndarray,
                 table: ValueTable) -> list[tuple[int, bytes]]:
    """Mapbox Vector Tiles of one layer at one zoom, all tiles at once.

    Parameters
    ----------
    name
        The layer's name in each tile.
    tile
        Each feature's tile (any integer id, non-decreasing: a tile's features
        are consecutive).
    fid
        Each feature's id.
    family
        ``point``, ``line`` or ``polygon`` (the features' ``type``).
    cmds, offsets
        Geometry commands of the features, feature ``i`` in
        ``cmds[offsets[i]:offsets[i + 1]]`` (:func:`commands`); features with
        none are left out.
    keys, codes
        Property names and each feature's value per name (rows of ``codes``,
        positions in ``table``; -1 = no value).
    table
        The values (:func:`value_table`).

    Returns
    -------
    list of (tile, bytes)
        One uncompressed tile per tile id that holds a feature: a ``Tile`` with
        one ``Layer`` (version 2, :data:`EXTENT`) whose ``values`` are those its
        features use, in the order of ``table``; the bytes a protobuf library
        gives for the same message (fields in number order).
    """
    offsets = np.asarray(offsets, dtype=np.int64)
    lens = np.diff(offsets)
    keep = lens > 0
    tile, fid = np.asarray(tile, dtype=np.int64)[keep], np.asarray(fid, dtype=np.int64)[keep]
    codes = np.asarray(codes, dtype=np.int64).reshape(len(keep), -1)[keep]
    if not keep.all():
        cmds = cmds[_spread(offsets[:-1][keep], lens[keep])]
    lens = lens[keep]
    offsets = np.concatenate([[0], np.cumsum(lens)])
    gtype = FAMILY_TYPES[family]
    name_part = _field(0x0A, name.encode("utf-8"))  # Layer.name (1)
    keys_part = b"".join(_field(0x1A, k.encode("utf-8")) for k in keys)  # Layer.keys (3)
    tail = b"\x28" + _varint(EXTENT) + b"\x78\x02"  # extent (5), version (15)
    nv = max(len(table.size), 1)
    out: list[tuple[int, bytes]] = []
    firsts = np.flatnonzero(np.diff(tile, prepend=-1)) if len(tile) else np.zeros(0, np.int64)
    bounds = [0]
    while bounds[-1] < len(tile):  # chunks of whole tiles
        nxt = int(np.searchsorted(firsts, bounds[-1] + _CHUNK_FEATURES, side="left"))
        end = int(firsts[nxt]) if nxt < len(firsts) else len(tile)
        bounds.append(end)
    for f0, f1 in itertools.pairwise(bounds):
        n = f1 - f0
        tl = tile[f0:f1]
        first = np.diff(tl, prepend=-1) != 0
        tidx = np.cumsum(first) - 1
        ntile = int(tidx[-1]) + 1
        tfirst = np.flatnonzero(first)
        feat = np.arange(n)
        # tags: (key, value) pairs, values numbered per tile in the order of the table
        c = codes[f0:f1]
        has = c >= 0
        ntag = 2 * has.sum(axis=1)
        efeat, ecol = np.nonzero(has)
        pair = tidx[efeat] * nv + c[has]
        upair, inv = np.unique(pair, return_inverse=True)
        utile, ucode = upair // nv, upair % nv
        local = np.arange(len(upair)) - np.searchsorted(utile, utile, side="left")
        tags = np.empty(2 * len(efeat), dtype=np.uint64)
        tags[0::2] = ecol
        tags[1::2] = local[inv.reshape(-1)]
        tag_bytes = np.bincount(np.repeat(feat, ntag), weights=_varint_sizes(tags),
                                minlength=n).astype(np.int64)
        cm = np.asarray(cmds[offsets[f0]:offsets[f1]], dtype=np.uint64)
        ln = lens[f0:f1]
        geom_bytes = np.bincount(np.repeat(feat, ln), weights=_varint_sizes(cm),
                                 minlength=n).astype(np.int64)
        ids = fid[f0:f1].astype(np.uint64)
        tagged = ntag > 0
        body = (1 + _varint_sizes(ids)
                + np.where(tagged, 1 + _varint_sizes(tag_bytes.astype(np.uint64)) + tag_bytes, 0)
                + 2 + 1 + _varint_sizes(geom_bytes.astype(np.uint64)) + geom_bytes)
        # varints of each feature field: 0x12 body | 0x08 id | [0x12 tag_bytes tags...]
        # | 0x18 type | 0x22 geom_bytes cmds...
        ntok = 8 + np.where(tagged, 2 + ntag, 0) + ln
        ts = np.cumsum(ntok) - ntok
        tok = np.empty(int(ntok.sum()), dtype=np.uint64)
        tok[ts], tok[ts + 1], tok[ts + 2], tok[ts + 3] = 0x12, body, 0x08, ids
        p = ts + 4
        t = np.flatnonzero(tagged)
        tok[p[t]], tok[p[t] + 1] = 0x12, tag_bytes[t]
        tok[_spread(p[t] + 2, ntag[t])] = tags
        p = p + np.where(tagged, 2 + ntag, 0)
        tok[p], tok[p + 1], tok[p + 2], tok[p + 3] = 0x18, gtype, 0x22, geom_bytes
        tok[_spread(p + 4, ln)] = cm
        fbuf, tstart = _varints(tok)
        fstart = tstart[ts]
        fbytes = fbuf.tobytes()
        fb = np.append(fstart[tfirst], len(fbuf)).tolist()
        # each tile's values
        vsize = table.size[ucode]
        vbuf = table.buf[_spread(table.start[ucode], vsize)].tobytes()
        vb = np.concatenate([[0], np.cumsum(np.bincount(utile, weights=vsize,
                                                        minlength=ntile))]).astype(np.int64)
        vb = vb.tolist()
        fixed = len(name_part) + len(keys_part) + len(tail)
        for i, tid in enumerate(tl[tfirst].tolist()):
            feats = fbytes[fb[i]:fb[i + 1]]
            vals = vbuf[vb[i]:vb[i + 1]]
            size = fixed + len(feats) + len(vals)
            out.append((tid, b"\x1a" + _varint(size) + name_part + feats + keys_part + vals
                        + tail))
    return out


__all__ = ["EXTENT", "FAMILY_TYPES", "ValueTable", "concat_tables", "encode_tiles",
           "number_table", "text_table", "value_table", "zigzag"]
