"""``python -m benchmarks.bench_emvc run``: ``benchmarks.defaults_table run --solver emvc``
with ``--set`` options of :func:`fastmv.emvc` itself (``view_weights=error``) and the sweep
knob ``weight_power`` (the exponent of EMVC's view reweighting). EMVC's asv suite is
``benchmarks/suites/bench_emvc.py``."""
import numpy as np

import fastmv

#: lam1 = lam2 unless ``--set lam=...`` (as the defaults table and the EMVC suite)
LAM = 0.01


def _defaults_run_with_emvc_options(argv=None):
    """``benchmarks.defaults_table run --solver emvc`` with ``--set`` options of
    :func:`fastmv.emvc` itself (``view_weights=error``), not only of the graph.

    The records are ``defaults_table``'s (same ``--out`` format, the setting string names the
    option), so ``python -m benchmarks.defaults_table lodo --solver emvc --param
    view_weights`` and ``table`` read them::

        python -m benchmarks.bench_emvc run --set view_weights=error --out F
    """
    import inspect  # noqa: PLC0415

    from benchmarks import defaults_table as dt  # noqa: PLC0415
    from fastmv._emvc import _weights  # noqa: PLC0415

    graph = set(inspect.signature(fastmv.transition_matrix).parameters)
    plain = dt.run_one

    def run_one(solver, views, y, seed, params):
        if solver != "emvc":
            return plain(solver, views, y, seed, params)
        params = dict(params)
        lam = float(params.pop("lam", LAM))
        options = {k: params.pop(k) for k in list(params) if k not in graph}
        power = options.pop("weight_power", None)
        if power is not None:  # a sweep of the reweighting's exponent
            _weights._WEIGHT_POWER = float(power)
        P = [fastmv.transition_matrix(X, **params) for X in views]
        res = fastmv.emvc(P, lam, lam, n_clusters=len(np.unique(y)), random_state=seed,
                          **options)
        return dt._mean_scores([y], [res.labels])

    dt.run_one = run_one
    try:
        dt.main(argv)
    finally:
        dt.run_one = plain


if __name__ == "__main__":
    _defaults_run_with_emvc_options()
