"""The canonical schema every reader maps to.

Column names follow the units convention (``_ft``, ``_in``, ``_gpd``, ``_mgd``);
default source names follow Esri's Local Government Information Model (LGIM),
the most common US sewer schema, plus common variants. Matching of source
columns is case-insensitive and also accepts the 10-character truncation a
shapefile imposes on a longer name.

After loading, every canonical layer is a GeoDataFrame in the town's working
CRS with *all* canonical columns of its role present (missing ones filled with
nulls), in the dtypes given here, plus ``geometry``. Extra source columns are
kept after the canonical ones, under their source names.

Normalised values
-----------------
mains.kind
    ``sanitary``, ``storm``, ``combined``, ``force`` or ``unknown``.
mains.owner / manholes.owner
    ``public``, ``private``, null (none given: treated as public, said once as
    the ``owner_assumed`` finding) or a value not recognised, kept as written
    (``developer``: not known to be public, see :mod:`gisnet.rules`).
mains.status / manholes.status
    ``active``, ``inactive``, ``abandoned``, ``proposed``, null (none given:
    treated as active, ``status_assumed``) or a value not recognised, kept as
    written (``under construction``: not known to be in service).
manholes.kind
    ``manhole``, ``cleanout``, ``junction``, ``fitting``, ``outfall``,
    ``pump_station``, ``catch_basin``, ``plant`` or ``unknown``.

Not normalised
--------------
manholes.control_for
    The ``building_id`` or ``user_id`` an owner-installed control manhole
    serves (Poughkeepsie § 168-22.5K: "the owner of any property served by a
    building sewer carrying industrial wastes shall install a suitable control
    manhole in the building sewer"); compared with those ids as text. Null
    for every other structure.
"""

from __future__ import annotations

from dataclasses import dataclass, field

ROLES: tuple[str, ...] = (
    "parcels",
    "buildings",
    "mains",
    "manholes",
    "plants",
    "streets",
    "laterals",
    "users",
    "district",
    "highway_program",
)
REQUIRED_ROLES: tuple[str, ...] = ("parcels", "mains")

#: Geometry families each role accepts ("point", "line", "polygon").
GEOMETRY: dict[str, tuple[str, ...]] = {
    "parcels": ("polygon",),
    "buildings": ("polygon", "point"),
    "mains": ("line",),
    "manholes": ("point",),
    "plants": ("point", "polygon"),
    "streets": ("line", "polygon"),
    "laterals": ("line",),
    "users": ("point", "polygon", "none"),
    "district": ("polygon",),
    "highway_program": ("polygon",),
}


@dataclass(frozen=True)
class Column:
    """One canonical column: name, dtype, unit and the source names it takes."""

    name: str
    dtype: str  # "str", "float", "int", "bool", "date"
    unit: str = ""
    aliases: tuple[str, ...] = field(default_factory=tuple)
    doc: str = ""


def _c(name: str, dtype: str, unit: str = "", *aliases: str, doc: str = "") -> Column:
    return Column(name, dtype, unit, tuple(aliases), doc)


