"""What every profile table shares: typed keys, conversion from TOML, range checks.

A table of a profile (``[connection]``, each ``[[approvals]]`` entry ...) is a
frozen dataclass deriving from :class:`ProfileTable`. Its fields are the TOML
keys, in file order: a field without a default is a required key, a field
declared with ``key(..., optional=True)`` an optional one that reads as None
when the file leaves it out. The field's type says how the TOML value is
checked and converted (:func:`field_kind`); its metadata carry the meaning
(``doc``) and the unit (``unit``). :meth:`ProfileTable.problems` lists range
and enumeration problems; they are raised when the table is built.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import math
import types
import typing
from collections.abc import Callable, Iterator, Mapping
from functools import cache
from typing import Any, ClassVar, TypeVar

from ..errors import ConfigError

T = TypeVar("T", bound="ProfileTable")


class FrozenMap(Mapping[Any, Any]):
    """A read-only mapping (picklable, copyable, hashable) for the sub-tables of a profile."""

    __slots__ = ("_d",)
    _d: dict[Any, Any]

    def __init__(self, data: Mapping[Any, Any] | None = None) -> None:
        object.__setattr__(self, "_d", dict(data or {}))

    def __getitem__(self, key: Any) -> Any:
        return self._d[key]

    def __iter__(self) -> Iterator[Any]:
        return iter(self._d)

    def __len__(self) -> int:
        return len(self._d)

    def __setattr__(self, key: str, value: Any) -> None:
        raise AttributeError("profile tables are read-only")

    def __reduce__(self) -> tuple[Any, ...]:
        return (FrozenMap, (self._d,))

    def __repr__(self) -> str:
        return repr(self._d)

    def __eq__(self, other: object) -> bool:
        return dict(self._d) == (dict(other) if isinstance(other, Mapping) else other)

    def __hash__(self) -> int:
        return hash(frozenset(self._d.items()))


def key(doc: str, unit: str | None = None, *, optional: bool = False) -> Any:
    """Declare a profile key: a dataclass field carrying its meaning and unit.

    Parameters
    ----------
    doc
        What the key means (one sentence or two).
    unit
        Its unit (``ft``, ``gpd``, ``ft/s`` ...), None for text, flags and counts
        without one.
    optional
        An optional key (default None); otherwise the file must give it.
    """
    meta = {"doc": doc, "unit": unit}
    if optional:
        return dataclasses.field(default=None, metadata=meta)
    return dataclasses.field(metadata=meta)


def qualified(label: str, key: str) -> str:
    """``label.key`` (``key`` may be empty, or start with an index ``[i]``)."""
    if not key:
        return label
    if not label or key.startswith("["):
        return f"{label}{key}"
    return f"{label}.{key}"


class InvalidValue(ConfigError):
    """A value out of range or not allowed, found when a table is built.

    ``label`` is the table (``connection``, ``limits.parameter``), ``key`` the key
    within it (may be empty: the table itself); the loader re-raises it naming
    the file and the table's place in it (``approvals[2].flow_gpd``).
    """

    def __init__(self, label: str, key: str, problem: str) -> None:
        self.key = key
        self.problem = problem
        super().__init__(f"key {qualified(label, key)} {problem}")


class ProfileTable:
    """Base of the profile's tables: frozen dataclasses whose fields are the TOML keys.

    Building a table (directly or with :meth:`from_table`) runs
    :meth:`problems` and raises the first as :class:`InvalidValue`
    (a :class:`~gisnet.errors.ConfigError`).
    """

    #: The TOML table (``connection``, ``limits.parameter`` ...).
    TABLE: ClassVar[str] = ""
    #: Set by :func:`dataclasses.dataclass` on each table class (declared for type checkers).
    __dataclass_fields__: ClassVar[dict[str, dataclasses.Field[Any]]]

    def __post_init__(self) -> None:
        for k, problem in self.problems():
            raise InvalidValue(self.TABLE, k, problem)

    def problems(self) -> Iterator[tuple[str, str]]:
        """Range and enumeration problems: ``(key, problem)`` pairs, key within the table."""
        return iter(())

    @classmethod
    def keys(cls) -> tuple[str, ...]:
        """The table's keys, in file order."""
        return tuple(f.name for f in dataclasses.fields(cls))

    @classmethod
    def required_keys(cls) -> tuple[str, ...]:
        """The keys a file must give."""
        return tuple(f.name for f in dataclasses.fields(cls)
                     if f.default is dataclasses.MISSING)

    @classmethod
    def from_table(cls: type[T], table: Any, label: str | None = None,
                   where: Any = "<profile>") -> T:
        """Check a parsed TOML table, convert its values and build the table.

        Parameters
        ----------
        table
            The table as :mod:`tomllib` parsed it.
        label
            Its name in error messages (default :attr:`TABLE`; ``approvals[2]``
            for an entry of an array of tables).
        where
            The file named in error messages.

        Raises
        ------
        ConfigError
            Not a table, unknown or missing key, wrong type, value out of range.
        """
        label = cls.TABLE if label is None else label
        if not isinstance(table, Mapping):
            raise ConfigError(f"[{label}] must be a table", path=where)
        names = cls.keys()
        for k in table:
            if k not in names:
                raise ConfigError(
                    f"unknown key {label}.{k} (allowed: {', '.join(names)})", path=where
                )
        # mypy takes a class for unhashable (python/mypy#11470); classes hash by identity
        kinds = field_kinds(cls)  # type: ignore[arg-type]
        values: dict[str, Any] = {}
        for f in dataclasses.fields(cls):
            if f.name not in table:
                if f.default is dataclasses.MISSING:
                    raise ConfigError(f"missing required key {label}.{f.name}", path=where)
                continue
            kind, item = kinds[f.name]
            values[f.name] = convert(table[f.name], kind, f"{label}.{f.name}", where, item)
        try:
            return cls(**values)
        except InvalidValue as exc:
            raise ConfigError(f"key {qualified(label, exc.key)} {exc.problem}",
                              path=where) from None

    def to_dict(self) -> dict[str, Any]:
        """The table as plain data (dicts, lists): every key, None where left out."""
        return {f.name: plain(getattr(self, f.name))
                for f in dataclasses.fields(self)}


