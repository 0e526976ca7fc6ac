"""EMVC (docs/records/emvc.md): its spec (``SPEC``, read by the registry) in ``_spec``, the public
function in ``_solver``, singular value thresholding in ``_svt`` (its exact routes in
``_svt_exact``, its capped tier in ``_svt_capped``); kernels in ``fastmv.kernels.emvc``."""
from ._spec import SPEC

__all__ = ["SPEC"]
