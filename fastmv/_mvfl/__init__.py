"""MVFL (docs/mvfl.md): the public function in ``_solver``, the ``F`` step in ``_fstep``,
the ``W, b`` step in ``_wstep``; kernels in ``fastmv.kernels.mvfl``."""
from ._solver import MVFLResult, mvfl

__all__ = ["MVFLResult", "mvfl"]
