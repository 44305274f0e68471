"""Notices to connect and their evidence packets (``gisnet notices``).

For every parcel the town could order to connect (:data:`ORDERABLE`, see
:mod:`gisnet.notices.packets` for the ordinance's words) and for any parcel
asked for by id: a printable packet (the letter from an editable template,
the rule in the ordinance's words with its section, the measured distance
and how it was measured, the deadline from the notice date, and a map of the
measurement), one PDF per parcel, a combined PDF and a mail-merge table
(CSV with a BOM, XLSX). :func:`write_notices` is the API.
"""

from __future__ import annotations

from .packets import ORDERABLE, Packet, build_packets, deadline, rule_text, select_rows
from .template import PLACEHOLDERS, Template, find_template, load_template
from .writing import (
                      COMBINED_FILE,
                      CSV_FILE,
                      MERGE_COLUMNS,
                      XLSX_FILE,
                      NoticeSet,
                      merge_table,
                      write_notices,
)

__all__ = ["COMBINED_FILE", "CSV_FILE", "MERGE_COLUMNS", "ORDERABLE", "PLACEHOLDERS",
           "XLSX_FILE", "NoticeSet", "Packet", "Template", "build_packets", "deadline",
           "find_template", "load_template", "merge_table", "rule_text", "select_rows",
           "write_notices"]
