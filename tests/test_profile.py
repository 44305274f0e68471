"""Jurisdiction profiles: loading, validation, and the ordinance numbers they carry."""

from __future__ import annotations

import copy
import dataclasses
import json
import pickle
import tomllib
from collections.abc import Mapping
from pathlib import Path

import pytest

from gisnet.errors import ConfigError
from gisnet.profile import (
    PEAKING_FORMULAS,
    RULES_DIR,
    SECTIONS,
    Connection,
    FrozenMap,
    LimitParameter,
    Profile,
    ProfileTable,
    builtin_profiles,
    load_profile,
    ordinance_text,
    profile_from_dict,
)

POUGH_TEXT = ordinance_text("poughkeepsie-fourth-ward")
BERLIN_TEXT = ordinance_text("berlin-nh")


def _raw(name: str) -> dict:
    with (RULES_DIR / f"{name}.toml").open("rb") as fh:
        return tomllib.load(fh)


def _write(tmp_path: Path, data: dict) -> Path:
    """Write a profile dict as TOML (a tiny writer for the shapes profiles use)."""

    def val(v):
        if isinstance(v, bool):
            return "true" if v else "false"
        if isinstance(v, str):
            return '"' + v.replace("\\", "\\\\").replace('"', '\\"') + '"'
        if isinstance(v, list):
            return "[" + ", ".join(val(x) for x in v) + "]"
        return repr(v)

    lines: list[str] = []

    def table(name: str, d: dict, array: bool = False) -> None:
        lines.append(f"[[{name}]]" if array else f"[{name}]")
        subs = []
        for k, v in d.items():
            if isinstance(v, dict) or (isinstance(v, list) and v and isinstance(v[0], dict)):
                subs.append((k, v))
            else:
                lines.append(f'"{k}" = {val(v)}')
        for k, v in subs:
            if isinstance(v, dict):
                table(f"{name}.{k}", v)
            else:
                for e in v:
                    table(f"{name}.{k}", e, array=True)

    for sec, body in data.items():
        if isinstance(body, list):
            for e in body:
                table(sec, e, array=True)
        else:
            table(sec, body)
    p = tmp_path / "town-profile.toml"
    p.write_text("\n".join(lines) + "\n")
    return p


def test_builtins_are_listed_and_load():
    assert builtin_profiles() == ["berlin-nh", "poughkeepsie-fourth-ward"]
    for name in builtin_profiles():
        p = load_profile(name)
        assert isinstance(p, Profile)
        assert p.id == name
        assert p.raw["profile"]["id"] == name


def test_poughkeepsie_connection_rule_matches_ordinance():
    c = load_profile("poughkeepsie-fourth-ward").connection
    assert c.distance_ft == 300.0
    assert c.measure == "property_line"
    assert c.deadline_days == 30
    assert c.section == "§ 168-22.2G"
    assert c.applies_to == "all"
    assert "public health hazard" in c.notice_condition
    assert "highway improvement program" in c.notice_condition
    assert c.require_abutting is True
    assert set(c.eligible_kinds) == {"sanitary", "combined"}
    assert c.septic_max_years is None
    text = POUGH_TEXT
    assert "within 300 feet of the property line" in text
    assert "within 30 days after the date of official notice" in text


def test_berlin_connection_rule_matches_ordinance():
    c = load_profile("berlin-nh").connection
    assert c.distance_ft == 200.0
    assert c.measure == "building"
    assert c.deadline_days == 90
    assert c.section == "sec. 16-50"
    assert c.applies_to == "new_buildings"
    assert c.septic_max_years == 15
    assert c.notice_condition == ""
    text = BERLIN_TEXT
    assert "two hundred (200) feet of the building measured on a straight line" in text
    assert "ninety (90) days after the date of official notice" in text
    assert "fifteen (15) years" in text
    assert "All newly constructed houses" in text


