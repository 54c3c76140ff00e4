"""Files the solver reads and writes: scene files (scene), Wavefront OBJ meshes (obj) and
material presets (presets)."""
