"""MVMC (docs/mvmc.md): the public function in ``_solver``, the outer iteration in
``_problem``, the clipped low-rank similarity in ``_lowrank``; kernels in
``fastmv.kernels.mvmc``."""
from ._solver import MVMCResult, mvmc

__all__ = ["MVMCResult", "mvmc"]
