"""A notice packet as a PDF (reportlab): the letter, then the evidence page.

Page 1 is the letter rendered from the template; page 2 the evidence: a
table of the facts (parcel, owner, address, section, distance and how it was
measured, main, deadline) and the map of the measurement. Text is set in
DejaVu Sans (shipped with matplotlib), so any owner's name and the section
sign print as written.

Text of any length lays out: a value longer than 300 characters (a
10,000-character address) is shortened with "…" in the PDF (the mail-merge CSV
keeps it whole), and a run of more than 80 characters without a space gets
break points (reportlab would otherwise take minutes splitting it, or find no
place for it on a page): :func:`gisnet.notices.template.shorten`,
:func:`~gisnet.notices.template.breakable`.
"""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

from .. import labels
from .template import Template, breakable, paragraphs, shorten

_FONT = "GisnetSans"
_FONT_BOLD = "GisnetSans-Bold"


def _fonts() -> tuple[str, str]:
    """Register DejaVu Sans (regular, bold) with reportlab once."""
    import matplotlib
    from reportlab.pdfbase import pdfmetrics
    from reportlab.pdfbase.ttfonts import TTFont

    if _FONT not in pdfmetrics.getRegisteredFontNames():
        ttf = Path(matplotlib.get_data_path()) / "fonts" / "ttf"
        pdfmetrics.registerFont(TTFont(_FONT, str(ttf / "DejaVuSans.ttf")))
        pdfmetrics.registerFont(TTFont(_FONT_BOLD, str(ttf / "DejaVuSans-Bold.ttf")))
    return _FONT, _FONT_BOLD


def _styles():
    from reportlab.lib.styles import ParagraphStyle

    regular, bold = _fonts()
    body = ParagraphStyle("body", fontName=regular, fontSize=10.5, leading=14.5,
                          spaceAfter=8)
    head = ParagraphStyle("head", fontName=bold, fontSize=15, leading=19, spaceAfter=12)
    small = ParagraphStyle("small", fontName=regular, fontSize=8, leading=10,
                           textColor="#444444")
    cell = ParagraphStyle("cell", fontName=regular, fontSize=9, leading=11.5)
    cell_bold = ParagraphStyle("cellb", fontName=bold, fontSize=9, leading=11.5)
    return body, head, small, cell, cell_bold


#: Packet values that come from the town's data (any length); each is shortened
#: in the PDF and the figure. The others are gisnet's or the profile's words.
DATA_FIELDS = ("parcel_id", "address", "owner_name", "main_id", "town", "notice_served")
#: Characters of any value in one cell of the evidence table (a cell must fit a page).
MAX_CELL_CHARS = 1500


def pdf_values(values: dict[str, Any]) -> dict[str, Any]:
    """A packet's values as a PDF shows them: the town's data (:data:`DATA_FIELDS`)
    shortened (:func:`~gisnet.notices.template.shorten`), the rest as it is."""
    return {k: shorten(v) if isinstance(v, str) and k in DATA_FIELDS else v
            for k, v in values.items()}


def _esc(text: str) -> str:
    from xml.sax.saxutils import escape

    return escape(breakable(text)).replace("\n", "<br/>")


def packet_story(template: Template, values: dict[str, Any], figure_png: bytes | None,
                 footer: str, measured: bool = True) -> list:
    """The reportlab flowables of one packet (letter, page break, evidence page)."""
    from reportlab.lib import colors
    from reportlab.lib.units import inch
    from reportlab.platypus import Image, PageBreak, Paragraph, Spacer, Table, TableStyle

    body, head, small, cell, cell_bold = _styles()
    values = pdf_values(values)
    story: list = []
    for kind, text in paragraphs(template.render(values)):
        story.append(Paragraph(_esc(text), head if kind == "heading" else body))
    story.append(Spacer(1, 6))
    story.append(Paragraph(_esc(footer), small))
    story.append(PageBreak())
    story.append(Paragraph(_esc(f"Evidence: parcel {values['parcel_id']}"), head))
    facts = [
        ("Parcel", values["parcel_id"]),
        ("Letter", values.get("letter_id") or labels.EMPTY),
        ("Owner", values["owner_name"]),
        ("Address", values["address"]),
        ("Status", values["status_label"]),
        ("Section", values["section"]),
        ("Ground", values["ground_text"]),  # (the letter quotes the rule in full)
        ("Distance", f"{values['distance']} to main {values['main_id']} "
                     f"(limit {values['distance_limit']})"),
        ("Measured", values["measure_text"]),
        ("Notice date", values["notice_date"]),
        ("Notice served", values["notice_served"] or labels.EMPTY),
        ("Deadline", values["deadline_text"]),
    ]
    table = Table([[Paragraph(_esc(k), cell_bold),
                    Paragraph(_esc(shorten(str(v), MAX_CELL_CHARS)), cell)]
                   for k, v in facts], colWidths=[1.2 * inch, 5.3 * inch])
    table.setStyle(TableStyle([
        ("VALIGN", (0, 0), (-1, -1), "TOP"),
        ("LINEBELOW", (0, 0), (-1, -1), 0.25, colors.HexColor("#cccccc")),
        ("BOTTOMPADDING", (0, 0), (-1, -1), 3),
        ("TOPPADDING", (0, 0), (-1, -1), 3),
    ]))
    story.append(table)
    story.append(Spacer(1, 10))
    if figure_png is not None:
        from .figure import SIZE_IN

        w = 6.0 * inch
        story.append(Image(io.BytesIO(figure_png), width=w, height=w * SIZE_IN[1] / SIZE_IN[0]))
    if measured:
        story.append(Paragraph(_esc(
            f"The measured line ({values['distance']}, {values['measure_text']}) runs from "
            f"the nearest point of the {values['measured_from']} to the nearest point of "
            f"main {values['main_id']}. Grid north is up."), small))
    else:
        story.append(Paragraph("No measured line: the parcel was not measured to a main.",
                               body))
    return story


def write_pdf(path: Path, stories: list[list], title: str) -> None:
    """Write the flowables of one or more packets into the PDF ``path`` (US letter)."""
    from reportlab.lib.pagesizes import letter
    from reportlab.lib.units import inch
    from reportlab.platypus import PageBreak, SimpleDocTemplate

    doc = SimpleDocTemplate(str(path), pagesize=letter, leftMargin=inch, rightMargin=inch,
                            topMargin=0.8 * inch, bottomMargin=0.8 * inch, title=title,
                            author="gisnet", creator="gisnet", invariant=True)
    flow: list = []
    for i, story in enumerate(stories):
        if i:
            flow.append(PageBreak())
        flow.extend(story)
    doc.build(flow)
