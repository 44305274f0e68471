"""A run's outputs, all or nothing: a staging folder, one publish step, a manifest.

``gisnet run`` writes its whole output set (GeoPackage, tables, pages) into a
staging folder inside the output folder (:func:`staging_area`), then
:func:`publish` moves it into place:

1. the manifest ``gisnet-manifest.json`` (run id, time, gisnet version, town
   file hash, profile id, every file with its sha256) is written into the
   staging folder and every staged file is flushed to disk;
2. the staging folder is renamed ``.gisnet-publish-<pid>-<run id>``: the
   **commit point** (one ``rename`` in one folder, atomic on POSIX and NTFS);
3. each file is moved onto its final name with :func:`os.replace` in a fixed
   order (the GeoPackage, the tables, the pages), ``gisnet-manifest.json``
   last; files the previous manifest listed and this run did not write are
   removed (only if unchanged since that run wrote them);
4. the empty publish folder is removed.

The guarantee: a run killed before step 2 leaves the previous outputs exactly
as they were (whole, and matching their manifest); a run killed after step 2
has committed, and the next gisnet command on that folder (``gisnet run``,
``gisnet map``, :func:`read_manifest`) completes steps 3-4 from the publish
folder (:func:`recover`). A program that reads the files directly during the
few renames of step 3 can see a new GeoPackage beside old pages; it can tell,
because the manifest still names the old files' hashes (:func:`check_manifest`).

Leftovers of killed runs (staging folders, and the temporary files of
:func:`gisnet.io.write_results` and :func:`gisnet.io.atomic_path`) are removed
by the next run (:func:`remove_leftovers`); a folder or file whose process is
still alive is left alone. Publishing and clean-up hold an advisory lock on
``.gisnet-lock`` in the output folder, so two runs into one folder publish one
after the other, never interleaved.
"""

from __future__ import annotations

import ctypes
import datetime as _dt
import functools
import hashlib
import json
import logging
import os
import re
import shutil
import threading
import time
import uuid
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path, PurePosixPath
from typing import Any

from ..errors import ConfigError
from ._testhooks import kill_point
from .writing import RESULTS_FILE, ensure_out_dir, input_files

log = logging.getLogger(__name__)

__all__ = ["MANIFEST_FILE", "check_manifest", "publish",
           "read_manifest", "recover", "remove_leftovers", "staging_area", "update_manifest"]

#: The manifest's file name, in the output folder.
MANIFEST_FILE = "gisnet-manifest.json"
#: Manifest format version.
MANIFEST_FORMAT = 1
STAGING_PREFIX = ".gisnet-staging-"
PUBLISH_PREFIX = ".gisnet-publish-"
LOCK_FILE = ".gisnet-lock"
_OBSOLETE = ".obsolete.json"
#: Temporary files older than this (seconds) whose writer is unknown are stale.
STALE_AFTER_S = 3600.0

#: The writer's process id in a temporary name: ``-p<pid>-`` or ``.p<pid>.``.
_PID = re.compile(r"[-.]p(\d+)[-.]")


#: Bytes hashed at a time. Each block takes the GIL twice (read, hash); beside
#: threads that hold it, a take waits up to the switch interval (5 ms): 1 MiB blocks
#: made a 1.4 GB GeoPackage's hash 9 s on a thread of a starting service, 1 s alone.
HASH_BLOCK = 16 << 20


def sha256_file(path: Path) -> str:
    """The sha256 of a file, hex (read :data:`HASH_BLOCK` bytes at a time into one
    buffer, no larger than the file)."""
    h = hashlib.sha256()
    with open(path, "rb", buffering=0) as f:
        size = os.fstat(f.fileno()).st_size
        view = memoryview(bytearray(min(max(size, 1), HASH_BLOCK)))
        while n := f.readinto(view):
            h.update(view[:n])
    return h.hexdigest()


#: Hashes made as files were finished (:func:`remember_sha256`, :func:`remember_bytes`),
#: by path, with the file's identity then (device, inode, size, modification time in
#: ns). Only files inside a live staging area (:func:`staging_area`) are remembered,
#: and its entries go with it: the dict never outlives the run that reads it.
_REMEMBERED: dict[str, tuple[tuple[int, int, int, int], str]] = {}
_REMEMBERED_LOCK = threading.Lock()
#: The live staging areas, resolved, each with a separator at its end.
_STAGES: set[str] = set()


