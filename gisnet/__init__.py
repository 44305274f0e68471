"""gisnet: a town's sewer network from its GIS layers, and the questions its
sewer-use ordinance asks: who must connect, where the control manhole is, and
whether there is capacity."""

from __future__ import annotations

import logging

__version__ = "0.1.0"

logging.getLogger(__name__).addHandler(logging.NullHandler())

__all__ = ["__version__"]