def plain(v: Any) -> Any:
    """A table value as plain data: tables and mappings to dicts, tuples to lists."""
    if isinstance(v, ProfileTable):
        return v.to_dict()
    if isinstance(v, Mapping):
        return {k: plain(x) for k, x in v.items()}
    if isinstance(v, tuple):
        return [plain(x) for x in v]
    return v


def documented(cls: type[T]) -> type[T]:
    """Append to a table's docstring an ``Attributes`` section built from its keys."""
    lines = ["", "    Attributes", "    ----------"]
    for f in dataclasses.fields(cls):
        unit = f.metadata.get("unit")
        need = "required" if f.default is dataclasses.MISSING else "optional, default None"
        lines.append(f"    {f.name} : {f.type}")
        lines.append(f"        {f.metadata.get('doc', '')}"
                     + (f" Unit: {unit}." if unit else "") + f" ({need})")
    cls.__doc__ = (cls.__doc__ or cls.__name__).rstrip() + "\n" + "\n".join(lines) + "\n"
    return cls


# --------------------------------------------------------------------------
# Field types -> conversion of TOML values
# --------------------------------------------------------------------------

_SCALARS: dict[Any, str] = {str: "str", float: "number", int: "int", bool: "bool",
                            dt.date: "date"}
_MAPS: dict[tuple[Any, Any], str] = {(str, float): "map_number", (float, float): "map_diameter",
                                     (str, str): "map_str"}


def field_kind(hint: Any) -> tuple[str, Any]:
    """How a field's type is read from TOML: ``(kind, item table or None)``.

    ``str``, ``float`` (any finite number), ``int``, ``bool``, ``datetime.date``
    (a TOML date or ``YYYY-MM-DD``), ``tuple[str, ...]`` (an array of strings),
    ``Mapping[str, float]`` / ``Mapping[str, str]`` (a sub-table),
    ``Mapping[float, float]`` (a sub-table keyed by pipe diameters), and
    ``tuple[T, ...]`` for a :class:`ProfileTable` ``T`` (an array of tables);
    ``X | None`` reads as ``X``.
    """
    if typing.get_origin(hint) in (types.UnionType, typing.Union):
        members = [a for a in typing.get_args(hint) if a is not type(None)]
        if len(members) == 1:
            hint = members[0]
    if hint in _SCALARS:
        return _SCALARS[hint], None
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin is tuple and len(args) == 2 and args[1] is Ellipsis:
        if args[0] is str:
            return "list_str", None
        if isinstance(args[0], type) and issubclass(args[0], ProfileTable):
            return "tables", args[0]
    if origin is Mapping and args in _MAPS:
        return _MAPS[args], None
    raise TypeError(f"no TOML conversion for a profile key of type {hint!r}")


