"""Dense linear algebra shared by the SVT (:mod:`fastmv._emvc._svt`) and the spectral step
(:mod:`fastmv._blocks._spectral`): one orthonormalisation, one block-Krylov basis, one sign rule.

A block-Krylov method keeps an orthonormal basis ``W = [X₀, X₁, …]`` and the images of its
blocks under the operator; it extends the basis with a candidate block orthogonalised
against ``W`` and extracts Ritz pairs from ``W`` and the images. The two users differ only in
the operator and the extraction (see :class:`BlockKrylov`):

- eigenpairs of a symmetric ``A`` (:func:`fastmv._blocks._spectral.block_krylov_eigenpairs`): images
  ``A Xⱼ``, Rayleigh–Ritz ``eigh(Wᵀ A W)``, next candidate the newest image;
- singular triplets of ``B`` (the SVT's partial path): images ``Bᵀ Xⱼ``, Ritz triplets from
  the SVD of the stacked images (``Wᵀ B``), next candidate ``B`` times the newest image, so
  the basis spans ``B Ω, (BBᵀ) B Ω, …``.
"""
from __future__ import annotations

import numpy as np
import scipy.linalg as sla

__all__ = ["orthonormalize", "BlockKrylov", "fix_signs"]

# A column whose part orthogonal to the basis is below this many eps of the candidate block's
# largest column norm carries no new direction (the Krylov space has become invariant).
_DEAD_EPS = 1e3


def orthonormalize(X, basis=None, *, rng=None):
    """Orthonormal columns spanning the part of ``X`` orthogonal to ``basis``.

    Two rounds of block Gram–Schmidt against ``basis`` (twice is enough, Kahan–Parlett),
    then a QR. Columns that vanish (below ``1e3 eps`` of ``X``'s largest column norm: the
    direction is already in the basis) are replaced by fresh random directions when ``rng``
    is given (the block keeps its width) and dropped otherwise.

    Parameters
    ----------
    X : ndarray, shape (n, p)
        Candidate block; overwritten.
    basis : ndarray, shape (n, l), optional
        Orthonormal columns to project out.
    rng : numpy.random.Generator, optional
        Source of replacement directions.

    Returns
    -------
    ndarray, shape (n, p) or (n, p') with ``p' <= p``
        Orthonormal, orthogonal to ``basis``.
    """
    dt = X.dtype
    size = float(np.linalg.norm(X, axis=0).max(initial=0.0))
    for _ in range(2):
        if basis is not None and basis.shape[1]:
            X -= basis @ (basis.T @ X)
    Q, R = sla.qr(X, mode="economic", check_finite=False, overwrite_a=True)
    live = np.abs(np.diag(R)) > _DEAD_EPS * np.finfo(dt).eps * max(size, np.finfo(dt).tiny)
    if live.all():
        return Q
    if rng is None:
        return Q[:, live]
    dead = ~live
    Q[:, dead] = rng.standard_normal((Q.shape[0], int(dead.sum()))).astype(dt)
    Q[:, dead] -= Q[:, live] @ (Q[:, live].T @ Q[:, dead])
    if basis is not None and basis.shape[1]:
        Q -= basis @ (basis.T @ Q)
    Q, _ = sla.qr(Q, mode="economic", check_finite=False, overwrite_a=True)
    return Q


class BlockKrylov:
    """An orthonormal block basis ``W`` and the operator's images of its blocks.

    Parameters
    ----------
    apply : callable
        ``apply(X)`` returns the image of an ``(n, p)`` block (``A X`` or ``Bᵀ X``).
    rng : numpy.random.Generator, optional
        Replaces vanished directions when extending (the block keeps its width); without
        it they are dropped.

    Notes
    -----
    Memory: the basis and the images, ``O((n + d) l)`` for ``l`` basis columns; the stacked
    matrices are formed on demand and cached until the basis changes.
    """

    def __init__(self, apply, rng=None):
        self.apply = apply
        self.rng = rng
        self.blocks, self.images = [], []
        self._W = self._AW = None

    @property
    def size(self) -> int:
        """Number of basis columns ``l``."""
        return sum(b.shape[1] for b in self.blocks)

    def basis(self):
        """``W``, shape ``(n, l)``."""
        if self._W is None:
            self._W = self.blocks[0] if len(self.blocks) == 1 else np.hstack(self.blocks)
        return self._W

    def image(self):
        """The stacked images, shape ``(·, l)`` (``A W`` or ``Bᵀ W``)."""
        if self._AW is None:
            self._AW = self.images[0] if len(self.images) == 1 else np.hstack(self.images)
        return self._AW

    def extend(self, candidate):
        """Orthonormalise ``candidate`` against the basis, append it and its image.

        Returns the number of columns added (0: the space is invariant, nothing added).
        """
        W = self.basis() if self.blocks else None
        X = orthonormalize(candidate, W, rng=self.rng)
        if X.shape[1] == 0:
            return 0
        self.blocks.append(X)
        self.images.append(self.apply(X))
        self._W = self._AW = None
        return X.shape[1]

    def restart(self, Y):
        """Thick restart: replace the basis by ``W Y`` and the images by ``(image) Y``
        (``Y`` with orthonormal columns, e.g. the best Ritz vectors' coefficients)."""
        W, AW = self.basis() @ Y, self.image() @ Y
        self.blocks, self.images = [W], [AW]
        self._W, self._AW = W, AW

    def ritz_eigh(self):
        """Rayleigh–Ritz for a symmetric operator: ``(θ, Y)`` of ``Wᵀ A W``, descending."""
        T = self.basis().T @ self.image()
        theta, Y = np.linalg.eigh(0.5 * (T + T.T))
        return theta[::-1], Y[:, ::-1]

    def ritz_svd(self):
        """Ritz triplets of ``B`` on the basis: ``(U_W, s, Vt)`` with ``Wᵀ B = U_W S Vt``
        (the SVD of the stacked images ``(Bᵀ W)ᵀ``; left vectors are ``W U_W``)."""
        return sla.svd(self.image().T, full_matrices=False, check_finite=False)


def fix_signs(V):
    """Copy of ``V`` (float64) with each column's largest-magnitude entry positive: a
    deterministic sign for eigen- or singular vectors.

    Parameters
    ----------
    V : ndarray, shape (n, k)

    Returns
    -------
    ndarray, shape (n, k), float64
    """
    V = np.array(V, dtype=np.float64)
    if V.size == 0:
        return V
    idx = np.argmax(np.abs(V), axis=0)
    signs = np.sign(V[idx, np.arange(V.shape[1])])
    signs[signs == 0] = 1.0
    V *= signs[None, :]
    return V