def _identity(path: Path) -> tuple[int, int, int, int]:
    st = path.stat()
    return st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns


@functools.lru_cache(maxsize=256)
def _resolved_dir(folder: str) -> str:
    return str(Path(folder).resolve())


def _key(path: Path) -> str | None:
    """The remembered-hash key of ``path`` (its folder resolved once), or None when
    it is in no live staging area."""
    key = os.path.join(_resolved_dir(str(path.parent)), path.name)
    return key if any(key.startswith(s) for s in tuple(_STAGES)) else None  # (a copy: atomic)


def remember_sha256(path: Path) -> None:
    """Hash a file just finished (on the thread that finished it, beside other work)
    for :func:`make_manifest`, which takes the hash while the file is unchanged: same
    device, inode, size and modification time. Only a file of a staging area is
    hashed (:func:`staging_area`); elsewhere nothing is done."""
    key = _key(path)
    if key is None:
        return
    before = _identity(path)
    digest = sha256_file(path)
    if _identity(path) == before:
        with _REMEMBERED_LOCK:
            _REMEMBERED[key] = (before, digest)


def remember_bytes(path: Path, data: bytes) -> None:
    """Remember the hash of ``data``, just written as the whole of ``path`` (a
    file of a staging area; nothing is done elsewhere), for :func:`make_manifest`:
    the bytes are hashed from memory, not read back."""
    key = _key(path)
    if key is None:
        return
    digest = hashlib.sha256(data).hexdigest()
    before = _identity(path)
    if before[2] == len(data):
        with _REMEMBERED_LOCK:
            _REMEMBERED[key] = (before, digest)


def _sha256_remembered(path: Path) -> str:
    key = _key(path)
    if key is not None:
        with _REMEMBERED_LOCK:
            known = _REMEMBERED.pop(key, None)
        if known is not None and known[0] == _identity(path):
            return known[1]
    return sha256_file(path)


def _forget(stage: Path) -> None:
    """Drop a staging area's remembered hashes (it is published or gone)."""
    prefix = _resolved_dir(str(stage)) + os.sep
    with _REMEMBERED_LOCK:
        _STAGES.discard(prefix)
        for key in [k for k in _REMEMBERED if k.startswith(prefix)]:
            del _REMEMBERED[key]


def _each_file(fn: Any, paths: Sequence[Path]) -> list[Any]:
    """``[fn(p) for p in paths]`` on gisnet's threads (:func:`gisnet.threads.chunked`):
    reading, hashing (``hashlib`` lets go of the GIL for blocks) and ``fsync`` wait on
    the disk or run in C, so a run's thousands of files (tile archives, search shards)
    go through two at a time."""
    from ..threads import chunked, default_threads

    return [r for part in chunked(len(paths), default_threads(),
                                  lambda lo, hi: [fn(p) for p in paths[lo:hi]], min_n=64)
            for r in part]


def sha256_files(paths: Sequence[Path]) -> list[str]:
    """:func:`sha256_file` of each of ``paths``, in their order (on gisnet's threads)."""
    return _each_file(sha256_file, paths)


def _fsync(path: Path) -> None:
    """Flush a file or a folder to disk (a folder only where the OS allows it)."""
    flags = os.O_RDONLY | (getattr(os, "O_DIRECTORY", 0) if path.is_dir() else 0)
    try:
        fd = os.open(path, flags)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


#: Files flushed one by one below this many; above, the whole file system at once.
_SYNCFS_MIN_FILES = 64


def _syncfs(folder: Path) -> bool:
    """Flush the file system holding ``folder`` with one ``syncfs`` (Linux): a
    run's thousands of tiles and search shards in one journal commit, not one
    each. False where the call is not there or fails."""
    try:
        fn = ctypes.CDLL(None, use_errno=True).syncfs
    except (AttributeError, OSError):
        return False
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return False
    try:
        return bool(fn(fd) == 0)
    finally:
        os.close(fd)