def test_flow_thresholds_and_approvals():
    pk = load_profile("poughkeepsie-fourth-ward")
    (review,) = [a for a in pk.approvals if a.section == "§ 168-22.5G(4)"]
    assert review.trigger == "review_flow_over" and review.flow_gpd == 10_000
    assert pk.pretreatment.local_review_flow_gpd == 10_000
    assert "10,000 gallons per day" in POUGH_TEXT

    be = load_profile("berlin-nh")
    assert [a.flow_gpd for a in be.approvals_for("flow_over")] == [5000.0]
    assert len(be.approvals_for("plant_over")) == 1
    # DES's approval of any industrial wastewater, and the 60-day permit application
    assert [a.lead_days for a in be.approvals_for("industrial")] == [None, 60]
    assert be.capacity.plant_threshold == 0.80
    btxt = BERLIN_TEXT
    assert "50 population equivalents (5,000 gpd)" in btxt
    assert "in excess of 80% design flow capacity" in btxt
    # PE definition: 50 PE = 5,000 gpd -> 100 gpd per PE
    assert be.flow.gpd_per_pe == 5000 / 50
    for p in (pk, be):
        assert p.pretreatment.siu_process_flow_gpd == 25_000
        assert p.pretreatment.siu_plant_fraction == 0.05
        assert "403.3(v)" in p.pretreatment.siu_section


def test_poughkeepsie_strength_limits():
    p = load_profile("poughkeepsie-fourth-ward")
    expect = {"bod": 240, "ss": 300, "temperature": 120, "cyanide": 2, "iron": 5,
              "chromium": 5, "nickel": 1, "copper": 1, "cadmium": 3, "zinc": 3}
    for name, value in expect.items():
        assert p.limit(name).max == value, name
    ph = p.limit("ph")
    assert (ph.min, ph.max) == (6.5, 9.5)
    assert p.limit("bod").section == "§ 168-22.5G(1)"
    assert p.limit("ss").section == "§ 168-22.5G(2)"
    assert p.limit("zinc").section == "§ 168-22.5C(9)"
    assert p.limits.hourly_max_over_average == 3.0
    assert (p.limits.slug_factor, p.limits.slug_minutes) == (5.0, 15.0)
    text = POUGH_TEXT
    assert "higher than 120° F" in text
    assert "between 6.5 and 9.5" in text
    assert "BOD of more than 240 parts per million" in text


def test_berlin_strength_limits():
    p = load_profile("berlin-nh")
    assert p.limits.normal_bod_mg_l == 250 and p.limits.normal_ss_mg_l == 300
    assert p.limit("temperature").max == 150
    assert p.limit("temperature_at_plant").max == 104
    assert p.limits.hourly_max_over_average is None
    text = BERLIN_TEXT
    assert "two hundred fifty (250) mg liter BOD and three hundred (300) mg liter SS" in text
    assert "greater than 150°F" in text and "exceed 104°F" in text


def test_design_constants():
    for name in builtin_profiles():
        p = load_profile(name)
        assert p.capacity.manning_n == 0.013
        assert p.capacity.min_velocity_fps == 2.0
        assert p.capacity.min_slope_pct[8.0] == 0.40
        assert p.capacity.min_slope_pct[36.0] == 0.05
        assert list(p.capacity.min_slope_pct) == sorted(p.capacity.min_slope_pct)
        assert p.flow.peaking_formula == "harmon" and p.flow.peaking_cap == 4.0
        assert p.flow.gpd_per_person == 100.0
        assert p.capacity.manning_n_material["PVC"] == 0.010
    assert load_profile("berlin-nh").flow.gpd_per_bedroom == 150.0


def test_profile_is_frozen_and_copyable():
    p = load_profile("berlin-nh")
    with pytest.raises(AttributeError):
        p.connection.distance_ft = 10.0
    with pytest.raises(AttributeError):
        p.connection = None
    with pytest.raises(TypeError):
        p.capacity.min_slope_pct[8.0] = 1.0
    assert pickle.loads(pickle.dumps(p)) == p
    assert copy.deepcopy(p).capacity.min_slope_pct == p.capacity.min_slope_pct
    p.raw["connection"]["distance_ft"] = 1.0  # a copy: the profile does not change
    assert load_profile("berlin-nh").connection.distance_ft == 200.0
    assert p.raw["connection"]["distance_ft"] == 200.0
    assert hash(copy.deepcopy(p)) == hash(p)


