"""MVMC (docs/records/mvmc.md): its spec (``SPEC``, read by the registry) in ``_spec``, the public
function in ``_solver``, the outer iteration in
``_problem``, the clipped low-rank similarity in ``_lowrank``; kernels in
``fastmv.kernels.mvmc``."""
from ._spec import SPEC

__all__ = ["SPEC"]
