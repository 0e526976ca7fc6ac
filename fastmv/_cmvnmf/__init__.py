"""CMVNMF (docs/cmvnmf.md): its spec (``SPEC``, read by the registry) in ``_spec``, the public
function in ``_solver``, the pairwise constraints in
``_pairs``; kernels in ``fastmv.kernels.cmvnmf``."""
from ._spec import SPEC

__all__ = ["SPEC"]
