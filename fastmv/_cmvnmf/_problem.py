"""CMVNMF's problem: the data, the constraint patterns and the factors of one run, one
``step()`` per sweep (docs/algorithms.md §4.3; the solver, :mod:`fastmv._cmvnmf._solver`,
drives it once per start)."""
from __future__ import annotations

import math

import numpy as np
import scipy.sparse as sp

from fastmv.kernels.cmvnmf import (
    ConstraintTerms,
    constraint_penalty,
    csr_matmul,
    multiplicative_update,
    multiplicative_update_serial,
)

from .._core._driver import Step, state_view
from .._core._threads import serial_when_small, use_serial_kernel
from ._extrapolation import Extrapolated
from ._pairs import Constraints, build_constraints

__all__ = ["Problem"]

_EPS = 1e-10


class Problem:
    """Data, constraint patterns and current factors of one CMVNMF run.

    The public :func:`cmvnmf` drives it sweep by sweep; the tests drive it update by update
    (:meth:`update_u`, :meth:`update_v`) to check the objective after each one. All ``V_a``
    live as row blocks of one array ``V_all`` (N × c) so that the constraint products of a
    view read the other views' factors through a single CSR pattern.
    """

    def __init__(self, X_list, blocks, U_list, V_list, *, beta, rescale, eps=_EPS,
                 extrapolate=False):
        self.m = len(X_list)
        self.X = X_list
        self.XT = [X.T.tocsr() if sp.issparse(X) else None for X in X_list]
        for XT in self.XT:
            if XT is not None:
                XT.sort_indices()
        self.n = [X.shape[0] for X in X_list]
        self.offsets = np.concatenate([[0], np.cumsum(self.n)]).astype(np.int64)
        self.dtype = X_list[0].dtype.type
        self.c = U_list[0].shape[1]
        self.beta = float(beta)
        self.rescale = bool(rescale)
        self.eps = float(eps)
        self.V_all = np.empty((int(self.offsets[-1]), self.c), dtype=self.dtype)
        for a in range(self.m):
            self.V_all[self.offsets[a]:self.offsets[a + 1]] = V_list[a]
        self.U = [np.array(U, dtype=self.dtype, order="C") for U in U_list]
        self.xx = [float(X.multiply(X).sum()) if sp.issparse(X)
                   else float(np.vdot(X, X)) for X in X_list]
        self._use_constraints(blocks if isinstance(blocks, Constraints)
                              else build_constraints(blocks, self.n, self.dtype))
        self.VtV = [self.V(a).T @ self.V(a) for a in range(self.m)]
        self.UtU = [U.T @ U for U in self.U]
        self.XU = [self._x_times(a, self.U[a]) for a in range(self.m)]
        # extrapolated sweeps (fastmv._cmvnmf._extrapolation), or the plain ones
        self.extrapolated = (extrapolate if isinstance(extrapolate, Extrapolated)
                             else Extrapolated() if extrapolate else None)
        # multiply-adds of one sweep, to run small problems on one thread
        self.work = self.c * (sum(X.nnz if sp.issparse(X) else X.size for X in X_list)
                              + self.c * sum(self.n) + self.must_global.shape[0]
                              + self.cannot_global.shape[0])

    def V(self, a):
        return self.V_all[self.offsets[a]:self.offsets[a + 1]]

    def set_factors(self, U_list, V_all):
        """Move to the factors given (copied); the caches a sweep reads follow."""
        self.swept_penalty = None
        self.U = [np.array(U, dtype=self.dtype, order="C") for U in U_list]
        self.V_all[...] = V_all
        self.VtV = [self.V(a).T @ self.V(a) for a in range(self.m)]

    def _use_constraints(self, cons):
        m, off = self.m, self.offsets
        self.must_global, self.cannot_global = cons.must_global, cons.cannot_global
        self.must_intra, self.cannot_intra = cons.must_intra, cons.cannot_intra
        self.has_constraints = [cons.must_pattern[a][1].size + cons.cannot_pattern[a][1].size > 0
                                for a in range(m)]
        # split = the view's offset: the pairs to views updated before it in the sweep give
        # their penalty part in its V update (multiplicative_update)
        self.terms = [ConstraintTerms(self.V_all, *cons.must_pattern[a],
                                      *cons.cannot_pattern[a], cons.deg_num[a],
                                      cons.deg_den[a], cons.deg_pen[a],
                                      np.array([off[a]], dtype=np.int64)) for a in range(m)]
        idx = cons.must_global.dtype
        no_int = np.zeros(0, dtype=np.int64)
        no_float = np.zeros(0, dtype=self.dtype)
        self.no_terms = ConstraintTerms(np.zeros((0, self.c), dtype=self.dtype), no_int,
                                        np.zeros(0, dtype=idx), no_int, np.zeros(0, dtype=idx),
                                        no_float, no_float, no_float, no_int)
        self.pen_parts = [0.0] * m
        self.swept_penalty = None   # the penalty after the last full sweep, while current

    # --- products with X
    def _x_times(self, a, U):
        X = self.X[a]
        if sp.issparse(X):
            return csr_matmul(X.indptr, X.indices, X.data, U)
        return X @ U

    def _xt_times(self, a, V):
        XT = self.XT[a]
        if XT is not None:
            return csr_matmul(XT.indptr, XT.indices, XT.data, V)
        return self.X[a].T @ V

    # --- the two updates
    def _update_kernel(self):
        # the serial copy gives the same result; a small problem never compiles the parallel one
        if use_serial_kernel(self.work):
            return multiplicative_update_serial
        return multiplicative_update

    def update_u(self, a):
        """``U_a`` multiplicative update (then the optional column rescaling)."""
        self.swept_penalty = None
        Va = self.V(a)
        U, _ = self._update_kernel()(self.U[a], self._xt_times(a, Va), self.VtV[a],
                                     self.no_terms, 0.0, self.eps)
        self.U[a] = U
        UtU = U.T @ U
        if self.rescale:
            # the column norms are the diagonal of UᵀU: one small product instead of two
            s = np.sqrt(np.diag(UtU)).astype(self.dtype)
            s[s == 0] = 1.0
            U /= s
            Va *= s
            ss = np.outer(s, s)
            self.VtV[a] *= ss
            UtU /= ss
        self.UtU[a] = UtU

    def update_v(self, a):
        """``V_a`` multiplicative update with the constraint terms of every block touching a."""
        self.swept_penalty = None
        Va = self.V(a)
        XU = self._x_times(a, self.U[a])
        self.XU[a] = XU
        constrained = self.has_constraints[a] and self.beta != 0.0
        Va[...], self.pen_parts[a] = self._update_kernel()(
            Va, XU, self.UtU[a], self.terms[a] if constrained else self.no_terms,
            self.beta if constrained else 0.0, self.eps)
        self.VtV[a] = Va.T @ Va

    def sweep(self):
        with serial_when_small(self.work):
            for a in range(self.m):
                self.update_u(a)
                self.update_v(a)
            if self.beta != 0.0:
                # every view's V update gave the inter-view pairs to the views before it,
                # at final values; only the intra-view pairs need a pass of their own
                pen = math.fsum(self.pen_parts)
                if self.must_intra.shape[0] or self.cannot_intra.shape[0]:
                    pen += constraint_penalty(self.V_all, self.must_intra, self.cannot_intra)
                self.swept_penalty = pen

    def step(self):
        """One sweep (the driver's step): the objective and a read-only view of the factors.

        Extrapolated: one accepted sweep (two sweeps after a rejected extrapolation); the
        objective and the factors are those of the accepted point."""
        if self.extrapolated is None:
            self.sweep()
            return Step(self.objective(), state=state_view(U=self.U, V=[self.V(a) for a in
                                                                        range(self.m)]))
        f = self.extrapolated.step(self)
        U_list, V_all = self.extrapolated.accepted
        return Step(f, state=state_view(U=U_list, V=[V_all[self.offsets[a]:self.offsets[a + 1]]
                                                     for a in range(self.m)]))

    def objective(self):
        """Objective from cached ``X_a U_a``, ``U_aᵀU_a``, ``V_aᵀV_a`` (no residual formed).

        Exact when the caches are current, i.e. after :meth:`update_v` (or at init); after a
        :meth:`sweep` the pair penalty is the one the V updates gave (expanded, see
        ``multiplicative_update``). The tests use an independent dense evaluation after every
        single update.
        """
        fit = 0.0
        for a in range(self.m):
            fit += (self.xx[a] - 2.0 * float(np.vdot(self.V(a), self.XU[a]))
                    + float(np.sum(self.UtU[a] * self.VtV[a], dtype=np.float64)))
        pen = 0.0
        if self.swept_penalty is not None:
            pen = self.swept_penalty
        elif self.beta != 0.0 and (self.must_global.shape[0] or self.cannot_global.shape[0]):
            pen = constraint_penalty(self.V_all, self.must_global, self.cannot_global)
        return max(fit, 0.0) + self.beta * pen

    def factors(self):
        """Copies of ``(U_list, V_list)``: the last accepted point when extrapolated."""
        if self.extrapolated is not None and self.extrapolated.accepted is not None:
            U_list, V_all = self.extrapolated.accepted
            return ([U.copy() for U in U_list],
                    [V_all[self.offsets[a]:self.offsets[a + 1]].copy() for a in range(self.m)])
        return [U.copy() for U in self.U], [self.V(a).copy() for a in range(self.m)]
