"""``BaseEstimator``: ``get_params`` / ``set_params`` / cloning / ``repr`` in scikit-learn's
conventions, without scikit-learn (the base of every estimator and of ``ViewTransformer``).
"""
from __future__ import annotations

import copy
import html
import inspect
from typing import Any

from ..exceptions import InvalidParameterError
from ._estimator_docs import RETURNS_SELF, sections

# Parameters a clone shares with its original instead of copying (see __sklearn_clone__).
SHARED_BY_REFERENCE = frozenset({"executor"})


class BaseEstimator:
    """get_params / set_params / repr in scikit-learn's conventions (no scikit-learn needed).

    The parameters are the keyword arguments of ``__init__``, stored unchanged as attributes
    of the same names.

    Examples
    --------
    >>> from fastmv.estimators import MVFL
    >>> est = MVFL(n_clusters=3, lam1=0.01)
    >>> est.get_params()["lam1"]
    0.01
    >>> est.set_params(lam2=0.1).lam2
    0.1
    """

    @classmethod
    def _get_param_names(cls) -> list:
        sig = inspect.signature(cls.__init__)
        names = []
        for p in sig.parameters.values():
            if p.name == "self":
                continue
            if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
                raise RuntimeError(f"{cls.__name__}.__init__ must take explicit keyword "
                                   "arguments (no *args / **kwargs)")
            names.append(p.name)
        return sorted(names)

    def get_params(self, deep: bool = True) -> dict:
        """The estimator's parameters.

        Parameters
        ----------
        deep : bool, default True
            Also return the parameters of parameter values that are estimators, as
            ``name__key``.

        Returns
        -------
        dict
            Parameter names mapped to their values.

        Examples
        --------
        >>> from fastmv.estimators import OPIMC
        >>> OPIMC(n_clusters=4).get_params()["n_clusters"]
        4
        """
        out = {}
        for name in self._get_param_names():
            value = getattr(self, name)
            if deep and hasattr(value, "get_params") and not isinstance(value, type):
                out.update((f"{name}__{k}", v) for k, v in value.get_params().items())
            out[name] = value
        return out

    @sections([("**params : dict", "New parameter values.")], RETURNS_SELF,
              """>>> from fastmv.estimators import CMVNMF
              >>> CMVNMF().set_params(beta=0.5, max_iter=20)
              CMVNMF(beta=0.5, max_iter=20)""")
    def set_params(self, **params: Any) -> BaseEstimator:
        """Set parameters (``name__key`` for nested estimators); returns the estimator."""
        if not params:
            return self
        valid = self.get_params(deep=True)
        nested = {}
        for key, value in params.items():
            name, sep, sub = key.partition("__")
            if name not in valid:
                raise ValueError(f"invalid parameter {name!r} for estimator {type(self).__name__}"
                                 f"; valid parameters are: {', '.join(self._get_param_names())}")
            if sep:
                nested.setdefault(name, {})[sub] = value
            else:
                setattr(self, name, value)
                valid[name] = value
        for name, sub in nested.items():
            if not callable(getattr(valid[name], "set_params", None)):
                keys = ", ".join(f"{name}__{k}" for k in sub)
                raise InvalidParameterError(
                    f"invalid parameter {keys} for estimator {type(self).__name__}: {name} is "
                    f"{type(valid[name]).__name__}, not an estimator with parameters of its own; "
                    f"set it whole with set_params({name}=...)")
            valid[name].set_params(**sub)
        return self

    def __sklearn_clone__(self) -> BaseEstimator:
        """An unfitted copy with the same parameters (what ``sklearn.base.clone`` calls).

        Parameter values are deep-copied, as scikit-learn does, except ``executor``: pools
        and a dask client's executor hold locks and queues that cannot be copied, and a
        clone is meant to run on the same workers.

        Returns
        -------
        BaseEstimator
            A new estimator of the same class, not fitted.

        Examples
        --------
        >>> from concurrent.futures import ThreadPoolExecutor
        >>> from fastmv.estimators import MVMC
        >>> with ThreadPoolExecutor(1) as pool:
        ...     est = MVMC(n_clusters=3, executor=pool)
        ...     est.__sklearn_clone__().executor is pool
        True
        """
        params = self.get_params(deep=False)
        for name, value in params.items():
            if name in SHARED_BY_REFERENCE:
                continue
            clone = getattr(value, "__sklearn_clone__", None)
            params[name] = clone() if callable(clone) and not isinstance(value, type) \
                else copy.deepcopy(value)
        out = type(self)(**params)
        if hasattr(self, "_sklearn_output_config"):  # as sklearn.base.clone keeps it
            out._sklearn_output_config = dict(self._sklearn_output_config)
        return out

    def __sklearn_tags__(self):
        # Only scikit-learn (>= 1.6) calls this, so importing it here adds no runtime
        # dependency: a clusterer whose fit takes no target.
        from sklearn.utils import Tags, TargetTags  # noqa: PLC0415 (optional dependency)

        return Tags(estimator_type="clusterer", target_tags=TargetTags(required=False),
                    no_validation=True)

    def __repr__(self) -> str:
        defaults = {p.name: p.default for p in
                    inspect.signature(type(self).__init__).parameters.values()}
        changed = []
        for name in self._get_param_names():
            value = getattr(self, name)
            default = defaults.get(name, inspect.Parameter.empty)
            same = value is default
            if not same:
                try:
                    same = bool(type(value) is type(default) and value == default)
                except (TypeError, ValueError):  # arrays: no plain truth value of ==
                    same = False
            if not same:
                changed.append(f"{name}={value!r}")
        return f"{type(self).__name__}({', '.join(changed)})"

    def _repr_html_(self) -> str:
        """The estimator in a notebook: scikit-learn's diagram when scikit-learn is
        installed, else the text repr."""
        try:
            from sklearn.utils import estimator_html_repr  # noqa: PLC0415 (optional)

            return estimator_html_repr(self)
        except Exception:  # noqa: BLE001 (no scikit-learn, or one that cannot draw it)
            return f"<pre>{html.escape(repr(self))}</pre>"

    @sections([("transform : {\"default\", \"pandas\"} or None",
                "``\"pandas\"``: DataFrames (the index of a DataFrame input kept);\n"
                "``\"default\"``: NumPy arrays; ``None``: unchanged.")], RETURNS_SELF,
              """>>> from fastmv.estimators import OPIMC
              >>> OPIMC(2).set_output(transform="pandas")._sklearn_output_config
              {'transform': 'pandas'}""")
    def set_output(self, *, transform: str | None = None) -> BaseEstimator:
        """Choose what ``transform`` returns, as scikit-learn's ``set_output``."""
        if transform is None:
            return self
        if transform not in ("default", "pandas"):
            raise InvalidParameterError(f"set_output: transform must be 'default', 'pandas' or "
                                        f"None, got {transform!r}")
        self._sklearn_output_config = {"transform": transform}
        return self

    def _pandas_output(self) -> bool:
        return getattr(self, "_sklearn_output_config", {}).get("transform") == "pandas"