def test_tables_are_read_by_attribute_only():
    p = load_profile("poughkeepsie-fourth-ward")
    tables = [getattr(p, name) for name in SECTIONS if name != "approvals"]
    for t in [*tables, *p.approvals, *p.limits.parameter]:
        assert isinstance(t, ProfileTable) and dataclasses.is_dataclass(t)
        assert not isinstance(t, Mapping)
        assert not hasattr(t, "get")
        with pytest.raises(TypeError):
            t["section"]
    assert isinstance(p.approvals, tuple) and isinstance(p.limits.parameter, tuple)
    assert isinstance(p.connection.eligible_kinds, tuple)
    for sub in (p.flow.land_use_gpd, p.flow.sources, p.capacity.min_slope_pct,
                p.capacity.manning_n_material, p.limits.sections):
        assert isinstance(sub, FrozenMap)
    # optional keys the file leaves out read as None
    assert p.connection.new_construction_from is None
    assert p.limit("ph").text is None and p.limit("nonesuch") is None


def test_schema_is_the_dataclass_fields():
    for name in builtin_profiles():
        data = _raw(name)
        for table, cls in SECTIONS.items():
            if table not in data:  # an optional table (Berlin has no [monthly_increase])
                from gisnet.profile.sections import OPTIONAL_SECTIONS

                assert table in OPTIONAL_SECTIONS, (name, table)
                continue
            entries = data[table] if isinstance(data[table], list) else [data[table]]
            for entry in entries:
                assert set(entry) <= set(cls.keys()), (name, table)
                assert set(cls.required_keys()) <= set(entry), (name, table)
        for entry in data["limits"]["parameter"]:
            assert set(LimitParameter.required_keys()) <= set(entry) <= set(
                LimitParameter.keys())
    assert Connection.keys()[0] == "distance_ft"
    assert "distance_ft" in Connection.required_keys()
    assert "septic_max_years" not in Connection.required_keys()
    for cls in (*SECTIONS.values(), LimitParameter):
        for f in dataclasses.fields(cls):
            assert f.metadata["doc"], (cls.__name__, f.name)
            if f.name.endswith("_ft"):
                assert f.metadata["unit"] == "ft", f.name
            if f.name.endswith("_gpd"):
                assert f.metadata["unit"].startswith("gpd"), f.name
        assert "Attributes" in cls.__doc__


def test_tables_built_directly_are_checked():
    c = load_profile("berlin-nh").connection
    with pytest.raises(ConfigError, match=r"key connection\.distance_ft must be > 0"):
        dataclasses.replace(c, distance_ft=-1.0)
    assert dataclasses.replace(c, distance_ft=250.0).distance_ft == 250.0
    p = load_profile("berlin-nh").limit("bod")
    with pytest.raises(ConfigError, match="needs max or min"):
        dataclasses.replace(p, max=None)


def test_peaking_formulas_are_those_capacity_implements():
    assert PEAKING_FORMULAS == ("harmon", "none")
    data = _raw("berlin-nh")
    data["flow"]["peaking_formula"] = "none"
    assert profile_from_dict(data).flow.peaking_formula == "none"
    data["flow"]["peaking_formula"] = "ten_states"
    with pytest.raises(ConfigError, match=r"flow\.peaking_formula must be one of harmon, none"):
        profile_from_dict(data)


def test_to_dict_is_plain_data():
    p = load_profile("poughkeepsie-fourth-ward")
    d = p.to_dict()
    assert list(d) == list(SECTIONS)
    assert d["connection"]["distance_ft"] == 300.0
    assert d["connection"]["eligible_kinds"] == ["sanitary", "combined"]
    assert d["connection"]["septic_max_years"] is None
    assert d["limits"]["parameter"][0] == p.limits.parameter[0].to_dict()
    assert d["approvals"][0]["id"] == p.approvals[0].id
    assert type(d["capacity"]["min_slope_pct"]) is dict
    json.dumps(d)


