"""Connection orders and their evidence packets (``gisnet notices``).

An order is written only where the ordinance lets a notice be given and its
ground is recorded (:func:`is_order`, see :mod:`gisnet.notices.packets`); the
other parcels the town could order are a staff list (:func:`candidates`,
:func:`write_candidates`). Each order is a printable packet: the letter from an
editable template, the section in the ordinance's own words (checked against
the shipped text), the ground, the measured distance and how it was measured,
the deadline (never sooner than the ordinance's least compliance period,
:mod:`gisnet.notices.terms`), the town's signatory, contact, penalty and
appeal blocks, and a map of the measurement; one PDF per parcel, a combined
PDF and a mail-merge table (CSV with a BOM, XLSX). :func:`write_notices` is
the API.
"""

from __future__ import annotations

from .packets import (
    CANDIDATE_COLUMNS,
    ORDERABLE,
    Packet,
    build_packets,
    candidates,
    is_order,
    select_rows,
)
from .template import PLACEHOLDERS, Template, find_template, load_template
from .terms import Deadline, deadline, letter_blocks, quotations
from .writing import (
    CANDIDATES_CSV,
    COMBINED_FILE,
    CSV_FILE,
    MERGE_COLUMNS,
    XLSX_FILE,
    NoticeSet,
    merge_table,
    write_candidates,
    write_notices,
)

__all__ = ["CANDIDATES_CSV", "CANDIDATE_COLUMNS", "COMBINED_FILE", "CSV_FILE",
           "MERGE_COLUMNS", "ORDERABLE", "PLACEHOLDERS", "XLSX_FILE", "Deadline", "NoticeSet",
           "Packet", "Template", "build_packets", "candidates", "deadline", "find_template",
           "is_order", "letter_blocks", "load_template", "merge_table", "quotations",
           "select_rows", "write_candidates", "write_notices"]
