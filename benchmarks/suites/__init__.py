"""The asv suites, alone in asv's ``benchmark_dir`` (``asv.conf.json``): ``bench_*.py``.

asv imports this folder as a top-level package of its own (``suites``, found in its parent
folder), so the helpers, NumPy references and shared-data lookup the suites use are imported
from the ``benchmarks`` package beside them: the repository's root is appended to
``sys.path`` here, after the installed fastmv, which stays the one measured. Imported as
``benchmarks.suites`` (the tests, ``benchmarks/report.py``) this changes nothing.
"""
import os
import sys

_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
if _ROOT not in sys.path:
    sys.path.append(_ROOT)
