"""gisnet: a town's sewer network from its GIS layers, and the questions its
sewer-use ordinance asks: who must connect, where the control manhole is, and
whether there is capacity.

The public names, for a notebook or a script (see ``docs/api.md``)::

    import gisnet

    town = gisnet.load_town("layers/sample")        # or gisnet.Town.from_frames(...)
    res = gisnet.analyse(town)                       # gisnet.Results
    res.layers["obligations"].query("status == 'required'")
    res.trace(parcel="...")                          # res.whatif(...), res.to_file(...)

``import gisnet`` stays light: each name is imported when first used (PEP 562),
so geopandas, networkx and folium load only then.
"""

from __future__ import annotations

import importlib
import logging
import types
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

logging.getLogger(__name__).addHandler(logging.NullHandler())

if TYPE_CHECKING:  # pragma: no cover  (the names as type checkers and editors see them)
    from .errors import ConfigError as ConfigError
    from .errors import CRSError as CRSError
    from .errors import GisnetError as GisnetError
    from .errors import LayerError as LayerError
    from .errors import NotFoundError as NotFoundError
    from .errors import SchemaError as SchemaError
    from .errors import TopologyError as TopologyError
    from .io.loading import load_town as load_town
    from .pipeline import Results as Results
    from .pipeline import analyse as analyse
    from .town import Town as Town

#: Public name -> the module that defines it.
_PUBLIC: dict[str, str] = {
    "load_town": "gisnet.io.loading",
    "Town": "gisnet.town",
    "analyse": "gisnet.pipeline",
    "Results": "gisnet.pipeline",
    "GisnetError": "gisnet.errors",
    "ConfigError": "gisnet.errors",
    "LayerError": "gisnet.errors",
    "SchemaError": "gisnet.errors",
    "CRSError": "gisnet.errors",
    "TopologyError": "gisnet.errors",
    "NotFoundError": "gisnet.errors",
}

__all__ = [
    "CRSError",
    "ConfigError",
    "GisnetError",
    "LayerError",
    "NotFoundError",
    "Results",
    "SchemaError",
    "TopologyError",
    "Town",
    "__version__",
    "analyse",
    "load_town",
]


def __getattr__(name: str) -> Any:
    """A public name, imported from its module on first use (PEP 562)."""
    module = _PUBLIC.get(name)
    if module is None:
        raise AttributeError(f"module 'gisnet' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value  # later uses skip this function
    return value


def __dir__() -> list[str]:
    """The public names and the subpackages already imported (``gisnet.io`` ...)."""
    loaded = {k for k, v in globals().items()
              if isinstance(v, types.ModuleType) and v.__name__.startswith(__name__ + ".")}
    return sorted({*__all__, *loaded})