COLUMNS: dict[str, tuple[Column, ...]] = {
    "mains": (
        _c("main_id", "str", "", "FACILITYID", "FACILITY_ID", "ASSETID", "ASSET_ID", "PIPE_ID",
           "PIPEID", "MAINID", "GRAVITYMAINID", "UNITID", "ID", "OBJECTID", "FID"),
        _c("diameter_in", "float", "in", "DIAMETER", "DIA", "PIPE_DIA", "PIPEDIAM", "SIZE",
           "PIPESIZE", "PIPE_SIZE", "DIAM", "DIAMETER_IN"),
        _c("material", "str", "", "MATERIAL", "PIPE_MAT", "MATL", "PIPEMATERIAL"),
        # inverts named for the flow: the upstream / downstream end, whichever way the
        # line is drawn (read so unless the town file says ``inverts = "start_end"``)
        _c("up_invert_ft", "float", "ft", "UPELEV", "UPSTREAMINVERT", "US_INV", "UPINVERT",
           "UP_INV", "INV_UP", "UPSTREAM_INV", "US_INVERT", "UP_INVERT", "UPSTREAM_INVERT",
           "UPELEVATION", "US_IL", "UPINV"),
        _c("down_invert_ft", "float", "ft", "DOWNELEV", "DOWNSTREAMINVERT", "DS_INV",
           "DOWNINVERT", "DN_INV", "INV_DN", "DOWNSTREAM_INV", "DS_INVERT", "DN_INVERT",
           "DOWN_INVERT", "DOWNSTREAM_INVERT", "DOWNELEVATION", "DS_IL", "DNINV"),
        # inverts named for the drawing: the line's first / last vertex
        _c("start_invert_ft", "float", "ft", "START_INV", "STARTINV", "START_INVERT",
           "INV_START", "FROM_INV", "FROMINV", "FROM_INVERT", "BEGIN_INV", "BEG_INV",
           "INV_BEGIN"),
        _c("end_invert_ft", "float", "ft", "END_INV", "ENDINV", "END_INVERT", "INV_END",
           "TO_INV", "TOINV", "TO_INVERT", "STOP_INV"),
        _c("slope", "float", "ft/ft", "SLOPE", "PIPESLOPE", "GRADE"),
        _c("from_node", "str", "", "FROMMH", "FROM_MH", "UPMH", "US_MH", "FROMNODE", "FROM_NODE",
           "UPSTREAMMH", "USNODE"),
        _c("to_node", "str", "", "TOMH", "TO_MH", "DNMH", "DS_MH", "TONODE", "TO_NODE",
           "DOWNSTREAMMH", "DSNODE"),
        _c("kind", "str", "", "WATERTYPE", "SEWERTYPE", "SEWER_TYPE", "PIPETYPE", "TYPE",
           "SYSTEM", "FLOWTYPE", "ASSETGROUP", "SYSTEM_TYPE"),
        _c("owner", "str", "", "OWNEDBY", "OWNER", "OWNERSHIP", "MAINTBY", "MAINTAINEDBY"),
        _c("status", "str", "", "ACTIVEFLAG", "LIFECYCLESTATUS", "STATUS", "ENABLED",
           "OPERATIONALSTATUS"),
        _c("street", "str", "", "STREET", "LOCDESC", "LOCATION", "STREETNAME"),
        _c("install_date", "date", "", "INSTALLDATE", "INSTALL_DATE", "YEARBUILT", "INSTALLED"),
    ),
    "manholes": (
        _c("node_id", "str", "", "FACILITYID", "FACILITY_ID", "MH_ID", "MHID", "MANHOLEID",
           "NODE_ID", "NODEID", "ASSETID", "ID", "OBJECTID", "FID"),
        _c("rim_ft", "float", "ft", "RIMELEV", "RIM_ELEV", "RIM", "RIMELEVATION"),
        _c("invert_ft", "float", "ft", "INVERTELEV", "INVERT", "INV_ELEV", "INVELEV"),
        _c("kind", "str", "", "MANHOLETYPE", "NODETYPE", "STRUCTTYPE", "TYPE", "FEATTYPE",
           "ASSETGROUP"),
        _c("owner", "str", "", "OWNEDBY", "OWNER", "OWNERSHIP"),
        _c("status", "str", "", "ACTIVEFLAG", "LIFECYCLESTATUS", "STATUS", "ENABLED"),
        _c("control_for", "str", "", "CONTROL_FOR", "CONTROLFOR", "CTRL_FOR", "CTRLFOR",
           "CONTROL_MH_FOR", "SAMPLE_FOR", "SAMPLEFOR",
           doc="building_id or user_id whose building sewer this owner-installed control "
               "manhole is in (Poughkeepsie § 168-22.5K); it overrides the default control "
               "manhole of that building or user. Null for every other structure."),
    ),
    "plants": (
        _c("plant_id", "str", "", "FACILITYID", "PLANT_ID", "PLANTID", "NPDES", "PERMIT",
           "NPDESPERMITNUMBER", "ID"),
        _c("name", "str", "", "NAME", "FACILITYNAME", "PLANTNAME"),
        _c("design_flow_mgd", "float", "MGD", "DESIGNFLOW", "DESIGN_MGD", "DESIGN_FLOW",
           "CAPACITY", "DESIGNCAP", "DESIGNHYDRAULICCAPACITYINMGD", "DESIGN_CAPACITY_MGD"),
        _c("avg_flow_mgd", "float", "MGD", "AVGFLOW", "AVG_MGD", "AVERAGE_FLOW", "AVG_FLOW"),
        _c("node_id", "str", "", "NODE_ID", "OUTLETNODE", "MH_ID"),
    ),
    "parcels": (
        _c("parcel_id", "str", "", "PARCEL_ID", "PARCELID", "PIN", "PARID", "PID", "SBL",
           "PRINT_KEY", "SWIS_SBL_ID", "SWIS_PRINT_KEY_ID", "MAP_PAR_ID", "ML", "APN",
           "GIS_ID", "SPAN", "ID", "OBJECTID", "FID"),
        _c("address", "str", "", "ADDRESS", "SITEADDR", "SITE_ADDR", "PROP_ADDR", "PARCEL_ADDR",
           "LOC_ADDR", "LOCATION", "ADDR", "FULLADDR"),
        _c("owner_name", "str", "", "OWNER_NAME", "OWNERNAME", "OWNER", "OWNER1", "OWN_NAME",
           "OWNER_NM", "OWNERNME1", "PRIMARY_OWNER", "OWNNAME",
           doc="owner of record (name), for notices to connect"),
        _c("mailing_address", "str", "", "MAILING_ADDRESS", "MAILING_ADDR", "MAILING_AD",
           "MAIL_ADDR", "MAIL_ADDRESS", "MAILADDR", "MAILADDRESS", "MAIL_ADD", "MAILADD",
           "MAIL_ADDR1", "MAILADD1", "MAIL_ADD1", "OWNER_ADDR", "OWNER_ADDRESS", "OWNERADDR",
           "OWNER_ADD", "OWN_ADDR", "OWN_ADDRESS", "OWNADDR", "OWNER_MAIL", "BILLING_ADDR",
           "TAX_ADDR",
           doc="the owner's mailing address (where letters go; may differ from the "
               "property's address), for notices to connect"),
        _c("land_use", "str", "", "LAND_USE", "LANDUSE", "LUC", "USECODE", "USE_CODE", "PROPCLASS",
           "PROP_CLASS", "PROP_CLS", "CLASS"),
        _c("dwelling_units", "int", "", "DWELLING_UNITS", "UNITS", "DU", "NUM_UNITS", "RES_UNITS"),
        _c("bedrooms", "int", "", "BEDROOMS", "BEDS", "NUM_BEDS", "BEDROOM", "NBR_BEDRM"),
        _c("flow_gpd", "float", "gpd", "FLOW_GPD", "METERED_GPD", "WATER_GPD", "AVG_GPD"),
        _c("septic", "bool", "", "SEPTIC", "ON_SEPTIC", "SEPTIC_YN", "SEWAGE"),
        _c("connected", "bool", "", "CONNECTED", "SEWERED", "ON_SEWER", "SEWER_CONN"),
        _c("sewer_available_date", "date", "", "SEWER_AVAILABLE_DATE", "SEWER_AVAIL", "SEWERDATE"),
        _c("notice_date", "date", "", "NOTICE_DATE", "NOTICEDATE", "NOTICE_DT", "NOTICE",
           "CONN_NOTICE", "ORDER_DATE",
           doc="date official notice to connect was served (Poughkeepsie § 168-22.2G)"),
        _c("health_hazard", "bool", "", "HEALTH_HAZARD", "HEALTHHAZ", "HLTH_HAZ", "HAZARD",
           "PUB_HEALTH",
           doc="the private system is (found to be) a public health hazard"),
        _c("highway_program", "bool", "", "HIGHWAY_PROGRAM", "HWY_PROGRAM", "HWY_PROG",
           "HIGHWAY_IMP", "ROAD_PROJECT",
           doc="the parcel lies in a highway improvement program"),
    ),
    "buildings": (
        _c("building_id", "str", "", "BUILDING_ID", "BLDG_ID", "BLDGID", "BUILDINGID", "ID",
           "OBJECTID", "FID"),
        _c("parcel_id", "str", "", "PARCEL_ID", "PARCELID", "PIN", "PARID", "PID", "SBL"),
        _c("built_date", "date", "", "BUILT_DATE", "YEAR_BUILT", "YEARBUILT", "YR_BUILT"),
        _c("use", "str", "", "USE", "BLDG_USE", "BLDGUSE", "OCCUPANCY"),
    ),
    "streets": (
        _c("street_id", "str", "", "STREET_ID", "SEGMENT_ID", "ROADID", "ID", "OBJECTID", "FID"),
        _c("name", "str", "", "NAME", "STREET", "ST_NAME", "FULLNAME", "STREETNAME"),
        _c("width_ft", "float", "ft", "WIDTH_FT", "ROW_WIDTH", "WIDTH", "ROWWIDTH"),
    ),
    "laterals": (
        _c("lateral_id", "str", "", "FACILITYID", "LATERAL_ID", "LATERALID", "ID", "OBJECTID",
           "FID"),
        _c("parcel_id", "str", "", "PARCEL_ID", "PARCELID", "PIN", "PARID"),
        _c("building_id", "str", "", "BUILDING_ID", "BLDG_ID", "BLDGID"),
        _c("main_id", "str", "", "MAIN_ID", "MAINID", "GRAVITYMAIN"),
    ),
    "users": (
        _c("user_id", "str", "", "USER_ID", "USERID", "PERMIT", "PERMIT_NO", "IU_ID", "ID"),
        _c("name", "str", "", "NAME", "FACILITY", "COMPANY"),
        _c("parcel_id", "str", "", "PARCEL_ID", "PARCELID", "PIN", "PARID"),
        _c("building_id", "str", "", "BUILDING_ID", "BLDG_ID", "BLDGID"),
        _c("process_flow_gpd", "float", "gpd", "PROCESS_FLOW_GPD", "PROC_GPD", "PROCESS_GPD",
           "PROCFLOW"),
        _c("categorical", "bool", "", "CATEGORICAL", "CAT_IU", "CIU"),
        _c("industrial", "bool", "", "INDUSTRIAL", "IND"),
        _c("sic_code", "str", "", "SIC", "SIC_CODE", "NAICS"),
    ),
    # the area a connection rule binds ("situated within the area", § 168-22.2G)
    "district": (
        _c("district_id", "str", "", "DISTRICT_ID", "DISTRICT", "AREA_ID", "ID",
           "OBJECTID", "FID"),
        _c("name", "str", "", "NAME", "DISTRICT_NAME", "AREA_NAME", "LABEL"),
    ),
    # areas of a highway improvement program (notice may be given there, § 168-22.2G)
    "highway_program": (
        _c("program_id", "str", "", "PROGRAM_ID", "PROJECT_ID", "PROJECT", "ID", "OBJECTID",
           "FID"),
        _c("name", "str", "", "NAME", "PROJECT_NAME", "PROGRAM", "LABEL"),
    ),
}

