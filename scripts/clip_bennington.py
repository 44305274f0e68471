"""Write the Bennington, VT clip in ``tests/data/bennington_vt_clip`` from the full dataset.

The clip is the part of the VERSO Bennington layers around the town's treatment plant:
every line and point feature whose geometry comes within ``--radius-m`` (default 2,000 m)
of the plant point (``BenningtonWWTF.geojson``, FacilityID 1), measured in UTM zone 18N
(EPSG:32618). Features are kept whole, their properties and coordinates unchanged (the
JSON is written again by Python, so numbers may be spelt shorter; their values are the
same); the WWTF file is copied whole. Run from the repository::

    python scripts/clip_bennington.py ../shared/data/bennington_vt tests/data/bennington_vt_clip
"""

from __future__ import annotations

import argparse
import json
import shutil
from pathlib import Path

import geopandas as gpd

LAYERS = ("BenningtonLinearFeatures.geojson", "BenningtonPointFeatures.geojson")
PLANTS = "BenningtonWWTF.geojson"


def clip(src: Path, out: Path, radius_m: float = 2000.0) -> dict[str, int]:
    """Write the clip of ``src`` (the full Bennington folder) into ``out``.

    Parameters
    ----------
    src
        The folder of the full dataset (``BenningtonLinearFeatures.geojson`` ...).
    out
        The folder to write (created if missing; its files are replaced).
    radius_m
        Distance from the plant point, in metres, within which a feature is kept.

    Returns
    -------
    dict
        Features written per file name.
    """
    out.mkdir(parents=True, exist_ok=True)
    plants = gpd.read_file(src / PLANTS)
    plant = plants.loc[plants["FacilityID"] == "1"].to_crs(32618).geometry.iloc[0]
    counts = {}
    for name in LAYERS:
        doc = json.loads((src / name).read_text(encoding="utf-8"))
        g = gpd.read_file(src / name).to_crs(32618)
        keep = (g.distance(plant) <= radius_m).to_numpy()
        assert len(keep) == len(doc["features"])
        doc["features"] = [f for f, k in zip(doc["features"], keep, strict=True) if k]
        (out / name).write_text(json.dumps(doc, ensure_ascii=False, separators=(",", ":")),
                                encoding="utf-8")
        counts[name] = len(doc["features"])
    shutil.copyfile(src / PLANTS, out / PLANTS)
    counts[PLANTS] = len(plants)
    return counts


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("src", type=Path)
    ap.add_argument("out", type=Path)
    ap.add_argument("--radius-m", type=float, default=2000.0)
    args = ap.parse_args()
    for name, n in clip(args.src, args.out, args.radius_m).items():
        print(f"{name}: {n} features")


if __name__ == "__main__":
    main()
