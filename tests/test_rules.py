"""gisnet.rules: the shared predicates every analysis and the maps decide with."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from gisnet import rules

MAINS = pd.DataFrame({
    "kind": ["sanitary", " Storm", None, "unknown", "force", np.nan, "", "combined"],
    "owner": ["private", None, "Public", "PRIVATE ", None, None, None, "public"],
    "status": [None, "active", "inactive", "", None, "ACTIVE", "abandoned", "proposed"],
})


def test_unknown_kind_is_sanitary_for_every_rule():
    assert rules.effective_kind(MAINS).tolist() == [
        "sanitary", "storm", "sanitary", "sanitary", "force", "sanitary", "sanitary", "combined"]
    assert rules.kind_is_unknown(MAINS).tolist() == [False, False, True, True, False, True, True,
                                                     False]
    # no kind column at all: every main is an unknown-kind (sanitary) gravity main
    bare = pd.DataFrame({"x": [1, 2]})
    assert rules.effective_kind(bare).tolist() == ["sanitary", "sanitary"]
    assert rules.is_gravity(bare).all() and rules.is_eligible_for_connection(bare).all()
    assert rules.carries_sanitary_flow(bare).all()


def test_public_active_gravity():
    assert rules.is_public(MAINS).tolist() == [False, True, True, False, True, True, True, True]
    assert rules.is_active(MAINS).tolist() == [True, True, False, True, True, True, False, False]
    assert rules.is_gravity(MAINS).tolist() == [True, True, True, True, False, True, True, True]


def test_loader_columns_win_over_raw_text():
    df = MAINS.assign(public=[True] * 8, active=pd.array([None] * 7 + [False], dtype="boolean"))
    assert rules.is_public(df).all()
    assert rules.is_active(df).tolist() == [True] * 7 + [False]


def test_eligible_for_connection_is_public_active_gravity_and_an_eligible_kind():
    # row 0 private, 1 storm, 2 inactive, 3 private, 4 force, 5 ok (unknown kind),
    # 6 abandoned, 7 proposed
    assert rules.is_eligible_for_connection(MAINS).tolist() == [
        False, False, False, False, False, True, False, False]
    # a force main never counts, even if a profile lists it
    assert not rules.is_eligible_for_connection(MAINS, ("force",)).any()
    only_combined = pd.DataFrame({"kind": ["combined", "sanitary", None]})
    assert rules.is_eligible_for_connection(only_combined, ("combined",)).tolist() == [
        True, False, False]


def test_sanitary_flow_ignores_ownership_but_not_storm_or_status():
    assert rules.carries_sanitary_flow(MAINS).tolist() == [
        True, False, False, True, True, True, False, False]


@pytest.mark.parametrize(("value", "limit", "strict", "expected"), [
    (0.8000000000000002, 0.8, True, False),   # 1.12 / 1.4 MGD: "in excess of 80 %" is not met
    (0.8000001, 0.8, True, True),
    (0.0027999999999997, 0.0028, False, True),  # a slope at its minimum is "at least" it
    (float("nan"), 0.8, True, False),
    (float("nan"), 0.8, False, False),
])
def test_exceeds(value, limit, strict, expected):
    assert rules.exceeds(value, limit, strict=strict) is expected


def test_within_counts_the_limit_itself():
    # "within 300 feet": exactly 300 ft is within; 300.01 ft is not; no distance never is
    got = rules.within(np.array([0.0, 300.0, 300.004, 300.01, np.nan]), 300.0)
    assert got.tolist() == [True, True, True, False, False]


def test_utilization_class_is_strictly_over_each_threshold():
    u = np.array([0.5, 0.80, 0.8000000000000002, 0.85, 0.91, 0.95, 1.0, 1.2, np.nan, np.nan])
    cap = np.array([1.0] * 8 + [np.nan, 0.0])
    got = rules.utilization_class(u, cap, 0.80, 0.91, 1.0)
    assert got.tolist() == ["ok", "ok", "ok", "threshold", "threshold", "deficient", "deficient",
                            "surcharged", "unknown", "nocapacity"]
    flat = rules.utilization_class([np.nan], [np.nan], 0.8, 0.91, 1.0, no_capacity=[True])
    assert flat.tolist() == ["nocapacity"]
