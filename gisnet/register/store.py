"""Where the register lives: a GeoPackage of its own beside the results, or a PostGIS table.

A folder output ``DIR`` keeps the register in ``DIR/gisnet-register.gpkg``
(table ``register``, an attribute table QGIS opens and edits), never in
``gisnet-results.gpkg``: a run publishes a new results GeoPackage by replacing
the file (:mod:`gisnet.output.publish`), and the register file is no part of a
run's output set, so a run never writes it, moves it or removes it. A database
output ``postgresql://...?schema=S`` keeps it in the table ``S.register``,
which no run drops, truncates or rewrites.

gisnet itself only ever appends rows (:func:`add_entries`, one transaction:
SQLite's or PostgreSQL's), and creates the register when it is absent
(:func:`ensure_register`). Rows staff add or change by hand (in QGIS) are read
as they are, checked (:func:`gisnet.register.entries.checked`).
"""

from __future__ import annotations

import os
import sqlite3
import tempfile
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import pandas as pd

from ..errors import ConfigError
from ..io.postgis import DEFAULT_SCHEMA, connect, detail, is_database, parse_database
from .entries import COLUMNS, NAMES, Entry, checked, utc_now

#: The register's file in a folder output.
REGISTER_FILE = "gisnet-register.gpkg"
#: The register's table (in that file, or in the output schema).
REGISTER_TABLE = "register"

_SQLITE_TYPES = {"integer": "INTEGER", "text": "TEXT", "date": "DATE"}
_PG_TYPES = {"integer": "bigint", "text": "text", "date": "date"}


def register_place(out: str | os.PathLike[str]) -> str:
    """Where the register of output ``out`` is, for messages (password removed)."""
    if is_database(out):
        db = parse_database(out)
        return f"{db.shown} (table {db.schema or DEFAULT_SCHEMA}.{REGISTER_TABLE})"
    return str(Path(out) / REGISTER_FILE)


# --------------------------------------------------------------------------- GeoPackage


def _gpkg_create_sql() -> list[str]:
    cols = ", ".join(
        f'"{name}" INTEGER PRIMARY KEY AUTOINCREMENT' if name == "entry_id"
        else f'"{name}" {_SQLITE_TYPES[typ]}' + (" NOT NULL" if name in ("parcel_id", "event")
                                                 else "")
        for name, (typ, _m) in COLUMNS.items())
    return [
        "PRAGMA application_id = 1196444487",  # 'GPKG'
        "PRAGMA user_version = 10300",
        "CREATE TABLE gpkg_spatial_ref_sys (srs_name TEXT NOT NULL, srs_id INTEGER PRIMARY "
        "KEY, organization TEXT NOT NULL, organization_coordsys_id INTEGER NOT NULL, "
        "definition TEXT NOT NULL, description TEXT)",
        "INSERT INTO gpkg_spatial_ref_sys VALUES ('Undefined cartesian SRS', -1, 'NONE', -1, "
        "'undefined', 'undefined cartesian coordinate reference system'), ('Undefined "
        "geographic SRS', 0, 'NONE', 0, 'undefined', 'undefined geographic coordinate "
        "reference system')",
        "CREATE TABLE gpkg_contents (table_name TEXT NOT NULL PRIMARY KEY, data_type TEXT NOT "
        "NULL, identifier TEXT UNIQUE, description TEXT DEFAULT '', last_change DATETIME NOT "
        "NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ','now')), min_x DOUBLE, min_y DOUBLE, "
        "max_x DOUBLE, max_y DOUBLE, srs_id INTEGER)",
        "CREATE TABLE gpkg_geometry_columns (table_name TEXT NOT NULL, column_name TEXT NOT "
        "NULL, geometry_type_name TEXT NOT NULL, srs_id INTEGER NOT NULL, z TINYINT NOT NULL, "
        "m TINYINT NOT NULL, CONSTRAINT pk_geom_cols PRIMARY KEY (table_name, column_name))",
        f'CREATE TABLE "{REGISTER_TABLE}" ({cols})',
        f"INSERT INTO gpkg_contents (table_name, data_type, identifier, description) VALUES "
        f"('{REGISTER_TABLE}', 'attributes', '{REGISTER_TABLE}', 'The connection register: "
        "notices drafted and served, grounds, receipts, inspections, connections, kept by "
        "staff; gisnet reads it on every run and only appends to it')",
    ]


