"""The dense NumPy MVMC and the synthetic data of the MVMC benchmarks (bench_mvmc.py).

``mvmc_dense`` is the straightforward transcription (docs/algorithms.md §1) that holds ``S``,
``S_ob`` and the mask as ``n × n`` arrays and forms the ``n × n`` masked residual
``R_Ω(Z M Zᵀ − S_ob)`` at every gradient step (O(n² k) per step). It runs the same iteration
as :func:`fastmv.mvmc` (same initialisation, same inner / outer acceleration and restart rule),
so on the same bases ``Z_v`` both give the same ``M_v`` and objective up to rounding; the
test-suite checks that (tests/mvmc/naive.py re-exports it).
"""
import numpy as np


def synthetic_views(n, n_clusters=10, n_views=2, d=200, noise=2.0, random_state=0):
    """``n_views`` dense views ``(n, d)``: per-view cluster means (N(0, I) each) plus
    N(0, noise²) noise, and the labels (balanced, shuffled)."""
    rng = np.random.default_rng(random_state)
    y = np.arange(n) % n_clusters
    rng.shuffle(y)
    views = []
    for _ in range(n_views):
        means = rng.normal(size=(n_clusters, d))
        views.append(means[y] + noise * rng.normal(size=(n, d)))
    return views, y



def _psd(Y):
    lam, V = np.linalg.eigh(0.5 * (Y + Y.T))
    pos = lam > 0
    M = (V[:, pos] * lam[pos]) @ V[:, pos].T
    return 0.5 * (M + M.T)


def observed_matrices(n, must_link, cannot_link):
    """Dense ``S_ob`` (1 on must-links, 0 elsewhere) and the 0/1 mask of Ω, both symmetric."""
    S_ob = np.zeros((n, n))
    mask = np.zeros((n, n))
    for P, val in ((np.asarray(must_link).reshape(-1, 2), 1.0),
                   (np.asarray(cannot_link).reshape(-1, 2), 0.0)):
        if P.size:
            S_ob[P[:, 0], P[:, 1]] = val
            S_ob[P[:, 1], P[:, 0]] = val
            mask[P[:, 0], P[:, 1]] = 1.0
            mask[P[:, 1], P[:, 0]] = 1.0
    return S_ob, mask


def mvmc_objective(Z_list, M_list, S, S_ob, mask, C1, C2):
    """``Σ_v tr(M_v) + C1 ‖R_Ω(Z_v M_v Z_vᵀ − S_ob)‖² + C2 ‖Z_v M_v Z_vᵀ − S‖²`` (dense)."""
    total = 0.0
    for Z, M in zip(Z_list, M_list):
        A = Z @ M @ Z.T
        total += np.trace(M) + C1 * ((mask * (A - S_ob)) ** 2).sum() + C2 * ((A - S) ** 2).sum()
    return float(total)


def similarity_dense(Z_list, M_list):
    """``S = clip((1/m) Σ_v Z_v M_v Z_vᵀ, 0, 1)``."""
    return np.clip(sum(Z @ M @ Z.T for Z, M in zip(Z_list, M_list)) / len(Z_list), 0.0, 1.0)


def _curvature(Z, mask, start, n_iter):
    """Power-iteration estimate of the largest eigenvalue of ``M ↦ Zᵀ (mask ∘ Z M Zᵀ) Z``."""
    M, est = 0.5 * (start + start.T), 0.0
    for _ in range(n_iter):
        if not np.linalg.norm(M):
            break
        M = M / np.linalg.norm(M)
        G = Z.T @ (mask * (Z @ M @ Z.T)) @ Z
        est = float(np.vdot(G, M))
        M = 0.5 * (G + G.T)
    return est


def _scaled_start(M0, Z, S_ob, mask, C1):
    """``α M0`` with ``α > 0`` minimising ``tr(α M0) + C1 ‖mask ∘ (α Z M0 Zᵀ − S_ob)‖²``
    (both orders of every pair; ``α = 1`` when that has no positive minimiser)."""
    P = mask * (Z @ M0 @ Z.T)
    pp, ps = float((P ** 2).sum()), float((P * S_ob * mask).sum())
    alpha = (2.0 * C1 * ps - np.trace(M0)) / (2.0 * C1 * pp) if pp > 0 else 1.0
    return alpha * M0 if np.isfinite(alpha) and alpha > 0 else M0


