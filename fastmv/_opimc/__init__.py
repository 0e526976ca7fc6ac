"""OPIMC (docs/records/opimc.md): its spec (``SPEC``, read by the registry) in ``_spec``, the public
function in ``_solver``, the data sources in
``_sources``, the chunk builder in ``_chunks``, Dask collections in ``_dask``; kernels in
``fastmv.kernels.opimc``."""
from ._spec import SPEC

__all__ = ["SPEC"]
