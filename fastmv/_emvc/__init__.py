"""EMVC (docs/records/emvc.md): its spec (``SPEC``, read by the registry) in ``_spec``, the public
function in ``_solver``, singular value thresholding in
``_svt``; kernels in ``fastmv.kernels.emvc``."""
from ._spec import SPEC

__all__ = ["SPEC"]