@cache
def field_kinds(cls: type) -> dict[str, tuple[str, Any]]:
    """:func:`field_kind` of every field of a table class."""
    hints = typing.get_type_hints(cls)
    return {f.name: field_kind(hints[f.name]) for f in dataclasses.fields(cls)}


def is_number(v: Any) -> bool:
    """A finite int or float (not a bool)."""
    return isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v)


def convert(value: Any, kind: str, key: str, where: Any, item: Any = None) -> Any:
    """Check a TOML value against its kind (see :func:`field_kind`) and convert it."""

    def bad(expected: str) -> ConfigError:
        return ConfigError(f"key {key} must be {expected}, not {value!r}", path=where)

    if kind in _CONVERTERS:
        return _CONVERTERS[kind](value, bad)
    if kind in ("map_number", "map_str", "map_diameter"):
        return _convert_map(value, kind, key, where, bad)
    if kind == "tables":
        if not isinstance(value, list):
            raise bad(f"an array of tables [[{item.TABLE}]]")
        return tuple(item.from_table(e, f"{key}[{i}]", where) for i, e in enumerate(value))
    raise AssertionError(f"unknown key kind {kind}")  # pragma: no cover


def _str(value: Any, bad: Callable[[str], ConfigError]) -> str:
    if not isinstance(value, str):
        raise bad("a string")
    return value


def _number(value: Any, bad: Callable[[str], ConfigError]) -> float:
    if not is_number(value):
        raise bad("a number")
    return float(value)


def _int(value: Any, bad: Callable[[str], ConfigError]) -> int:
    if not isinstance(value, int) or isinstance(value, bool):
        raise bad("an integer")
    return value


def _bool(value: Any, bad: Callable[[str], ConfigError]) -> bool:
    if not isinstance(value, bool):
        raise bad("true or false")
    return value


def _date(value: Any, bad: Callable[[str], ConfigError]) -> dt.date:
    if isinstance(value, dt.datetime):
        return value.date()
    if isinstance(value, dt.date):
        return value
    if isinstance(value, str):
        try:
            return dt.date.fromisoformat(value)
        except ValueError:
            raise bad("a date (YYYY-MM-DD)") from None
    raise bad("a date (YYYY-MM-DD)")


def _list_str(value: Any, bad: Callable[[str], ConfigError]) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise bad("a list of strings")
    return tuple(value)


_CONVERTERS: dict[str, Callable[[Any, Callable[[str], ConfigError]], Any]] = {
    "str": _str, "number": _number, "int": _int, "bool": _bool, "date": _date,
    "list_str": _list_str,
}


def _convert_map(value: Any, kind: str, key: str, where: Any,
                 bad: Callable[[str], ConfigError]) -> FrozenMap:
    if not isinstance(value, Mapping):
        raise bad("a table")
    out: dict[Any, Any] = {}
    for k, v in value.items():
        sub = f"{key}.{k}"
        if kind == "map_str":
            if not isinstance(v, str):
                raise ConfigError(f"key {sub} must be a string, not {v!r}", path=where)
            out[k] = v
            continue
        if not is_number(v):
            raise ConfigError(f"key {sub} must be a number, not {v!r}", path=where)
        if kind == "map_diameter":
            try:
                d = float(k)
            except ValueError:
                raise ConfigError(
                    f"key {sub}: table keys must be pipe diameters in inches", path=where
                ) from None
            out[d] = float(v)
        else:
            out[k] = float(v)
    if kind == "map_diameter":
        out = dict(sorted(out.items()))
    return FrozenMap(out)
