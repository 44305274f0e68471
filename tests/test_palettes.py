"""The map and QGIS colours stay apart for colour-blind readers.

Each class colour (obligation statuses, pipe utilization classes, finding
severities) is passed through the colour-vision-deficiency simulation of
Machado, Oliveira & Fernandes (2009, IEEE TVCG 15(6), severity 1.0: full
protanopia, deuteranopia, tritanopia; the matrices act on linear RGB), and the
CIE 1976 colour difference (ΔE*ab, in CIELAB under D65) of every pair of classes
is asserted to stay above a visible margin. The old red/green status colours fail
this check (protanopia made "review" and "connected" 7 ΔE apart), which the
last test keeps as a witness that the check can fail.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from gisnet.palettes import SEVERITY_COLOURS, STATUS_COLOURS, UTIL_COLOURS

#: Machado et al. (2009) simulation matrices, severity 1.0 (linear RGB).
MACHADO = {
    "normal": np.eye(3),
    "protanopia": np.array([[0.152286, 1.052583, -0.204868],
                            [0.114503, 0.786281, 0.099216],
                            [-0.003882, -0.048116, 1.051998]]),
    "deuteranopia": np.array([[0.367322, 0.860646, -0.227968],
                              [0.280085, 0.672501, 0.047413],
                              [-0.011820, 0.042940, 0.968881]]),
    "tritanopia": np.array([[1.255528, -0.076749, -0.178779],
                            [-0.078411, 0.930809, 0.147602],
                            [0.004733, 0.691367, 0.303900]]),
}
#: Smallest ΔE*ab allowed between two classes under any simulation (about 2.3 is a
#: just-noticeable difference; 15 is clearly different at a glance on a map).
MIN_DELTA_E = 15.0


def linear_rgb(colour: str) -> np.ndarray:
    """sRGB ``#rrggbb`` -> linear RGB in [0, 1]."""
    c = np.array([int(colour[i:i + 2], 16) for i in (1, 3, 5)]) / 255.0
    return np.where(c <= 0.04045, c / 12.92, ((c + 0.055) / 1.055) ** 2.4)


def lab(rgb_linear: np.ndarray) -> np.ndarray:
    """Linear RGB -> CIELAB (D65)."""
    rgb = np.clip(rgb_linear, 0.0, 1.0)
    xyz = np.array([[0.4124, 0.3576, 0.1805],
                    [0.2126, 0.7152, 0.0722],
                    [0.0193, 0.1192, 0.9505]]) @ rgb
    xyz = xyz / np.array([0.95047, 1.0, 1.08883])
    f = np.where(xyz > 216 / 24389, np.cbrt(xyz), (24389 / 27 * xyz + 16) / 116)
    return np.array([116 * f[1] - 16, 500 * (f[0] - f[1]), 200 * (f[1] - f[2])])


def closest_pair(palette: dict[str, str], vision: str) -> tuple[float, str, str]:
    """The two classes of ``palette`` least apart under ``vision``, and their ΔE*ab."""
    m = MACHADO[vision]
    labs = {k: lab(m @ linear_rgb(c)) for k, c in palette.items()}
    return min((float(np.linalg.norm(labs[a] - labs[b])), a, b)
               for a, b in itertools.combinations(palette, 2))


def test_simulation_is_sane() -> None:
    # white stays white, and protanopia/deuteranopia fold red onto green's axis
    for m in MACHADO.values():
        assert np.allclose(m @ np.ones(3), np.ones(3), atol=1e-3)
    assert np.allclose(lab(linear_rgb("#ffffff")), [100, 0, 0], atol=0.05)
    red_green = {"r": "#ff0000", "g": "#00c000"}
    assert closest_pair(red_green, "normal")[0] > 100
    assert closest_pair(red_green, "deuteranopia")[0] < 40


@pytest.mark.parametrize("vision", list(MACHADO))
@pytest.mark.parametrize("name, palette", [("status", STATUS_COLOURS),
                                           ("utilization", UTIL_COLOURS),
                                           ("severity", SEVERITY_COLOURS)])
def test_classes_stay_apart(name: str, palette: dict[str, str], vision: str) -> None:
    d, a, b = closest_pair(palette, vision)
    assert d >= MIN_DELTA_E, f"{name} under {vision}: {a} and {b} are {d:.1f} ΔE apart"


def test_the_old_red_green_statuses_fail_the_check() -> None:
    old = {"required": "#d7301f", "subject_to_notice": "#f1b6da", "review": "#fc8d59",
           "connected": "#1a9850", "not_required": "#9e9e9e", "outside_district": "#e0e0e0"}
    assert closest_pair(old, "protanopia")[0] < MIN_DELTA_E
