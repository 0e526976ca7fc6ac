"""A fresh interpreter for a test case that could crash the one it runs in (a kernel reading
out of bounds, a file that inflates to gigabytes, a signal): the crash fails that test
instead of ending the run."""
from __future__ import annotations

import os
import subprocess
import sys
import textwrap

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def child(code: str, timeout: float = 120, **popen):
    """Run ``code`` in a fresh interpreter with this tree on the path."""
    env = {**os.environ, "PYTHONPATH": ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""),
           "NUMBA_NUM_THREADS": os.environ.get("NUMBA_NUM_THREADS", "2")}
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=timeout, **popen)