#: How a mains layer's invert columns are read (``[layers.mains] inverts``):
#: ``upstream_downstream``: at the upstream / downstream end of the pipe;
#: ``start_end``: at the first / last vertex of the drawn line.
INVERT_MEANINGS: tuple[str, ...] = ("upstream_downstream", "start_end")
#: Canonical invert columns and what their names say they are.
INVERT_COLUMNS: dict[str, tuple[str, str, str]] = {
    "upstream_downstream": ("up_invert_ft", "down_invert_ft", "upstream/downstream"),
    "start_end": ("start_invert_ft", "end_invert_ft", "start/end"),
}

#: Columns that stand in for each other: one of them mapped, the others are not missing.
ALTERNATIVES: dict[str, tuple[str, ...]] = {
    **{c: ("start_invert_ft", "end_invert_ft") for c in ("up_invert_ft", "down_invert_ft")},
    **{c: ("up_invert_ft", "down_invert_ft") for c in ("start_invert_ft", "end_invert_ft")},
}

#: The id column of each role.
ID_COLUMN: dict[str, str] = {
    "mains": "main_id",
    "manholes": "node_id",
    "plants": "plant_id",
    "parcels": "parcel_id",
    "buildings": "building_id",
    "streets": "street_id",
    "laterals": "lateral_id",
    "users": "user_id",
    "district": "district_id",
    "highway_program": "program_id",
}