def _sync_files(folder: Path, paths: Sequence[Path]) -> None:
    """Flush ``paths`` (files of ``folder``) to disk: each with ``fsync``, or, for
    many files all on ``folder``'s file system, that file system at once
    (:func:`_syncfs`; what else it holds is flushed too)."""
    if len(paths) >= _SYNCFS_MIN_FILES:
        dev = folder.stat().st_dev
        if all(p.stat().st_dev == dev for p in paths) and _syncfs(folder):
            return
    _each_file(_fsync, paths)


def _pid_alive(pid: int) -> bool:
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _owner_pid(name: str) -> int | None:
    m = _PID.search(name)
    return int(m.group(1)) if m else None


@contextmanager
def folder_lock(out: Path) -> Iterator[None]:
    """Hold an advisory lock on ``out/.gisnet-lock`` (POSIX ``flock``; none elsewhere)."""
    try:
        import fcntl
    except ImportError:  # pragma: no cover - Windows
        yield
        return
    fd = os.open(out / LOCK_FILE, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        fcntl.flock(fd, fcntl.LOCK_UN)
        os.close(fd)


# ---------------------------------------------------------------------------
# clean-up and recovery
# ---------------------------------------------------------------------------


def _is_stale(p: Path) -> bool:
    pid = _owner_pid(p.name)
    if pid is not None:
        return not _pid_alive(pid)
    try:
        return time.time() - p.stat().st_mtime > STALE_AFTER_S
    except OSError:
        return False


def remove_leftovers(out_dir: str | os.PathLike[str]) -> list[Path]:
    """Remove what killed runs left in ``out_dir``: staging folders, temporary
    GeoPackages (``.gisnet-results-*.gpkg`` and their journals) and temporary
    files (``.NAME.*.tmp``) in the folder and in ``tables/``; a committed publish
    folder is completed first (:func:`recover`). Returns what was removed."""
    out = Path(out_dir)
    if not out.is_dir():
        return []
    recover(out)
    removed: list[Path] = []
    candidates = [p for p in out.iterdir() if p.name.startswith(STAGING_PREFIX)]
    for folder in (out, out / "tables"):
        if folder.is_dir():
            candidates += [p for p in folder.iterdir() if p.is_file() and (
                (p.name.startswith(".gisnet-results-") and ".gpkg" in p.name)
                or (p.name.startswith(".") and p.name.endswith(".tmp")))]
    for p in candidates:
        if not _is_stale(p):
            continue
        if p.is_dir():
            shutil.rmtree(p, ignore_errors=True)
        else:
            p.unlink(missing_ok=True)
        removed.append(p)
    if removed:
        log.info("removed %d leftover(s) of killed runs in %s", len(removed), out)
    return removed


def _move_all(pub: Path, out: Path, order: Sequence[str]) -> None:
    """Step 3 of :func:`publish`: move the files of ``pub`` onto ``out`` in ``order``
    (relative paths; the manifest last), then remove the obsolete files."""
    made: set[Path] = set()
    for rel in order:
        src, dst = pub / rel, out / rel
        if dst.parent not in made:  # (a run's thousands of tiles share a folder)
            dst.parent.mkdir(parents=True, exist_ok=True)
            made.add(dst.parent)
        try:
            os.replace(src, dst)
        except FileNotFoundError:
            if src.exists():
                raise
            continue  # moved before a kill
        kill_point("publish")
    obsolete = pub / _OBSOLETE
    if obsolete.exists():
        for rel in json.loads(obsolete.read_text(encoding="utf-8")):
            (out / rel).unlink(missing_ok=True)
    _fsync(out)
    shutil.rmtree(pub, ignore_errors=True)


def _order(files: Iterable[str]) -> list[str]:
    """The fixed publish order: GeoPackage, tables, pages, other files, manifest last."""
    def rank(rel: str) -> tuple[int, str]:
        if rel == RESULTS_FILE:
            return 0, rel
        if rel.startswith("tables/"):
            return 1, rel
        if rel.endswith(".html"):
            return 2, rel
        if rel == MANIFEST_FILE:
            return 9, rel
        return 3, rel
    return sorted(files, key=rank)


def recover(out_dir: str | os.PathLike[str]) -> bool:
    """Complete a publish that was committed (the publish folder exists) but not
    finished because the process died. Returns True when one was completed."""
    out = Path(out_dir)
    if not out.is_dir():
        return False
    done = False
    for pub in sorted(p for p in out.iterdir() if p.name.startswith(PUBLISH_PREFIX)):
        pid = _owner_pid(pub.name)
        if pid is not None and _pid_alive(pid) and pid != os.getpid():
            continue  # still publishing
        with folder_lock(out):
            if not pub.exists():
                continue
            man = pub / MANIFEST_FILE
            if man.exists():
                files = list(json.loads(man.read_text(encoding="utf-8"))["files"])
                log.warning("completing the publish of an interrupted run in %s", out)
                _move_all(pub, out, _order([*files, MANIFEST_FILE]))
                done = True
            else:  # the manifest was the last file moved: only the empty folder is left
                shutil.rmtree(pub, ignore_errors=True)
    return done


# ---------------------------------------------------------------------------
# staging and publishing
# ---------------------------------------------------------------------------


def new_run_id() -> str:
    """A run id: UTC time and a random suffix."""
    stamp = _dt.datetime.now(_dt.UTC).strftime("%Y%m%dT%H%M%SZ")
    return f"{stamp}-{uuid.uuid4().hex[:8]}"


@contextmanager
def staging_area(out_dir: str | os.PathLike[str], run_id: str) -> Iterator[Path]:
    """A fresh staging folder ``out_dir/.gisnet-staging-p<pid>-<run id>``.

    Leftovers of killed runs are removed first (:func:`remove_leftovers`). The
    folder is removed when the block fails; :func:`publish` moves it away when
    it succeeds.
    """
    out = ensure_out_dir(out_dir)
    remove_leftovers(out)
    stage = out / f"{STAGING_PREFIX}p{os.getpid()}-{run_id}"
    try:
        stage.mkdir()
    except OSError as exc:
        raise ConfigError(f"cannot write the output folder: {exc.strerror or exc}",
                          path=out) from exc
    kill_point("staging")
    with _REMEMBERED_LOCK:
        _STAGES.add(_resolved_dir(str(stage)) + os.sep)
    try:
        yield stage
    finally:
        _forget(stage)
        if stage.exists():
            shutil.rmtree(stage, ignore_errors=True)


def staged_files(stage: Path) -> list[str]:
    """Relative paths (``/``-separated) of the files in a staging folder, sorted."""
    return sorted(p.relative_to(stage).as_posix() for p in stage.rglob("*")
                  if p.is_file() and not p.name.startswith("."))


def make_manifest(stage: Path, *, run_id: str, town: Any,
                  unavailable: Mapping[str, str] | None = None,
                  town_info: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The manifest of the files in ``stage`` for a run on ``town``; its ``town_info``
    (:func:`~gisnet.output.town_record.town_record`, or ``town_info`` when made
    before the town's layers were let go) is what ``gisnet serve --results`` needs
    of the town, ``unavailable`` the analyses not computed."""
    from .. import __version__
    from .town_record import town_record

    town_file = town.settings.extra.get("town_file")
    town_file = Path(town_file) if town_file is not None else None
    rels = staged_files(stage)
    files = {rel: {"sha256": digest, "bytes": (stage / rel).stat().st_size}
             for rel, digest in zip(rels, _each_file(_sha256_remembered,
                                                    [stage / r for r in rels]), strict=True)}
    return {
        "format": MANIFEST_FORMAT,
        "run_id": run_id,
        "created_utc": _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds"),
        "gisnet_version": __version__,
        "town": town.name,
        "town_file": None if town_file is None else str(town_file.resolve()),
        "town_file_sha256": (sha256_file(town_file) if town_file is not None
                             and town_file.is_file() else None),
        "profile_id": str(town.profile.profile.id),
        "town_info": dict(town_info) if town_info is not None
        else town_record(town, unavailable),
        "files": files,
    }


def _obsolete(out: Path, new_files: Iterable[str], town: Any) -> list[str]:
    """Files the current manifest lists, this run does not write, unchanged since
    gisnet wrote them, and not an input of ``town``."""
    old = read_manifest_file(out)
    if old is None:
        return []
    keep = set(new_files)
    inputs = input_files(town)
    gone = []
    for rel, rec in sorted(old.get("files", {}).items()):
        p = out / rel
        if rel in keep or p.resolve() in inputs or not p.is_file():
            continue
        if sha256_file(p) == rec.get("sha256"):
            gone.append(rel)
    return gone


def publish(stage: Path, out_dir: str | os.PathLike[str], manifest: Mapping[str, Any],
            town: Any) -> list[Path]:
    """Publish a staging folder in one step (see the module docstring for the
    guarantee). Returns the published files, in publish order (manifest last)."""
    out = Path(out_dir)
    rels = _order([*manifest["files"], MANIFEST_FILE])
    (stage / MANIFEST_FILE).write_text(json.dumps(manifest, indent=2, sort_keys=True) + "\n",
                                       encoding="utf-8")
    _sync_files(stage, [stage / rel for rel in rels])
    with folder_lock(out):
        (stage / _OBSOLETE).write_text(json.dumps(_obsolete(out, rels, town)),
                                       encoding="utf-8")
        # the folders that hold the files (found from their paths, not by a walk)
        for d in {stage, *(stage / p for rel in rels for p in PurePosixPath(rel).parents)}:
            _fsync(d)
        pub = out / stage.name.replace(STAGING_PREFIX, PUBLISH_PREFIX, 1)
        os.rename(stage, pub)  # the commit point
        _fsync(out)
        kill_point("commit")
        _move_all(pub, out, rels)
    return [out / rel for rel in rels]


# ---------------------------------------------------------------------------
# reading and checking
# ---------------------------------------------------------------------------


def read_manifest_file(out_dir: str | os.PathLike[str]) -> dict[str, Any] | None:
    """The manifest of ``out_dir`` as stored, or None when there is none."""
    path = Path(out_dir) / MANIFEST_FILE
    if not path.is_file():
        return None
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ConfigError(f"the run manifest cannot be read ({exc})", path=path) from exc
    if not isinstance(data, dict) or not isinstance(data.get("files"), dict):
        raise ConfigError("the run manifest has no 'files' table", path=path)
    return data


def read_manifest(out_dir: str | os.PathLike[str]) -> dict[str, Any] | None:
    """The manifest of ``out_dir`` after completing any interrupted publish
    (:func:`recover`), or None when the folder has none."""
    recover(out_dir)
    return read_manifest_file(out_dir)


def check_manifest(out_dir: str | os.PathLike[str],
                   names: Iterable[str] | None = None) -> list[str]:
    """What in ``out_dir`` does not match its manifest (after :func:`recover`).

    Parameters
    ----------
    out_dir
        The output folder of a run.
    names
        Relative paths to check (default: every file the manifest lists).

    Returns
    -------
    list of str
        One line per problem (``"gisnet-results.gpkg: changed since run ..."``);
        empty when everything matches. No manifest is one problem.
    """
    man = read_manifest(out_dir)
    out = Path(out_dir)
    if man is None:
        return [f"{MANIFEST_FILE}: missing (not written by a whole gisnet run)"]
    files = man["files"]
    rels = sorted(files) if names is None else list(names)
    there = [rel for rel in rels if rel in files and (out / rel).is_file()]
    digests = dict(zip(there, sha256_files([out / rel for rel in there]), strict=True))
    problems = []
    for rel in rels:
        rec = files.get(rel)
        if rec is None:
            problems.append(f"{rel}: not part of run {man.get('run_id')}")
        elif rel not in digests:
            problems.append(f"{rel}: missing (run {man.get('run_id')} wrote it)")
        elif digests[rel] != rec.get("sha256"):
            problems.append(f"{rel}: changed since run {man.get('run_id')} wrote it")
    return problems


def update_manifest(out_dir: str | os.PathLike[str], written: Iterable[Path]) -> None:
    """Record new hashes of ``written`` files (pages rewritten by ``gisnet map``
    from the run's own GeoPackage) in the manifest, atomically."""
    from .writing import atomic_write_text

    out = Path(out_dir)
    man = read_manifest_file(out)
    if man is None:
        return
    for p in written:
        rel = Path(p).resolve().relative_to(out.resolve()).as_posix()
        man["files"][rel] = {"sha256": sha256_file(Path(p)), "bytes": Path(p).stat().st_size}
    atomic_write_text(out / MANIFEST_FILE, json.dumps(man, indent=2, sort_keys=True) + "\n",
                      "run manifest")

