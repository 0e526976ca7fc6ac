"""OPIMC (docs/opimc.md): the public function in ``_solver``, the data sources in
``_sources``, the chunk builder in ``_chunks``, Dask collections in ``_dask``; kernels in
``fastmv.kernels.opimc``."""
from ._solver import OPIMCResult, opimc

__all__ = ["OPIMCResult", "opimc"]
