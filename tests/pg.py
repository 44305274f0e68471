"""A throw-away PostgreSQL + PostGIS server for the tests.

:func:`start_cluster` runs ``initdb`` and ``pg_ctl`` from
``/usr/lib/postgresql/*/bin`` on a temporary folder and a free port (as the
``postgres`` user through ``runuser`` when the tests run as root, since initdb
refuses root), with password (SCRAM) authentication over TCP, and creates a
database with ``CREATE EXTENSION postgis``. The password reaches clients only
through a ``.pgpass`` file (``PGPASSFILE``), as a utility's credentials would.
:func:`load_layers` copies a town's layers into it (``ogr2ogr`` is not needed:
:func:`gisnet.output.postgis.copy_table` writes them).

Without the PostgreSQL binaries :func:`need_postgres` skips with the reason,
except under CI (``CI=true``), where a missing server fails the test.
"""

from __future__ import annotations

import glob
import os
import shutil
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import pytest
from servers import free_port

PASSWORD = "s3cret-Town-Pw"
USER = "postgres"
DATABASE = "town"


@dataclass
class Cluster:
    """A running test server."""

    root: Path
    data: Path
    port: int
    bin: Path
    pgpass: Path

    @property
    def url(self) -> str:
        """``postgresql://`` URL of the test database (no password: .pgpass has it)."""
        return f"postgresql://{USER}@127.0.0.1:{self.port}/{DATABASE}"

    @property
    def pg(self) -> str:
        """The same database as a GDAL-style ``PG:`` string."""
        return f"PG:host=127.0.0.1 port={self.port} user={USER} dbname={DATABASE}"

    def connect(self, **kw):
        import psycopg

        return psycopg.connect(self.url, autocommit=True, **kw)


def pg_bin() -> Path | None:
    """The newest ``/usr/lib/postgresql/N/bin`` holding initdb and pg_ctl, or None."""
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"),
                   key=lambda p: int(Path(p).parent.parent.name)
                   if Path(p).parent.parent.name.isdigit() else 0)
    return Path(found[-1]).parent if found else None


def need_postgres() -> Path:
    """The PostgreSQL binaries, else skip (or fail under CI=true) with the reason."""
    b = pg_bin()
    why = None
    if b is None:
        why = "PostgreSQL server binaries not found (/usr/lib/postgresql/*/bin/initdb)"
    elif not glob.glob(str(b.parent.parent.parent.parent / "share/postgresql/*/extension/"
                            "postgis.control")):
        why = "PostGIS extension not installed (postgresql-NN-postgis-3)"
    if why is not None:
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(f"{why}; CI must install postgresql and postgis (.ci/run)")
        pytest.skip(why)
    return b


def _as_postgres(cmd: list[str]) -> list[str]:
    return ["runuser", "-u", "postgres", "--", *cmd] if os.geteuid() == 0 else cmd


def start_cluster() -> Cluster:
    """Start a server on a temporary folder and a free port (see the module)."""
    b = need_postgres()
    root = Path(tempfile.mkdtemp(prefix="gisnet-pg-"))
    data = root / "data"
    pwfile = root / "pw"
    pwfile.write_text(PASSWORD + "\n")
    if os.geteuid() == 0:
        shutil.chown(root, "postgres")
        shutil.chown(pwfile, "postgres")
    root.chmod(0o700)
    port = free_port()
    run = dict(check=True, capture_output=True, text=True, timeout=120)
    subprocess.run(_as_postgres([str(b / "initdb"), "-D", str(data), "-U", USER,
                                 "--pwfile", str(pwfile), "--auth-local=trust",
                                 "--auth-host=scram-sha-256", "-E", "UTF8",
                                 "--locale=C"]), **run)
    opts = f"-p {port} -k {root} -c listen_addresses=127.0.0.1 -c fsync=off"
    subprocess.run(_as_postgres([str(b / "pg_ctl"), "-D", str(data), "-l",
                                 str(root / "log"), "-o", opts, "-w", "start"]), **run)
    pgpass = Path(tempfile.mkdtemp(prefix="gisnet-pgpass-")) / "pgpass"
    pgpass.write_text(f"127.0.0.1:{port}:*:{USER}:{PASSWORD}\n")
    pgpass.chmod(0o600)
    c = Cluster(root, data, port, b, pgpass)
    os.environ["PGPASSFILE"] = str(pgpass)
    for _ in range(50):
        try:
            import psycopg

            with psycopg.connect(f"postgresql://{USER}@127.0.0.1:{port}/postgres",
                                 autocommit=True) as conn:
                conn.execute(f"CREATE DATABASE {DATABASE}")
            break
        except Exception:  # not accepting connections yet
            time.sleep(0.2)
    with c.connect() as conn:
        conn.execute("CREATE EXTENSION postgis")
    return c


def stop_cluster(c: Cluster) -> None:
    """Stop the server and remove its folders."""
    subprocess.run(_as_postgres([str(c.bin / "pg_ctl"), "-D", str(c.data), "-m", "immediate",
                                 "stop"]), capture_output=True, timeout=60)
    shutil.rmtree(c.root, ignore_errors=True)
    shutil.rmtree(c.pgpass.parent, ignore_errors=True)


def load_layers(c: Cluster, layers: dict[str, object], schema: str = "public") -> None:
    """Write source layers (GeoDataFrames as read) as tables ``schema.<name>`` with an
    ``fid`` primary key in row order and their own SRID."""
    from gisnet.output.postgis import copy_table

    with c.connect() as conn, conn.cursor() as cur:
        cur.execute(f'CREATE SCHEMA IF NOT EXISTS "{schema}"')
        for name, gdf in layers.items():
            cur.execute(f'DROP TABLE IF EXISTS "{schema}"."{name}"')
            srid = gdf.crs.to_epsg() if getattr(gdf, "crs", None) is not None else 0
            copy_table(cur, schema, name, gdf, srid or 0)
