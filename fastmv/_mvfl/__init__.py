"""MVFL (docs/records/mvfl.md): its spec (``SPEC``, read by the registry) in ``_spec``, the public
function in ``_solver``, the per-view scaling in ``_normalize``, the ``F`` step in ``_fstep``,
the ``W, b`` step in ``_wstep``; kernels in ``fastmv.kernels.mvfl``."""
from ._spec import SPEC

__all__ = ["SPEC"]
