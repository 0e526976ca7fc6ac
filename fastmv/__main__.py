"""``python -m fastmv``: see :mod:`fastmv._app._cli`."""
import sys

from ._app._cli import main

sys.exit(main())
