"""Preset loading from TOML files: listing, validation, metadata, and the bundled presets."""

import dataclasses
from pathlib import Path

import pytest

from solver.params import MaterialParams, ParameterError
from solver.formats.presets import list_presets, load_preset, preset_dir, preset_info

COTTON = """\
# Cotton shirting
[preset]
name = "Cotton"
description = "Plain-weave cotton shirting"

[material]
area_density = 0.13
stretch_stiffness = 3000.0
bend_stiffness = 2e-6
max_strain = 0.05

[sources]
area_density = "Example et al. 2020, table 1"
stretch_stiffness = "KES-F tensile test"
"""

SILK = """\
[preset]
name = "Silk"

[material]
area_density = 0.05
"""


@pytest.fixture
def presets(tmp_path):
    (tmp_path / "cotton.toml").write_text(COTTON)
    (tmp_path / "silk.toml").write_text(SILK)
    (tmp_path / "README.md").write_text("not a preset")
    return tmp_path


def write_preset(folder: Path, text: str, name: str = "broken") -> Path:
    (folder / f"{name}.toml").write_text(text)
    return folder


def test_preset_dir_is_the_repository_presets_folder():
    assert preset_dir() == Path(__file__).resolve().parent.parent / "presets"


def test_list_presets_sorted_stems(presets):
    assert list_presets(presets) == ["cotton", "silk"]
    assert list_presets(presets / "absent") == []


def test_load_preset_values_and_defaults(presets):
    material = load_preset("cotton", presets)
    assert isinstance(material, MaterialParams)
    assert material.area_density == 0.13
    assert material.stretch_stiffness == 3000.0
    assert material.bend_stiffness == 2e-6
    assert material.max_strain == 0.05
    assert material.shear_stiffness == MaterialParams().shear_stiffness  # omitted -> default


def test_name_lookup_is_case_insensitive(presets):
    assert load_preset("Cotton", presets) == load_preset("cotton", presets)


def test_preset_info(presets):
    info = preset_info("cotton", presets)
    assert info["name"] == "Cotton"
    assert info["description"] == "Plain-weave cotton shirting"
    assert info["sources"] == {"area_density": "Example et al. 2020, table 1",
                               "stretch_stiffness": "KES-F tensile test"}
    assert info["material"]["area_density"] == 0.13
    assert preset_info("silk", presets)["description"] == ""
    assert preset_info("silk", presets)["sources"] == {}


def test_unknown_preset_lists_available(presets):
    with pytest.raises(ParameterError) as info:
        load_preset("denim", presets)
    assert info.value.key == "material"
    assert str(info.value) == "material: unknown preset 'denim' (available: cotton, silk)"


@pytest.mark.parametrize("name", ["../cotton", "cotton.toml", "", "README"])
def test_only_preset_stems_are_names(presets, name):
    with pytest.raises(ParameterError, match="unknown preset"):
        load_preset(name, presets)


@pytest.mark.parametrize("text, key, problem", [
    ('[preset]\nname = "B"\n[material]\narea_density = -1.0\n',
     "preset broken.area_density", "must be > 0"),
    ('[preset]\nname = "B"\n[material]\narea_densty = 0.1\n',
     "preset broken.area_densty", "unknown key"),
    ('[preset]\nname = "B"\n[material]\narea_density = "heavy"\n',
     "preset broken.area_density", "expected a number"),
    ('[preset]\nname = "B"\n[sources]\narea_densty = "x"\n',
     "preset broken.sources.area_densty", "unknown key"),
    ('[preset]\nname = "B"\n[sources]\narea_density = 3\n',
     "preset broken.sources.area_density", "expected a string"),
    ('[preset]\ndescription = "no name"\n', "preset broken.preset.name", "missing"),
    ('[preset]\nname = 3\n', "preset broken.preset.name", "expected a string"),
    ('[preset]\nname = "B"\nauthor = "me"\n', "preset broken.preset.author", "unknown key"),
    ('[preset]\nname = "B"\n[extra]\n', "preset broken.extra", "unknown key"),
    ('preset = 3\n', "preset broken.preset", "expected a table"),
    ('[preset\n', "preset broken", "cannot read broken.toml"),
])
def test_invalid_preset_files(tmp_path, text, key, problem):
    folder = write_preset(tmp_path, text)
    for call in (load_preset, preset_info):
        with pytest.raises(ParameterError) as info:
            call("broken", folder)
        assert info.value.key == key
        assert problem in info.value.problem


def test_bundled_presets_are_valid_and_cite_sources():
    """Every file in presets/ loads, and each material value it sets has a citation."""
    fields = {f.name for f in dataclasses.fields(MaterialParams)}
    for name in list_presets():
        material = load_preset(name)
        info = preset_info(name)
        assert info["name"] and isinstance(info["description"], str)
        assert set(info["material"]) <= fields
        missing = set(info["material"]) - set(info["sources"])
        assert not missing, f"preset {name}: no [sources] entry for {sorted(missing)}"
        assert isinstance(material, MaterialParams)