#: Canonical value sets for normalised text columns, with the source spellings
#: (case-insensitive) each one accepts by default. A town file's
#: ``[layers.ROLE.values.COLUMN]`` table extends these.
VALUE_ALIASES: dict[tuple[str, str], dict[str, tuple[str, ...]]] = {
    ("mains", "kind"): {
        "sanitary": ("sanitary", "sewer", "ss", "san", "wastewater", "sanitary line", "gravity",
                     "gravity main", "sanitary sewer", "sewer pipe", "sewer line",
                     "sanitary main", "sanitary gravity main", "wastewater gravity main"),
        "storm": ("storm", "sd", "stm", "stormwater", "storm line", "storm sewer", "drain",
                  "storm pipe", "storm main", "stormwater gravity main"),
        "combined": ("combined", "cso", "comb", "combined sewer", "combined sewer pipe",
                     "combined line", "combined main"),
        "force": ("force", "fm", "force main", "forcemain", "pressurized", "pressure"),
    },
    ("mains", "owner"): {
        "public": ("public", "city", "town", "municipal", "district", "county", "village",
                   "authority", "pub"),
        "private": ("private", "pvt", "priv", "owner", "homeowner"),
    },
    ("mains", "status"): {
        "active": ("active", "in service", "inservice", "1", "true", "yes", "y", "act",
                   "existing", "exist", "in use", "operational", "current"),
        "inactive": ("inactive", "out of service", "0", "false", "no", "n", "inact"),
        "abandoned": ("abandoned", "abandoned in place", "removed", "aban", "retired",
                      "abandoned - in place", "abandoned - removed"),
        "proposed": ("proposed", "planned", "design", "future"),
    },
    ("manholes", "kind"): {
        "manhole": ("manhole", "mh", "sanitary manhole", "sewer manhole", "standard",
                    "combined sewer manhole", "combined manhole", "wastewater manhole"),
        "cleanout": ("cleanout", "co", "clean out"),
        "junction": ("junction", "jct", "tee", "wye"),
        "fitting": ("fitting", "bend", "elbow", "reducer", "cap", "plug"),
        "outfall": ("outfall", "outlet", "discharge", "combined sewer outfall", "cso outfall",
                    "known cso outfalls"),
        "pump_station": ("pump station", "pumpstation", "lift station", "ps", "pump_station"),
        "catch_basin": ("catch basin", "catchbasin", "cb", "inlet", "storm inlet",
                        "combined sewer catchbasin", "cb tied to sanitary sewer"),
        "plant": ("plant", "wwtf", "wwtp", "treatment plant"),
    },
}
VALUE_ALIASES[("manholes", "owner")] = VALUE_ALIASES[("mains", "owner")]
VALUE_ALIASES[("manholes", "status")] = VALUE_ALIASES[("mains", "status")]

#: Normalised column -> the value it takes where the source gives none or one no
#: alias matches (``kind`` of mains and manholes); other columns stay null.
VALUE_FALLBACK: dict[str, str] = {"kind": "unknown"}
#: Normalised columns whose values no alias matches are kept as written (not set
#: to null): a main's owner "developer" is not "no owner given", and the rules
#: (:func:`gisnet.rules.owner_unrecognised`) name it.
VALUE_KEPT_WHEN_UNRECOGNISED: tuple[str, ...] = ("owner", "status")


def columns(role: str) -> tuple[Column, ...]:
    """The canonical columns of a layer role, in order."""
    return COLUMNS[role]


def column_names(role: str) -> list[str]:
    """Names of the canonical columns of a layer role, in order."""
    return [c.name for c in COLUMNS[role]]
