"""Force terms, one module per energy family, each with its kernels and its coefficients.

``membrane`` (Baraff–Witkin triangles), ``bending`` (dihedral hinges), ``springs`` (Provot's
structural, shear and flexion springs) and ``external`` (gravity, air drag, wind, goal springs).
Each element term maps an SI material onto its elements (``*_coefficients``, frozen into the
ClothModel by ``model.build_model``) and evaluates, for every element in parallel, its energy
[J], the forces on its corners [N] and optionally its 3x3 blocks of a·∂f/∂x + b·∂f/∂v, added
into the per-vertex forces and the block-sparse matrix by elements of one colour at a time
(linalg/sparse.build_assembly), so that no two threads write the same vertex.
"""
