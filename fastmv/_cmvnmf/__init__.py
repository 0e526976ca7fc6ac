"""CMVNMF (docs/cmvnmf.md): the public function in ``_solver``, the pairwise constraints in
``_pairs``; kernels in ``fastmv.kernels.cmvnmf``."""
from ._solver import CMVNMFResult, cmvnmf

__all__ = ["CMVNMFResult", "cmvnmf"]
