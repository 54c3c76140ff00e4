"""Internal force terms, one module per energy family.

Each kernel evaluates, for every element in parallel, its energy [J], the forces on its corners
[N] and (optionally) the 3x3 blocks of ∂f/∂x [N/m] and ∂f/∂v [N·s/m], writing them into the
shared local buffers that ``sparse.gather_*`` sums per vertex.
"""
