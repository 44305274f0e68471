"""``gisnet sample DIR``: copy the bundled sample town out, to edit and run.

The sample town is package data (``gisnet/sample``, read through
:mod:`importlib.resources`). The copy is a town folder like any other: its
``gisnet.toml`` and layers, ``plant_flows.csv``, ``samples.csv`` (lab results)
and a README. A folder that already holds a ``gisnet.toml`` or any file the
copy would write is refused unless ``--force``, which overwrites those files
(each written atomically) and never deletes anything else.
"""

from __future__ import annotations

import argparse
import shlex
from pathlib import Path

from ..errors import ConfigError
from .common import say


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "sample",
        help="copy the bundled sample town into a folder, to look at, edit and run",
        description="Write the sample town bundled with gisnet (synthetic, CC0) into DIR: "
                    "its gisnet.toml, shapefiles, plant_flows.csv, samples.csv and README.md. "
                    "Then: cd DIR && gisnet run. ('gisnet run --sample' runs it without a "
                    "copy.)",
    )
    p.add_argument("dir", type=Path, metavar="DIR",
                   help="folder to write the sample town into (created if needed)")
    p.add_argument("--force", action="store_true",
                   help="overwrite the sample's files where DIR already has them (other "
                        "files in DIR are left as they are, never deleted)")
    p.add_argument("-q", "--quiet", action="store_true", help="print nothing but errors")
    p.add_argument("-v", "--verbose", action="store_true", help="log every step")
    p.set_defaults(func=run)


def sample_files() -> dict[str, bytes]:
    """The bundled sample town's files: name -> content, in name order.

    Raises
    ------
    ConfigError
        The install has no sample town.
    """
    from ..townfile import sample_resource

    folder = sample_resource()
    return {f.name: f.read_bytes()
            for f in sorted(folder.iterdir(), key=lambda f: f.name) if f.is_file()}


def _is_the_sample(target: Path) -> bool:
    from ..townfile import sample_resource

    source = sample_resource()
    return isinstance(source, Path) and target.exists() and \
        target.resolve() == source.resolve()


def copy_sample(target: str | Path, *, force: bool = False) -> list[Path]:
    """Write the bundled sample town into the folder ``target``.

    Parameters
    ----------
    target
        The folder (created with its parents if needed).
    force
        Overwrite the sample's files where ``target`` already has them. Other
        files in ``target`` are never touched.

    Returns
    -------
    list of Path
        The files written, in name order.

    Raises
    ------
    ConfigError
        ``target`` is a file, is the bundled sample itself, or (without
        ``force``) already holds a ``gisnet.toml`` or a file of the sample;
        or a file cannot be written.
    """
    from ..output import atomic_path, ensure_out_dir
    from ..townfile import TOWN_FILE

    out = Path(target)
    if out.exists() and not out.is_dir():
        raise ConfigError("is an existing file, not a folder: give a folder to write the "
                          "sample town into", path=out)
    if _is_the_sample(out):
        raise ConfigError("is the bundled sample town itself: give another folder", path=out)
    files = sample_files()
    if not force and out.is_dir():
        clash = sorted((n for n in files if (out / n).exists() or (out / n).is_symlink()),
                       key=lambda n: (n != TOWN_FILE, n))  # the town file named first
        if clash:
            shown = ", ".join(clash[:4]) + (f" and {len(clash) - 4} more" if len(clash) > 4
                                            else "")
            raise ConfigError(f"already holds {shown}: give a new or empty folder, or "
                              f"--force to overwrite the sample's files (nothing else in it "
                              f"is touched)", path=out)
    folders = [n for n in files if (out / n).is_dir()]
    if folders:  # found before anything is written, even with --force
        raise ConfigError(f"holds a folder named {folders[0]}, where the sample town has a "
                          f"file: give another folder", path=out)
    ensure_out_dir(out, "sample town folder")
    written = []
    for name, data in files.items():
        with atomic_path(out / name, f"sample town file {name}") as tmp:
            tmp.write_bytes(data)
        written.append(out / name)
    return written


def _leftovers(out: Path, written: list[Path]) -> list[str]:
    """Files in ``out`` beside a written shapefile that share its name but are not
    the sample's (a spatial index of an old layer, ``parcels.qix``...)."""
    names = {p.name for p in written}
    stems = {p.name.split(".")[0] for p in written if p.suffix == ".shp"}
    return sorted(p.name for p in out.iterdir()
                  if p.name not in names and p.name.split(".")[0] in stems)


def run(args: argparse.Namespace) -> int:
    out: Path = args.dir
    written = copy_sample(out, force=args.force)
    layers = sorted(p.stem for p in written if p.suffix == ".shp")
    say(args, f"gisnet sample: wrote {len(written)} files to {out}: gisnet.toml, "
              f"{len(layers)} shapefile layers ({', '.join(layers)}), "
              + ", ".join(p.name for p in written
                          if p.suffix in (".csv", ".md", ".json")))
    kept = _leftovers(out, written)
    if kept:
        say(args, f"kept (not the sample's; remove them if they belonged to the layers "
                  f"overwritten): {', '.join(kept)}")
    say(args, f"next: cd {shlex.quote(str(out))} && gisnet run")
    return 0
