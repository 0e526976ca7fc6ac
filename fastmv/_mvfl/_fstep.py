"""The ``F`` step of MVFL and the objective it descends (docs/algorithms.md §2).

Two steps are offered:

- ``"monotone"`` (default): a joint ``F, W`` step. At the IRLS weights of the current ``W``,
  ``W`` is eliminated (:class:`ReducedTerm`: ``Σ_k f̃_kᵀ M_k f̃_k`` replaces the fit) and
  ``F >= 0`` takes scaled projected-gradient steps with backtracking on
  ``q(F) = Σ_k f̃_kᵀ M_k f̃_k + λ3 φ(F) + (ρ/4) ‖FᵀF − I‖² + μ ‖F − F₀‖²``; then ``W, b``
  follow ``F``. The orthogonality of the paper's relaxation (``FᵀF = I``) enters as a
  quadratic penalty, which keeps every cluster column alive (without it ``F = 1bᵀ``,
  ``W = 0`` has objective 0). ``q`` at the old ``F`` is at most the objective (the weights
  majorise the norms and ``W`` is optimal for them), every accepted step lowers ``q``, and
  ``q`` majorises the objective at the new pair: the recorded objective (ε-smoothed norms,
  penalty, anchor) never increases. Alternating ``W`` then ``F`` instead (``F`` against a
  fixed ``Z = XW + 1bᵀ``) crawls: when ``d > n`` the fit is ~exact and ``F`` moves by
  ~``λ`` per iteration (docs/records/mvfl.md).
- ``"paper"``: the multiplicative update of the paper (eq. 14 for pairs or no prior; eqs.
  16–18 for labels), which descends the Lagrangian with the multiplier frozen at the current
  ``F``, not the objective; its recorded objective (exact norms, no penalty) can rise.
"""
from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from fastmv.kernels.mvfl import (
    labelled_rows_update,
    multiplicative_f_update,
    pair_gram,
    weight_norms,
)

__all__ = ["FTerm", "ReducedTerm", "monotone_f_step", "paper_f_step", "paper_objective",
           "pair_csr", "empty_csr"]

# Backtracking halvings before a projected-gradient step is given up (the iterate is kept).
_MAX_HALVINGS = 60
# Projected-gradient steps per F step: N_INNER on the direct route, N_INNER_WOODBURY on the
# Woodbury one, where a factorisation (n³/3 plus forming the Gram, n²d; one for all classes,
# WStep.factor_common) costs far more against a trial point (2cn²) than on the direct route
# (d³/3 against 2ndc + 2cd²), so more of the F step's progress is bought per factorisation
# (measured: docs/records/mvfl.md, "Time to solution"); the F step also stops once a step
# gains less than _INNER_RTOL relative to h.
N_INNER = 5
N_INNER_WOODBURY = 15
_INNER_RTOL = 1e-12
# ReducedTerm's memo: the evaluations terms differing only in the anchor can share from the
# same start, the start itself and the first trial point (after a step, the anchor's
# gradient differs and so does every later point).
MEMO_POINTS = 2


def pair_csr(n, must_link, cannot_link):
    """Symmetric CSR ``I_p`` (-1 must, +1 cannot; duplicates add) with int64 index arrays."""
    rows = np.concatenate([must_link[:, 0], must_link[:, 1], cannot_link[:, 0], cannot_link[:, 1]])
    cols = np.concatenate([must_link[:, 1], must_link[:, 0], cannot_link[:, 1], cannot_link[:, 0]])
    vals = np.concatenate([-np.ones(2 * len(must_link)), np.ones(2 * len(cannot_link))])
    Ip = sp.csr_matrix((vals, (rows, cols)), shape=(n, n))
    Ip.sum_duplicates()
    Ip.sort_indices()
    return (Ip.indptr.astype(np.int64), Ip.indices.astype(np.int64),
            Ip.data.astype(np.float64))


def empty_csr(n):
    return (np.zeros(n + 1, dtype=np.int64), np.zeros(0, dtype=np.int64),
            np.zeros(0, dtype=np.float64))


def paper_objective(Z, F, W, view_ptr, lam1, lam2, lam3, prior, eps=0.0):
    groups, rows = weight_norms(W, view_ptr, eps)
    J = float(np.sum((Z - F) ** 2)) + lam1 * float(groups.sum()) + lam2 * float(rows.sum())
    if prior["kind"] == "labels":
        lab, y = prior["rows"], prior["classes"]
        if lab.size:
            Fl = F[lab] ** 2
            J += lam3 * float(Fl.sum() - Fl[np.arange(lab.size), y].sum())
    elif prior["kind"] == "pairs":
        J += lam3 * float(np.trace(pair_gram(F, *prior["Ip"])))
    return J


