"""Yarn presets (presets/yarns/), read by the same code as the fabric presets
(solver/formats/presets.py)."""

import dataclasses

import pytest

from solver.formats.presets import (list_presets, list_yarn_presets, load_yarn_preset,
                                    yarn_preset_info)
from solver.params import ParameterError, YarnParams


def test_shipped_yarns_load_validate_and_cite_every_value():
    assert list_yarn_presets() == ["cotton_dk", "merino_fine", "wool_worsted"]
    for name in list_yarn_presets():
        yarn = load_yarn_preset(name)
        info = yarn_preset_info(name)
        assert set(info["yarn"]) == {f.name for f in dataclasses.fields(YarnParams)}
        assert set(info["sources"]) == set(info["yarn"]), name
        assert 0.5e-3 <= yarn.radius <= 2e-3
    worsted = load_yarn_preset("wool_worsted")
    assert worsted == YarnParams()          # the defaults are the worsted yarn
    # finer yarns are thinner, lighter and bend more easily
    fine = load_yarn_preset("merino_fine")
    assert fine.radius < worsted.radius and fine.linear_density < worsted.linear_density
    assert fine.bend_stiffness < worsted.bend_stiffness


def test_yarns_are_not_fabrics():
    fabrics = list_presets()
    assert "cotton" in fabrics
    assert not set(fabrics) & set(list_yarn_presets())
    assert "yarns" not in fabrics


def test_bad_yarn_presets_name_the_problem(tmp_path):
    (tmp_path / "bad.toml").write_text('[preset]\nname = "B"\n[yarn]\nradius = -1.0\n')
    (tmp_path / "typo.toml").write_text('[preset]\nname = "T"\n[yarn]\nradious = 1e-3\n')
    (tmp_path / "fabric.toml").write_text('[preset]\nname = "F"\n[material]\nthickness = 1e-3\n')
    with pytest.raises(ParameterError) as err:
        load_yarn_preset("bad", tmp_path)
    assert err.value.key == "yarn preset bad.radius"
    with pytest.raises(ParameterError) as err:
        load_yarn_preset("typo", tmp_path)
    assert err.value.key == "yarn preset typo.radious"
    with pytest.raises(ParameterError) as err:     # a fabric's table is no yarn
        load_yarn_preset("fabric", tmp_path)
    assert err.value.key == "yarn preset fabric.material"
    with pytest.raises(ParameterError) as err:
        load_yarn_preset("nylon", tmp_path)
    assert err.value.key == "yarn" and "unknown yarn preset 'nylon'" in str(err.value)