def mvmc_dense(Z_list, must_link, cannot_link, *, C1=100.0, C2=1.0, max_iter=100,
               inner_iter=3, tol=1e-6, accelerated=True, step="adaptive", callback=None,
               power_iterations=2):
    """Dense MVMC on given bases; returns ``(M_list, objective history, S)``.

    ``step="adaptive"`` starts each view's ``L`` at ``2 (C1 λ + C2)`` with ``λ`` from
    ``power_iterations`` power iterations and doubles it (at least to the exact curvature of
    the step) whenever a step's curvature exceeds it, never beyond ``2 (C1 + C2)``.
    """
    n = Z_list[0].shape[0]
    S_ob, mask = observed_matrices(n, must_link, cannot_link)
    ks = [Z.shape[1] for Z in Z_list]
    L_max = [2.0 * (C1 * k * k + C2) if step == "paper" else 2.0 * (C1 + C2) for k in ks]
    Ls = list(L_max)
    if step == "adaptive":
        Ls = [min(Lm, 2.0 * (C1 * _curvature(Z, mask, Z.T @ S_ob @ Z, power_iterations) + C2))
              for Lm, Z in zip(L_max, Z_list)]
    M = [_scaled_start(_psd(Z.T @ S_ob @ Z), Z, S_ob, mask, C1) for Z in Z_list]
    M_prev = M
    t = 1.0
    objective = []
    for it in range(1, max_iter + 1):
        if accelerated and it > 1:
            tn = 0.5 * (1.0 + np.sqrt(1.0 + 4.0 * t * t))
            beta = (t - 1.0) / tn
            t = tn
            Y = [a + beta * (a - b) for a, b in zip(M, M_prev)]
        else:
            Y = M
        S = similarity_dense(Z_list, Y)
        s_sumsq = (S ** 2).sum()
        M_new, J = [], 0.0
        for v, Z in enumerate(Z_list):
            T = Z.T @ S @ Z
            k = ks[v]

            def evaluate(Mx):
                R = mask * (Z @ Mx @ Z.T - S_ob)  # the n × n masked residual
                f = (np.trace(Mx) + C1 * (R ** 2).sum()
                     + C2 * (np.vdot(Mx, Mx) - 2 * np.vdot(Mx, T) + s_sumsq))
                g = np.eye(k) + 2 * C1 * (Z.T @ R @ Z) + 2 * C2 * (Mx - T)
                return f, 0.5 * (g + g.T)

            def prox_step(y, gy):
                while True:
                    z = _psd(y - gy / Ls[v])
                    fz, gz = evaluate(z)
                    d = z - y
                    if (np.vdot(gz - gy, d) <= Ls[v] * np.vdot(d, d) * (1 + 1e-9)
                            or Ls[v] >= L_max[v]):
                        return z, fz, gz
                    Ls[v] = min(L_max[v], max(2 * Ls[v], np.vdot(gz - gy, d) / np.vdot(d, d)))

            # the first step is taken from the extrapolated point itself (PSD or not)
            x = M[v]
            fx, gx = evaluate(x)
            if not accelerated:
                for _ in range(inner_iter):
                    x, fx, gx = prox_step(x, gx)
            else:
                y, tt = Y[v], 1.0
                gy = evaluate(y)[1]
                for _ in range(inner_iter):
                    z, fz, gz = prox_step(y, gy)
                    xn, fxn, gxn = (z, fz, gz) if fz <= fx else (x, fx, gx)
                    tn = 0.5 * (1.0 + np.sqrt(1.0 + 4.0 * tt * tt))
                    a, b = tt / tn, (tt - 1.0) / tn
                    y = xn + a * (z - xn) + b * (xn - x)
                    gy = gxn + a * (gz - gxn) + b * (gxn - gx)
                    x, fx, gx, tt = xn, fxn, gxn, tn
            M_new.append(x)
            J += fx
        restarted = False
        if accelerated and objective:
            ip = sum(np.vdot(y - a, a - b) for y, a, b in zip(Y, M_new, M))
            restarted = bool(ip > 0 or J > objective[-1])
            if restarted:
                t = 1.0
        M_prev, M = M, M_new
        objective.append(float(J))
        if callback is not None:
            callback(it, {"M": M, "objective": J, "S": S, "restarted": restarted})
        # relative change against the previous objective, never on a restarted iteration
        if (len(objective) > 1 and not restarted
                and abs(objective[-2] - J) <= tol * max(abs(objective[-2]), np.finfo(float).tiny)):
            break
    return M, np.asarray(objective), similarity_dense(Z_list, M)