def _symmetric(S):
    return 0.5 * (S + S.T)


def paper_f_step(F, Z, lam3, prior, empty):
    c = F.shape[1]
    eye = np.eye(c)
    if prior["kind"] == "labels":
        unl = prior["unlabelled"]
        Fn = F.copy()
        if unl.size:
            Gam = _symmetric(F[unl].T @ Z[unl]) - eye
            Fn = multiplicative_f_update(F, Z, Gam, 0.0, *empty, unl)
        if prior["rows"].size:
            labelled_rows_update(Fn, Z, prior["rows"], prior["classes"], lam3)
        return Fn
    if prior["kind"] == "pairs":
        Gam = _symmetric(F.T @ Z) - eye - lam3 * pair_gram(F, *prior["Ip"])
        return multiplicative_f_update(F, Z, Gam, lam3, *prior["Ip"], prior["all"])
    Gam = _symmetric(F.T @ Z) - eye
    return multiplicative_f_update(F, Z, Gam, 0.0, *empty, prior["all"])


class FTerm:
    """The part of the objective that depends on ``F`` (``Z`` fixed), with its gradient.

    ``h(F) = ‖Z − F‖² + λ3 φ(F) + (ρ/4) ‖FᵀF − I‖² + μ ‖F − F₀‖²``: the orthogonality of
    eq. 10 enters as a quadratic penalty, which keeps every cluster column alive (without it
    ``F = 1bᵀ``, ``W = 0`` has objective 0); ``μ = anchor`` pulls ``F`` toward the start
    ``F₀`` (docs/records/mvfl.md: without it the minimiser concentrates ``F`` on a few samples).
    """

    def __init__(self, n, c, lam3, rho, prior, anchor=0.0, F0=None):
        self.lam3 = lam3
        self.rho = rho
        self.anchor, self.F0 = anchor, F0
        self.kind = prior["kind"]
        self.eye = np.eye(c)
        # Diagonal scaling of the gradient step by the curvature of the prior term: with a
        # large λ3 one global step length would crawl on every row the prior does not touch.
        self.scale = np.ones((n, 1))
        if self.kind == "labels":
            self.rows = prior["rows"]
            mask = np.ones((self.rows.size, c))
            mask[np.arange(self.rows.size), prior["classes"]] = 0.0
            self.mask = mask
            self.scale = np.ones((n, c))
            self.scale[self.rows] = 1.0 / (1.0 + lam3 * mask)
        elif self.kind == "pairs":
            self.Ip = sp.csr_matrix(prior["Ip"][::-1], shape=(n, n))
            degree = np.asarray(abs(self.Ip).sum(axis=1)).ravel()
            self.scale = 1.0 / (1.0 + lam3 * degree)[:, None]

    def value(self, F, Z, grad=False):
        """``(h(F), ∇h(F) or None)`` at fixed ``Z``."""
        R = F - Z
        val, G = self.extra(F, grad)
        val += float(np.vdot(R, R))
        if grad:
            G += 2.0 * R
        return val, G

    def extra(self, F, grad=False):
        """The prior, the orthogonality penalty and the anchor:
        ``λ3 φ(F) + (ρ/4) ‖FᵀF − I‖² + μ ‖F − F₀‖²``."""
        E = F.T @ F - self.eye
        val = 0.25 * self.rho * float(np.vdot(E, E))
        G = self.rho * (F @ E) if grad else None
        if self.anchor:
            A = F - self.F0
            val += self.anchor * float(np.vdot(A, A))
            if grad:
                G += 2.0 * self.anchor * A
        if self.kind == "labels" and self.rows.size and self.lam3:
            Fl = F[self.rows] * self.mask
            val += self.lam3 * float(np.vdot(Fl, Fl))
            if grad:
                G[self.rows] += 2.0 * self.lam3 * Fl
        elif self.kind == "pairs" and self.lam3:
            IpF = np.asarray(self.Ip @ F)
            val += self.lam3 * float(np.vdot(F, IpF))
            if grad:
                G += 2.0 * self.lam3 * IpF
        return val, G


