"""The connection register: what staff record about each parcel, kept across runs.

=====================================  ============================================
:mod:`gisnet.register.entries`         the entries (events, checks), their effect
                                       on a run (:func:`apply_register`)
:mod:`gisnet.register.store`           where the register lives (its own
                                       GeoPackage beside the results, or a PostGIS
                                       table no run drops) and appending to it
:mod:`gisnet.register.changes`         the ``changes`` layer (this run against the
                                       previous one into the same output) and the
                                       ``overdue`` layer
=====================================  ============================================
"""

from __future__ import annotations

from .changes import PreviousRun, changes_layer, overdue_layer, previous_run
from .entries import EVENTS, GROUNDS, Entry, apply_register, live, register_state
from .store import (
    REGISTER_FILE,
    REGISTER_TABLE,
    add_entries,
    empty_register,
    ensure_register,
    read_register,
    register_place,
)

__all__ = [
    "EVENTS",
    "GROUNDS",
    "REGISTER_FILE",
    "REGISTER_TABLE",
    "Entry",
    "PreviousRun",
    "add_entries",
    "apply_register",
    "changes_layer",
    "empty_register",
    "ensure_register",
    "live",
    "overdue_layer",
    "previous_run",
    "read_register",
    "register_place",
    "register_state",
]
