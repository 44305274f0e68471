"""``gisnet figure``: printable maps of each kind at the requested page size."""

from __future__ import annotations

import datetime as dt
import subprocess
import sys

import numpy as np
import pytest

from gisnet import labels
from gisnet.errors import ConfigError
from gisnet.figures import KINDS, PAGE_SIZES, nice_scale, page_inches, write_figure
from gisnet.figures.drawing import draw_scale_bar
from gisnet.io import load_town
from gisnet.palettes import SIMPLE_COLOURS, STATUS_COLOURS
from gisnet.pipeline import analyse

pypdf = pytest.importorskip("pypdf")
PIL = pytest.importorskip("PIL.Image")

DATE = dt.date(2026, 12, 1)
PT_PER_IN = 72.0


@pytest.fixture(scope="module")
def town(sample_dir):
    return load_town(sample_dir)


@pytest.fixture(scope="module")
def results(town):
    return analyse(town)


#: A legend label each kind's legend must hold (from gisnet.labels / gisnet.output.styles).
LEGEND = {
    "obligations": labels.STATUS_LABELS["required"],
    "capacity": "below the utilization threshold",
    "sampling": labels.LAYER_LABELS["control_manholes"],
    "network": labels.LAYER_LABELS["graph_edges"],
}


@pytest.mark.parametrize("kind", list(KINDS))
def test_pdf_is_one_page_at_the_size_asked(kind, town, results, tmp_path, artifacts):
    page, landscape = {"obligations": ("letter", False), "capacity": ("a4", True),
                       "sampling": ("tabloid", False), "network": ("a3", True)}[kind]
    out = write_figure(town, results, kind, tmp_path / f"{kind}.pdf", page=page,
                       landscape=landscape, date=DATE)
    reader = pypdf.PdfReader(str(out))
    assert len(reader.pages) == 1
    box = reader.pages[0].mediabox
    w, h = page_inches(page, landscape)
    assert float(box.width) == pytest.approx(w * PT_PER_IN, abs=0.5)
    assert float(box.height) == pytest.approx(h * PT_PER_IN, abs=0.5)
    assert (float(box.width) > float(box.height)) == landscape
    text = " ".join(reader.pages[0].extract_text().split())
    assert labels.FIGURE_TITLES[kind] in text
    assert "Legend" in text and LEGEND[kind] in text
    assert "poughkeepsie-fourth-ward" in text and DATE.isoformat() in text
    assert "mains.shp" in text  # data sources: the layer files
    assert " ft" in text or " mi" in text  # the scale bar's label
    assert "N" in text.split()  # the north arrow


@pytest.mark.parametrize(("page", "landscape"), [("letter", False), ("a4", True)])
def test_png_has_the_page_size(page, landscape, town, results, tmp_path, artifacts):
    out = write_figure(town, results, "obligations", tmp_path / "ob.png", page=page,
                       landscape=landscape, date=DATE)
    with PIL.open(out) as img:
        rgb = np.asarray(img.convert("RGB")).astype(int)
        size = img.size
        img.save(artifacts / f"figure-obligations-{page}.png")
    w, h = page_inches(page, landscape)
    assert size == (int(w * 150), int(h * 150))  # (matplotlib truncates to whole pixels)
    # the connected parcels are drawn in their status colour
    want = np.array([int(STATUS_COLOURS["connected"][i:i + 2], 16) for i in (1, 3, 5)])
    assert (np.abs(rgb - want).max(axis=2) <= 6).sum() > 1000


def test_obligations_figure_draws_the_measured_lines(town, results, tmp_path):
    """The measured lines of the parcels that can be ordered are drawn in the
    evidence colour; without them, that colour is absent."""
    colour = np.array([int(SIMPLE_COLOURS["obligation_evidence"][i:i + 2], 16)
                       for i in (1, 3, 5)])

    def count(layers, name):
        out = write_figure(town, layers, "obligations", tmp_path / name, date=DATE)
        with PIL.open(out) as img:
            rgb = np.asarray(img.convert("RGB")).astype(int)
        return int((np.abs(rgb - colour).max(axis=2) <= 20).sum())

    layers = results.layers()
    with_lines = count(layers, "with.png")
    layers["obligation_evidence"] = layers["obligation_evidence"].iloc[:0]
    assert with_lines > 20 and count(layers, "without.png") < 5


def test_scale_bar_reads_the_crs_unit():
    from matplotlib.figure import Figure

    assert nice_scale(4000).value == 1000 and nice_scale(4000).unit == "ft"
    assert nice_scale(30000).unit == "mi" and nice_scale(30000).value == 1
    assert nice_scale(2500).length_ft == 500
    # a metre CRS: 1,000 m across -> 820 ft -> a 500 ft bar, 152.4 m long on the map
    fig = Figure(figsize=(4, 4))
    ax = fig.add_axes((0, 0, 1, 1))
    ax.set_xlim(0, 1000)
    ax.set_ylim(0, 1000)
    bar = draw_scale_bar(ax, 1 / 0.3048)
    assert bar.text == "500 ft"
    segments = [p for p in ax.patches if p.get_zorder() == 21]
    assert sum(p.get_width() for p in segments) == pytest.approx(500 * 0.3048)


def test_bad_requests(town, results, tmp_path, sample_dir):
    with pytest.raises(ConfigError, match="page size"):
        write_figure(town, results, "network", tmp_path / "x.pdf", page="b5")
    with pytest.raises(ConfigError, match=r"\.pdf or \.png"):
        write_figure(town, results, "network", tmp_path / "x.svg")
    with pytest.raises(ConfigError, match="unknown figure"):
        write_figure(town, results, "zoning", tmp_path / "x.pdf")
    with pytest.raises(ConfigError, match="over the input"):
        write_figure(town, results, "network", sample_dir / "mains.shp")
    assert set(PAGE_SIZES) == {"letter", "a4", "tabloid", "a3"}


@pytest.mark.slow
def test_cli_figure(sample_dir, tmp_path):
    out = tmp_path / "network.png"
    r = subprocess.run([sys.executable, "-m", "gisnet", "figure", "network", "--layers",
                        str(sample_dir), "--out", str(out), "--page", "a4"],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    with PIL.open(out) as img:
        assert img.size == (1240, 1753)
    r = subprocess.run([sys.executable, "-m", "gisnet", "figure", "network", "--layers",
                        str(sample_dir), "--out", str(tmp_path / "n.svg")],
                       capture_output=True, text=True)
    assert r.returncode == 2 and "Traceback" not in r.stderr and ".pdf or .png" in r.stderr
