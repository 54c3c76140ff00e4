"""Sparse linear algebra of the implicit solve: 3x3-block matrices (sparse), the filtered PCG
(cg), and its preconditioners (block Jacobi and a lagged exact factor in preconditioner,
IC(0) in incomplete_cholesky)."""
