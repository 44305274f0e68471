"""Findings about one layer while it is mapped: each message names its role and ids."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..report import Report

#: How many ids a finding's message lists before "and N more".
MAX_IDS_IN_MESSAGE = 10


def ids_text(ids: Any) -> str:
    """Ids for a message: the first :data:`MAX_IDS_IN_MESSAGE`, then "and N more".

    Examples
    --------
    >>> ids_text(["M1", "M2"])
    'M1, M2'
    >>> ids_text(range(12))
    '0, 1, 2, 3, 4, 5, 6, 7, 8, 9 and 2 more'
    """
    ids = [str(i) for i in ids]
    shown = ", ".join(ids[:MAX_IDS_IN_MESSAGE])
    more = len(ids) - MAX_IDS_IN_MESSAGE
    return shown + (f" and {more} more" if more > 0 else "")


@dataclass
class LayerNotes:
    """Adds findings about one layer role to a report.

    Attributes
    ----------
    role
        The layer role; every message starts with ``"<role>: "`` and every
        finding has ``layer=role``.
    report
        Where the findings go.
    """

    role: str
    report: Report

    def add(self, kind: str, severity: str, message: str, ids: Any = None) -> None:
        """Record a finding; ``ids`` (any iterable) become its comma-separated feature ids."""
        fid = None if ids is None else ",".join(str(i) for i in ids)
        self.report.add(kind, severity, f"{self.role}: {message}", layer=self.role,
                        feature_id=fid)