class ReducedTerm:
    """The ``F`` objective of the joint step, ``W`` eliminated at fixed IRLS weights.

    ``q(F) = Σ_k f̃_kᵀ M_k f̃_k + λ3 φ(F) + (ρ/4) ‖FᵀF − I‖² + μ ‖F − F₀‖²`` where ``f̃_k`` is
    the centred column and ``M_k f̃_k`` (:meth:`WStep.apply_m`) the residual of the reweighted
    ridge fit, so that ``Σ_k f̃_kᵀ M_k f̃_k = min_{W,b} ‖XW + 1bᵀ − F‖² + Σ_k w_kᵀ diag(D_k) w_k``.
    Descending ``q`` moves ``F`` and the ``W`` that follows it together.

    A value costs one product ``X̃ᵀ f̃`` and the solves (:meth:`WStep.fit`); the residual
    ``M_k f̃_k`` is formed only for a gradient. The last evaluation is kept: the gradient at
    an accepted trial point, and the ``W`` that follows the final ``F`` (:meth:`solved_at`),
    reuse its product and solves instead of repeating them. ``memo``: a list shared by terms
    with the same ``wstep`` that differ only in ``term`` (the anchor tuning's candidates on
    one fold); its first ``MEMO_POINTS`` evaluations are kept there and reused, bit for bit,
    by the others.
    """

    def __init__(self, term, wstep, factors, memo=None):
        self.term, self.wstep, self.factors = term, wstep, factors
        self.scale = term.scale
        self._last = None  # [copy of F, Fc, solved, fit value, M Fc or None, factors]
        self.memo = memo

    def _fit(self, F, grad):
        last = self._last
        if last is None or last[0].shape != F.shape or not np.array_equal(last[0], F):
            last = next((e for e in self.memo or () if e[5] is self.factors
                         and e[0].shape == F.shape and np.array_equal(e[0], F)), None)
            if last is None:
                Fc = F - F.mean(axis=0)
                val, solved = self.wstep.fit(self.factors, Fc)
                last = [F.copy(), Fc, solved, val, None, self.factors]
                if self.memo is not None and len(self.memo) < MEMO_POINTS:
                    self.memo.append(last)
            self._last = last
        if grad and last[4] is None:
            last[4] = self.wstep.apply_m(self.factors, last[1], last[2])
        return last[3], last[4]

    def solved_at(self, F):
        """:meth:`WStep.solved` of the centred ``F`` if it is the last point evaluated,
        else ``None``."""
        last = self._last
        if last is not None and last[0].shape == F.shape and np.array_equal(last[0], F):
            return last[2]
        return None

    def value(self, F, Z=None, grad=False):
        """``(q(F), ∇q(F) or None)``; ``Z`` is unused (kept for :func:`monotone_f_step`)."""
        fit, MF = self._fit(F, grad)
        val, G = self.term.extra(F, grad)
        val += fit
        if grad:
            G += 2.0 * (MF - MF.mean(axis=0))
        return val, G


def monotone_f_step(F, Z, term, alpha, n_inner):
    """Scaled projected gradient on ``F >= 0`` with backtracking: ``h`` never increases.

    With the diagonal scaling ``S`` (``term.scale``), ``F⁺ = max(F − α S ⊙ ∇h, 0)`` is
    accepted when ``h(F⁺) <= h(F) + ⟨∇h, F⁺ − F⟩ + ‖F⁺ − F‖²_{S⁻¹} / (2α)`` (which implies
    ``h(F⁺) <= h(F) − ‖F⁺ − F‖²_{S⁻¹} / (2α)``) and, against rounding, ``h(F⁺) <= h(F)``;
    otherwise ``α`` is halved, and a step still failing at a vanishing ``α`` is not taken.
    After a step taken at its first trial ``α`` doubles; after one that needed halving it
    stays (doubling after every step cost a rejected trial point, one ``X̃ᵀF`` product and
    ``c`` solves, on about every other step; docs/records/mvfl.md). Returns ``(F, α)``; ``α``
    carries over to the next call.
    """
    h, G = term.value(F, Z, grad=True)
    for it in range(n_inner):
        first = True
        for _ in range(_MAX_HALVINGS):
            Fn = np.maximum(F - alpha * (term.scale * G), 0.0)
            D = Fn - F
            dd = float(np.vdot(D, D / term.scale))
            if dd == 0.0:
                return F, alpha
            hn, _ = term.value(Fn, Z)
            if hn <= h + float(np.vdot(G, D)) + 0.5 * dd / alpha and hn <= h:
                break
            alpha *= 0.5
            first = False
        else:
            return F, alpha
        done = h - hn <= _INNER_RTOL * abs(h)
        F, h = Fn, hn
        if done:
            break
        if first:
            alpha *= 2.0
        if it + 1 < n_inner:  # no gradient after the last step: nothing would use it
            _, G = term.value(F, Z, grad=True)
    return F, alpha