def _ensure_gpkg(path: Path) -> None:
    """Create the register GeoPackage at ``path`` when absent (atomically: made beside
    it, then linked into place, so an existing register is never replaced)."""
    if path.exists():
        if not path.is_file():
            raise ConfigError("the register is not a file", path=path)
        return
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.p{os.getpid()}.", suffix=".tmp",
                                   dir=path.parent)
    except OSError as exc:
        raise ConfigError(f"cannot create the register: {exc.strerror or exc}",
                          path=path) from exc
    os.close(fd)
    try:
        con = sqlite3.connect(tmp)
        try:
            for stmt in _gpkg_create_sql():
                con.execute(stmt)
            con.commit()
        finally:
            con.close()
        os.chmod(tmp, 0o644)
        try:
            os.link(tmp, path)  # fails if another process made it meanwhile: keep theirs
        except FileExistsError:
            pass
        except OSError:  # no hard links (some file systems): rename unless it exists
            if not path.exists():
                os.replace(tmp, path)
    finally:
        Path(tmp).unlink(missing_ok=True)


def _read_gpkg(path: Path) -> pd.DataFrame:
    where = f"{path}: table {REGISTER_TABLE}"
    try:
        con = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    except sqlite3.Error as exc:
        raise ConfigError(f"cannot read the register: {exc}", path=path) from None
    try:
        df = pd.read_sql_query(f'SELECT * FROM "{REGISTER_TABLE}" ORDER BY entry_id', con)
    except (sqlite3.Error, pd.errors.DatabaseError) as exc:
        raise ConfigError(f"cannot read the register: {exc}", path=path) from None
    finally:
        con.close()
    return checked(df, where)


def _append_gpkg(path: Path, rows: list[dict[str, Any]]) -> list[int]:
    names = [n for n in NAMES if n != "entry_id"]
    sql = (f'INSERT INTO "{REGISTER_TABLE}" ({", ".join(names)}) '
           f'VALUES ({", ".join("?" for _ in names)})')
    con = sqlite3.connect(path, timeout=30)
    try:
        ids = []
        with con:  # one transaction: all the entries or none
            con.execute("BEGIN IMMEDIATE")
            for r in rows:
                cur = con.execute(sql, [r[n] for n in names])
                ids.append(int(cur.lastrowid or 0))
            con.execute("UPDATE gpkg_contents SET last_change = strftime("
                        "'%Y-%m-%dT%H:%M:%fZ','now') WHERE table_name = ?", (REGISTER_TABLE,))
        return ids
    except sqlite3.Error as exc:
        raise ConfigError(f"cannot add to the register: {exc}", path=path) from None
    finally:
        con.close()


# --------------------------------------------------------------------------- PostGIS


def pg_create_sql(schema: str) -> Any:
    """``CREATE TABLE IF NOT EXISTS schema.register (...)`` (psycopg SQL)."""
    from psycopg import sql

    defs = [sql.SQL("{} bigserial PRIMARY KEY").format(sql.Identifier("entry_id"))]
    defs += [sql.SQL("{} {}{}").format(sql.Identifier(n), sql.SQL(_PG_TYPES[t]),
                                       sql.SQL(" NOT NULL" if n in ("parcel_id", "event")
                                               else ""))
             for n, (t, _m) in COLUMNS.items() if n != "entry_id"]
    return sql.SQL("CREATE TABLE IF NOT EXISTS {} ({})").format(
        sql.Identifier(schema, REGISTER_TABLE), sql.SQL(", ").join(defs))


def pg_ensure(cur: Any, schema: str) -> None:
    """Create the schema and its register table when absent, with comments."""
    from psycopg import sql

    cur.execute(sql.SQL("CREATE SCHEMA IF NOT EXISTS {}").format(sql.Identifier(schema)))
    cur.execute("SELECT to_regclass(%s)", (f'"{schema}"."{REGISTER_TABLE}"',))
    if cur.fetchone()[0] is not None:
        return
    cur.execute(pg_create_sql(schema))
    ident = sql.Identifier(schema, REGISTER_TABLE)
    cur.execute(sql.SQL("COMMENT ON TABLE {} IS {}").format(ident, sql.Literal(
        "The connection register, kept by staff: gisnet reads it on every run and only "
        "appends to it (gisnet register add, gisnet notices); no run drops or rewrites it")))
    for n, (_t, meaning) in COLUMNS.items():
        cur.execute(sql.SQL("COMMENT ON COLUMN {}.{} IS {}").format(
            ident, sql.Identifier(n), sql.Literal(meaning)))


