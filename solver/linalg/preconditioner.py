"""A sparse LU factor of the implicit system, reused over many steps as the PCG preconditioner.

Block Jacobi needs O(resolution) iterations on stiff cloth (k·h²/m ~ 10⁵ for cotton). The
system matrix M − h·D − h²·K changes slowly from step to step (cloth is nearly inextensible, so K
mostly rotates with the cloth), so an exact factor of an *earlier* matrix is a near-perfect
preconditioner: a factor many steps old leaves only a few PCG iterations per solve. It is
refreshed only when the PCG starts needing more iterations (``refactor_iterations``) or the step
length changes (docs/solver.md, "Lagged sparse factor").

Factoring only the near couplings (vertex pairs sharing a triangle) and dropping the bending
couplings across edges was tried: it makes the factor indefinite (the wing-wing blocks of a
hinge are comparable to the vertex mass at fine resolutions), and compensating the dropped
blocks on the diagonal keeps it definite but costs several times the PCG iterations per solve,
more than the cheaper factor saves.

Hard-pinned vertices get identity rows and columns, so the factor is exactly the inverse of the
filtered matrix on the free subspace. Partial constraints (a contact normal) are handled by the
PCG's filter; the factor then is still a good, SPD preconditioner.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
from scipy.sparse.linalg import splu

from .._jit import njit, prange
from .sparse import Assembly


@njit
def filtered_blocks(row_ptr, col, blocks, diag, fixed_mask, out):
    """A with the rows and columns of fixed vertices replaced by the identity.

    Args:
        row_ptr, col, blocks: the block-CSR matrix A, blocks (nnzb, 3, 3).
        diag: (V,) slot of each diagonal block.
        fixed_mask: (V,) True for fully prescribed vertices.
        out: (nnzb, 3, 3) written.
    """
    for i in range(len(row_ptr) - 1):
        for p in range(row_ptr[i], row_ptr[i + 1]):
            if fixed_mask[i] or fixed_mask[col[p]]:
                out[p] = 0.0
            else:
                out[p] = blocks[p]
        if fixed_mask[i]:
            for r in range(3):
                out[diag[i], r, r] = 1.0


@njit(parallel=True)
def projected_blocks(row_ptr, col, blocks, diag, filt, out):
    """The matrix of the constrained system: S_i·A_ij·S_j, plus I − S_i on the diagonal.

    With S_i the per-vertex filters of the PCG (I free, 0 pinned, I − n·nᵀ held along a
    contact normal n) this is the operator the filtered PCG works with, extended by the
    identity on the constrained directions; fixed vertices get identity rows.

    Args:
        row_ptr, col, blocks: the block-CSR matrix A, blocks (nnzb, 3, 3).
        diag: (V,) slot of each diagonal block.
        filt: (V, 3, 3) filters S_i.
        out: (nnzb, 3, 3) written.
    """
    for i in prange(len(row_ptr) - 1):
        for p in range(row_ptr[i], row_ptr[i + 1]):
            j = col[p]
            # (S_i·A_ij)·S_j as two 3x3 products: 54 multiply-adds instead of 243
            t = _mat3(filt[i], blocks[p])
            for r in range(3):
                for c in range(3):
                    out[p, r, c] = (t[r][0] * filt[j, 0, c] + t[r][1] * filt[j, 1, c]
                                    + t[r][2] * filt[j, 2, c])
        d = diag[i]
        for r in range(3):
            for c in range(3):
                out[d, r, c] += (1.0 if r == c else 0.0) - filt[i, r, c]


@njit(inline="always")
def _mat3(a, b):
    """a·b for 3x3 arrays, as a tuple of row tuples (no temporary array)."""
    return ((a[0, 0] * b[0, 0] + a[0, 1] * b[1, 0] + a[0, 2] * b[2, 0],
             a[0, 0] * b[0, 1] + a[0, 1] * b[1, 1] + a[0, 2] * b[2, 1],
             a[0, 0] * b[0, 2] + a[0, 1] * b[1, 2] + a[0, 2] * b[2, 2]),
            (a[1, 0] * b[0, 0] + a[1, 1] * b[1, 0] + a[1, 2] * b[2, 0],
             a[1, 0] * b[0, 1] + a[1, 1] * b[1, 1] + a[1, 2] * b[2, 1],
             a[1, 0] * b[0, 2] + a[1, 1] * b[1, 2] + a[1, 2] * b[2, 2]),
            (a[2, 0] * b[0, 0] + a[2, 1] * b[1, 0] + a[2, 2] * b[2, 0],
             a[2, 0] * b[0, 1] + a[2, 1] * b[1, 1] + a[2, 2] * b[2, 1],
             a[2, 0] * b[0, 2] + a[2, 1] * b[1, 2] + a[2, 2] * b[2, 2]))


@njit(parallel=True)
def vertex_rotations(row_ptr, col, x_ref, x, out):
    """Best-fit rotation of each vertex's neighbourhood from x_ref to x (Kabsch, [Kabsch1976] in
    docs/references.md), (V, 3, 3).

    R_i = polar(Σ_j (x_j − x_i)(X_j − X_i)ᵀ) over the vertices j coupled to i in the matrix
    pattern; the identity where the neighbourhood is degenerate.
    """
    for i in prange(len(row_ptr) - 1):
        h = np.zeros((3, 3))
        for p in range(row_ptr[i], row_ptr[i + 1]):
            j = col[p]
            for a in range(3):
                da = x[j, a] - x[i, a]
                for b in range(3):
                    h[a, b] += da * (x_ref[j, b] - x_ref[i, b])
        if np.sum(h * h) == 0.0:
            out[i] = np.eye(3)
            continue
        u, sv, vt = np.linalg.svd(h)
        if np.linalg.det(u) * np.linalg.det(vt) < 0.0:
            u[:, 2] = -u[:, 2]
        out[i] = u @ vt


@njit(parallel=True)
def rotate_blocks(rot, x, transpose, out):
    """out_i = R_i·x_i (or R_iᵀ·x_i) for per-vertex 3x3 blocks rot (V, 3, 3)."""
    for i in prange(x.shape[0]):
        for r in range(3):
            acc = 0.0
            for c in range(3):
                acc += (rot[i, c, r] if transpose else rot[i, r, c]) * x[i, c]
            out[i, r] = acc


@njit(parallel=True)
def invert_diagonal_blocks(blocks, diag, fixed_mask, out):
    """out[i] = inv(A_ii), the identity for fixed vertices; blocks (nnzb, 3, 3), out (V, 3, 3)."""
    for i in prange(diag.shape[0]):
        if fixed_mask[i]:
            out[i] = np.eye(3)
        else:
            out[i] = np.linalg.inv(blocks[diag[i]])


class BlockJacobi:
    """Block-Jacobi preconditioner (Baraff & Witkin's choice): P = blockdiag(A_ii)⁻¹, applied as
    a division by the diagonal blocks ([BW98-E1] in docs/references.md). Rebuilt for every
    matrix; cheap per iteration but needs O(resolution) iterations on stiff cloth."""

    def __init__(self, asm: Assembly, fixed: np.ndarray):
        self.asm = asm
        V = len(asm.row_ptr) - 1
        self.fixed_mask = np.zeros(V, dtype=np.bool_)
        self.fixed_mask[np.asarray(fixed, dtype=np.int64)] = True
        self._inv = np.zeros((V, 3, 3))
        self.factorizations = 0
        self.stale = True

    def refresh(self, blocks: np.ndarray, key, x: np.ndarray, filt=None) -> None:
        """Invert the diagonal blocks of the current matrix (every solve); ``filt`` unused."""
        invert_diagonal_blocks(blocks, self.asm.diag, self.fixed_mask, self._inv)
        self.factorizations += 1

    def apply(self, r: np.ndarray, out: np.ndarray) -> None:
        """out = P·r; r, out (V, 3)."""
        rotate_blocks(self._inv, r, False, out)

    def report_iterations(self, iterations: int) -> None:
        """Nothing to track: the inverse is rebuilt for every matrix."""


class LaggedFactor:
    """Sparse LU of the (filtered) system matrix, refreshed only when it goes stale.

    Args:
        asm: pattern of the system matrix.
        fixed: (F,) indices of vertices whose velocity is fully prescribed (hard pins, massless).
        refactor_iterations: refresh the factor when a PCG solve needed more iterations.
    """

    def __init__(self, asm: Assembly, fixed: np.ndarray, refactor_iterations: int = 4):
        self.asm = asm
        V = len(asm.row_ptr) - 1
        self.fixed_mask = np.zeros(V, dtype=np.bool_)
        self.fixed_mask[np.asarray(fixed, dtype=np.int64)] = True
        self.refactor_iterations = refactor_iterations
        self._work = np.zeros((len(asm.col), 3, 3))
        self._lu = None
        self._key = None
        self.stale = True
        self.factorizations = 0

    def refresh(self, blocks: np.ndarray, key, x: np.ndarray, filt=None) -> None:
        """Factor ``blocks`` (pins filtered) now if stale or ``key`` (e.g. the step length)
        differs from the last factor's; otherwise warp the old factor to the configuration x.
        ``filt`` is unused: the factor is reused across changing contact sets."""
        if not self.stale and key == self._key and self._lu is not None:
            a = self.asm
            vertex_rotations(a.row_ptr, a.col, self._x_ref, x, self._rot)
            return
        self._x_ref = x.copy()
        self._rot = np.repeat(np.eye(3)[None], len(x), axis=0)
        a = self.asm
        filtered_blocks(a.row_ptr, a.col, blocks, a.diag, self.fixed_mask, self._work)
        V = len(a.row_ptr) - 1
        m = sp.bsr_matrix((self._work, a.col, a.row_ptr), shape=(3 * V, 3 * V)).tocsc()
        # SPD: no pivoting needed; ordering on AᵀA+A keeps the symmetric fill low
        self._lu = splu(m, permc_spec="MMD_AT_PLUS_A", diag_pivot_thresh=0.0,
                        options={"SymmetricMode": True})
        self._key = key
        self.stale = False
        self.factorizations += 1

    def apply(self, r: np.ndarray, out: np.ndarray) -> None:
        """out = P·r, P the inverse of the factored matrix; r, out (V, 3)."""
        tmp = np.empty_like(r)
        rotate_blocks(self._rot, r, True, tmp)
        tmp = self._lu.solve(tmp.reshape(-1)).reshape(r.shape)
        rotate_blocks(self._rot, tmp, False, out)

    def report_iterations(self, iterations: int) -> None:
        """Mark the factor stale when the last solve needed too many iterations."""
        if iterations > self.refactor_iterations:
            self.stale = True