def test_name_variants_and_no_default():
    assert load_profile("berlin_nh").id == "berlin-nh"
    with pytest.raises(ConfigError, match=r"no profile named.*berlin-nh, poughkeepsie-fourth-ward"):
        load_profile(None)
    p = load_profile("berlin-nh")
    assert load_profile(p) is p


def test_unknown_builtin_name():
    with pytest.raises(ConfigError, match="unknown profile 'atlantis'"):
        load_profile("atlantis")


def test_town_profile_file(tmp_path):
    data = _raw("berlin-nh")
    data["connection"]["distance_ft"] = 250
    data["profile"]["id"] = "my-town"
    path = _write(tmp_path, data)
    p = load_profile(path)
    assert p.id == "my-town"
    assert p.connection.distance_ft == 250.0
    assert p.path == path.resolve()
    assert load_profile(str(path)).connection.measure == "building"


def test_unknown_key_names_file_and_key(tmp_path):
    data = _raw("poughkeepsie-fourth-ward")
    data["connection"]["distnace_ft"] = 100
    path = _write(tmp_path, data)
    with pytest.raises(ConfigError) as ei:
        load_profile(path)
    assert "connection.distnace_ft" in str(ei.value)
    assert str(path.resolve()) in str(ei.value)


def test_unknown_table(tmp_path):
    data = _raw("poughkeepsie-fourth-ward")
    data["extras"] = {"a": 1}
    with pytest.raises(ConfigError, match="unknown key 'extras'"):
        load_profile(_write(tmp_path, data))


def test_missing_required_key(tmp_path):
    data = _raw("berlin-nh")
    del data["connection"]["deadline_days"]
    path = _write(tmp_path, data)
    with pytest.raises(ConfigError, match=r"missing required key connection\.deadline_days") as ei:
        load_profile(path)
    assert str(path.resolve()) in str(ei.value)


def test_missing_table():
    data = _raw("berlin-nh")
    del data["limits"]
    with pytest.raises(ConfigError, match=r"missing required table \[limits\]"):
        profile_from_dict(data, path="x.toml")


@pytest.mark.parametrize(
    ("section", "key", "value", "message"),
    [
        ("connection", "measure", "as_the_crow_flies", "connection.measure"),
        ("connection", "distance_ft", -5, "connection.distance_ft"),
        ("connection", "distance_ft", "300", "must be a number"),
        ("connection", "eligible_kinds", ["sanitary", "sewage"], "connection.eligible_kinds"),
        ("connection", "deadline_days", 30.5, "must be an integer"),
        ("connection", "require_abutting", "yes", "true or false"),
        ("capacity", "manning_n", 1.3, "capacity.manning_n"),
        ("capacity", "deficient", 1.5, "capacity.deficient"),
        ("flow", "peaking_formula", "babbitt", "flow.peaking_formula"),
    ],
)
def test_bad_values(section, key, value, message):
    data = _raw("poughkeepsie-fourth-ward")
    data[section][key] = value
    with pytest.raises(ConfigError, match=message):
        profile_from_dict(data, path="p.toml")


def test_bad_approval_and_limit():
    data = _raw("poughkeepsie-fourth-ward")
    del data["approvals"][0]["flow_gpd"]
    with pytest.raises(ConfigError, match=r"approvals\[0\]\.flow_gpd"):
        profile_from_dict(data)
    data = _raw("poughkeepsie-fourth-ward")
    data["limits"]["parameter"][0]["colour"] = "red"
    with pytest.raises(ConfigError, match=r"limits\.parameter\[0\]\.colour"):
        profile_from_dict(data)
    data = _raw("poughkeepsie-fourth-ward")
    del data["limits"]["parameter"][0]["max"]
    with pytest.raises(ConfigError, match="needs max or min"):
        profile_from_dict(data)


def test_bad_toml_and_missing_file(tmp_path):
    bad = tmp_path / "bad.toml"
    bad.write_text("[connection\n")
    with pytest.raises(ConfigError, match="not valid TOML"):
        load_profile(bad)
    with pytest.raises(ConfigError, match="does not exist"):
        load_profile(tmp_path / "none.toml")
