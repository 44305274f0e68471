"""Deterministic synthetic towns, for the bundled sample and for benchmarks.

:func:`make_town` lays out a street grid with blocks of parcels, a building on
most parcels and a sanitary gravity main along the streets, draining as a tree
(every manhole has exactly one downstream pipe, inverts fall downstream) to one
treatment plant. Pipe diameters are sized by Manning for the peaked flow that
accumulates down the tree, slopes are at or above the minimum slope of each
diameter. Everything is vectorised numpy/shapely: a 1,000,000-parcel,
300,000-main town takes seconds, not minutes.

Every layer uses the canonical schema of :mod:`gisnet.schema` (plus the
loader-derived ``public``/``active`` booleans on mains and manholes), so the
layers can go straight into :func:`gisnet.graph.build_sewer_graph` or be
written to files and read back with :func:`gisnet.io.load_town`.

Modules, by stage:

- :mod:`.layout`: the abstract town as arrays in local feet (streets, lots,
  the sewer tree; :class:`TownArrays`) and its placement in a CRS;
- :mod:`.hydraulics`: Manning sizing, Harmon peaking, sums along the tree;
- :mod:`.layers`: the canonical GeoDataFrames (:func:`make_town`,
  :func:`build_layers`);
- :mod:`.files`: source files and ``gisnet.toml`` (:func:`write_town`);
- :mod:`.sample`: the bundled sample town (:func:`make_sample_town`);
- :mod:`.cases`: the ordinance cases the sample exercises (:func:`~.cases.add_cases`).
"""

from .files import SOURCE_COLUMNS, to_source, write_layer, write_town, write_town_file
from .hydraulics import (
    DESIGN_UTILIZATION,
    DIAMETERS_IN,
    MANNING_N,
    MIN_SLOPE,
    accumulate,
    harmon_peaking,
    manning_capacity_gpd,
    path_sums,
)
from .layers import (
    GPD_PER_DWELLING_UNIT,
    LAND_USE_P,
    LAND_USES,
    NONRES_GPD,
    SIC_CODES,
    build_layers,
    canonical_dtypes,
    make_town,
)
from .layout import (
    COL_NAMES,
    POUGHKEEPSIE_LONLAT,
    ROW_NAMES,
    TownArrays,
    drop_pipes,
    layout_town,
    make_placer,
)
from .sample import (
    MONTH_FACTORS,
    SAMPLE_USER_FLOWS,
    SAMPLE_USER_SIC,
    SampleTown,
    make_sample_town,
)

__all__ = [
    "COL_NAMES",
    "DESIGN_UTILIZATION",
    "DIAMETERS_IN",
    "GPD_PER_DWELLING_UNIT",
    "LAND_USES",
    "LAND_USE_P",
    "MANNING_N",
    "MIN_SLOPE",
    "MONTH_FACTORS",
    "NONRES_GPD",
    "POUGHKEEPSIE_LONLAT",
    "ROW_NAMES",
    "SAMPLE_USER_FLOWS",
    "SAMPLE_USER_SIC",
    "SIC_CODES",
    "SOURCE_COLUMNS",
    "SampleTown",
    "TownArrays",
    "accumulate",
    "build_layers",
    "canonical_dtypes",
    "drop_pipes",
    "harmon_peaking",
    "layout_town",
    "make_placer",
    "make_sample_town",
    "make_town",
    "manning_capacity_gpd",
    "path_sums",
    "to_source",
    "write_layer",
    "write_town",
    "write_town_file",
]
