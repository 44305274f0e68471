"""The ordinance a profile is read from, as text (``[profile] source``).

The two built-in profiles name texts shipped with gisnet in ``gisnet/ordinances/``
(``source = "ordinances/berlin-nh.txt"``), read through :mod:`importlib.resources`
so that they are found wherever gisnet is installed. A town's own profile may
name its own text by a path relative to the profile file (or an absolute one);
a relative path not found there is looked up among the shipped texts, so a
copied and edited built-in profile still finds its ordinance.

Examples
--------
>>> text = ordinance_text("poughkeepsie-fourth-ward")
>>> "within 300 feet of the property line" in text
True
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path

from ..errors import ConfigError
from .load import load_profile
from .sections import Profile

#: The folder of the shipped ordinance texts, as a ``source`` names it.
ORDINANCES = "ordinances"


def builtin_ordinances() -> list[str]:
    """The ``source`` of every ordinance text shipped with gisnet (``ordinances/*.txt``)."""
    folder = resources.files("gisnet").joinpath(ORDINANCES)
    return sorted(f"{ORDINANCES}/{f.name}" for f in folder.iterdir()
                  if f.is_file() and f.name.endswith(".txt"))


def ordinance_text(profile: Profile | str | Path) -> str:
    """The full text of the ordinance a profile cites, exactly as stored (UTF-8).

    Parameters
    ----------
    profile
        A loaded :class:`Profile`, or what :func:`load_profile` takes (a built-in
        name such as ``berlin-nh``, or the path of a profile TOML).

    Returns
    -------
    str
        The text named by ``[profile] source``, decoded from UTF-8 with its line
        endings untouched.

    Raises
    ------
    ConfigError
        The source is a URL (gisnet reads only local texts), or names no
        readable file: neither beside the profile file nor among the texts
        shipped in ``gisnet/ordinances/``. The message names the profile file
        and the source.
    """
    prof = load_profile(profile)
    source = prof.profile.source.strip()
    where = prof.path if prof.path is not None else "<profile>"
    if "://" in source:
        raise ConfigError(f"[profile] source {source!r} is a URL; gisnet reads the ordinance "
                          "only from a local text file", path=where)
    path = Path(source).expanduser()
    candidates = [path] if path.is_absolute() else (
        [prof.path.parent / path] if prof.path is not None else [])
    for p in candidates:
        if p.is_file():
            return _decode(p.read_bytes(), source, where)
    if not path.is_absolute():
        shipped = resources.files("gisnet").joinpath(*path.parts)
        if shipped.is_file():
            return _decode(shipped.read_bytes(), source, where)
    looked = ("at that path" if path.is_absolute() else
              ("beside the profile file and " if prof.path is not None else "")
              + "among the shipped texts: " + ", ".join(builtin_ordinances()))
    raise ConfigError(f"[profile] source {source!r}: no such ordinance text (looked {looked})",
                      path=where)


def _decode(data: bytes, source: str, where: object) -> str:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ConfigError(f"[profile] source {source!r} is not UTF-8 text: {exc}",
                          path=where) from None
