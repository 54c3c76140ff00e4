"""Files the solver reads and writes: scene files (scene), Wavefront OBJ meshes (obj),
material presets (presets) and PC2 point caches (pc2: what Blender's Mesh Cache modifier reads)."""
