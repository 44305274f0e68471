"""Units: gisnet computes in US customary units, converted only at the edges.

Lengths in feet, pipe diameters in inches, flows in gallons per day (gpd) or
million gallons per day (MGD), capacities from Manning in cubic feet per second.
Every numeric output column carries its unit in its name.
"""

from __future__ import annotations

from pyproj import CRS

from .errors import CRSError

#: International foot in metres.
FT_M = 0.3048
#: US survey foot in metres.
US_FT_M = 1200.0 / 3937.0
#: 1 cubic foot per second in gallons per day (7.48052 gal/ft3 x 86,400 s/day).
CFS_TO_GPD = 646_316.88
#: 1 MGD in gpd.
MGD_TO_GPD = 1_000_000.0
MM_PER_IN = 25.4


def feet_per_unit(crs: CRS | str | int) -> float:
    """Feet in one linear unit of a projected CRS, from the CRS's own factor.

    Parameters
    ----------
    crs
        A projected CRS (anything ``pyproj.CRS.from_user_input`` takes).

    Returns
    -------
    float
        1/0.3048 for metres, 1.0 for international feet, 1.000002 for US feet.

    Raises
    ------
    CRSError
        If the CRS is geographic or has no linear unit.

    Examples
    --------
    >>> round(feet_per_unit("EPSG:2260"), 6)   # NY East, US survey feet
    1.000002
    >>> round(feet_per_unit("EPSG:32618"), 5)  # UTM 18N, metres
    3.28084
    """
    crs = CRS.from_user_input(crs)
    if not crs.is_projected:
        raise CRSError(
            f"CRS {crs.to_string()} is not projected; distances cannot be measured in it"
        )
    axis = crs.axis_info[0]
    factor = axis.unit_conversion_factor  # metres per unit
    if not factor or axis.unit_name.lower() in {"degree", "radian"}:
        raise CRSError(f"CRS {crs.to_string()} has no linear unit")
    return factor / FT_M
