"""Exception classes raised by gisnet.

Every error names what it can of *where* the problem is: the file, the layer,
the feature and the problem. The command line turns a :class:`GisnetError`
into one readable line on stderr and exit status 2; the HTTP service turns it
into a 4xx response. Nothing else should reach a user as a traceback.
"""

from __future__ import annotations


class GisnetError(Exception):
    """Base class of every error gisnet raises on purpose.

    Parameters
    ----------
    message
        The problem, in one plain sentence.
    path
        The file (or folder) concerned, if any.
    layer
        The layer role (``mains``, ``parcels`` ...) or source layer name.
    feature
        The feature id or row concerned, if any.
    """

    exit_code = 2

    def __init__(
        self,
        message: str,
        *,
        path: object | None = None,
        layer: str | None = None,
        feature: object | None = None,
    ) -> None:
        self.message = message
        self.path = None if path is None else str(path)
        self.layer = layer
        self.feature = None if feature is None else str(feature)
        super().__init__(self.__str__())

    def __str__(self) -> str:
        where = []
        if self.path:
            where.append(self.path)
        if self.layer:
            where.append(f"layer {self.layer!r}")
        if self.feature:
            where.append(f"feature {self.feature}")
        return f"{': '.join(where)}: {self.message}" if where else self.message


class ConfigError(GisnetError):
    """The town file, a profile or a command-line option is wrong."""


class LayerError(GisnetError):
    """A layer cannot be read or is unusable (missing file, empty, wrong type)."""


class SchemaError(GisnetError):
    """A column mapping or a value does not fit the canonical schema."""


class CRSError(GisnetError):
    """A layer has no CRS, or a CRS that cannot be used for measuring."""


class TopologyError(GisnetError):
    """The sewer graph cannot answer a question (e.g. no outlet reachable)."""


class NotFoundError(GisnetError):
    """An id asked for (parcel, manhole, main ...) does not exist."""