def pg_read(cur: Any, schema: str, shown: str) -> pd.DataFrame | None:
    """The register table of ``schema`` checked, or None when there is none."""
    from psycopg import sql

    cur.execute("SELECT to_regclass(%s)", (f'"{schema}"."{REGISTER_TABLE}"',))
    if cur.fetchone()[0] is None:
        return None
    cur.execute(sql.SQL("SELECT {} FROM {} ORDER BY entry_id").format(
        sql.SQL(", ").join(sql.Identifier(n) for n in NAMES),
        sql.Identifier(schema, REGISTER_TABLE)))
    df = pd.DataFrame(cur.fetchall(), columns=list(NAMES))
    return checked(df, f"{shown}: table {schema}.{REGISTER_TABLE}")


def _pg_read(url: Any) -> pd.DataFrame:
    db = parse_database(url)
    schema = db.schema or DEFAULT_SCHEMA
    with connect(db, what="register database", error=ConfigError, read_only=True) as conn:
        try:
            with conn.cursor() as cur:
                got = pg_read(cur, schema, db.shown)
        except ConfigError:
            raise
        except Exception as exc:
            raise ConfigError(f"cannot read the register: {detail(exc)}",
                              path=db.shown) from None
    return got if got is not None else empty_register()


def _pg_append(url: Any, rows: list[dict[str, Any]]) -> list[int]:
    from psycopg import sql

    db = parse_database(url)
    schema = db.schema or DEFAULT_SCHEMA
    names = [n for n in NAMES if n != "entry_id"]
    with connect(db, what="register database", error=ConfigError) as conn:
        try:
            with conn.transaction(), conn.cursor() as cur:
                pg_ensure(cur, schema)
                stmt = sql.SQL("INSERT INTO {} ({}) VALUES ({}) RETURNING entry_id").format(
                    sql.Identifier(schema, REGISTER_TABLE),
                    sql.SQL(", ").join(sql.Identifier(n) for n in names),
                    sql.SQL(", ").join(sql.Placeholder() for _ in names))
                ids = []
                for r in rows:
                    cur.execute(stmt, [r[n] for n in names])
                    ids.append(int(cur.fetchone()[0]))
                return ids
        except ConfigError:
            raise
        except Exception as exc:
            raise ConfigError(f"cannot add to the register: {detail(exc)}",
                              path=db.shown) from None


# --------------------------------------------------------------------------- either


def empty_register() -> pd.DataFrame:
    """A register of no entries (its columns)."""
    return pd.DataFrame({n: pd.Series(dtype=object) for n in NAMES})


def read_register(out: str | os.PathLike[str]) -> pd.DataFrame:
    """The register of output ``out`` (a folder or a PostGIS URL), checked; empty when
    there is none yet.

    Raises
    ------
    ConfigError
        The register cannot be read, or a row is unusable (the entry and the problem named).
    """
    if is_database(out):
        return _pg_read(out)
    path = Path(out) / REGISTER_FILE
    if not path.is_file():
        return empty_register()
    return _read_gpkg(path)


def ensure_register(out: str | os.PathLike[str]) -> str:
    """Create the register of a folder output when absent; returns its place.
    (A database output's register is created by the run's own transaction.)"""
    if not is_database(out):
        _ensure_gpkg(Path(out) / REGISTER_FILE)
    return register_place(out)


def add_entries(out: str | os.PathLike[str], entries: Iterable[Entry], *,
                town: Any = None) -> list[int]:
    """Append entries to the register of ``out`` in one transaction (creating it).

    Parameters
    ----------
    out
        The output folder or PostGIS URL the register belongs to.
    entries
        The entries; each is checked first (:meth:`Entry.check`).
    town
        When given, the register file is checked not to be one of its inputs.

    Returns
    -------
    list of int
        The new entries' ids.
    """
    place = register_place(out)
    todo = list(entries)
    for e in todo:
        e.check(place)
    if not todo:
        return []
    now = utc_now()
    rows = [e.row(now) for e in todo]
    if is_database(out):
        return _pg_append(out, rows)
    path = Path(out) / REGISTER_FILE
    if town is not None:
        from ..output.guard import guard_outputs

        if not path.exists():
            guard_outputs([path], town=town, what="register")
    _ensure_gpkg(path)
    return _append_gpkg(path, rows)
