"""EMVC (docs/emvc.md): the public function in ``_solver``, singular value thresholding in
``_svt``; kernels in ``fastmv.kernels.emvc``."""
from ._solver import EMVCResult, emvc

__all__ = ["EMVCResult", "emvc"]
