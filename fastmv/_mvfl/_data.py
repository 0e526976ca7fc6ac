"""The validated inputs and parameters of one :func:`fastmv.mvfl` call, in a module of their
own: the solver builds them (``_prepare``) and the parts it calls (the scaling's choice, the
start, the anchor's validation) read them, so none of those imports the solver."""
from __future__ import annotations

from typing import NamedTuple

import numpy as np


class Data(NamedTuple):
    """Validated inputs and parameters of one :func:`mvfl` call."""

    views: list
    n: int
    c: int
    prior: dict
    lam1: float
    lam2: float
    lam3: float
    rho: float
    anchor: float
    eps: float
    init: object
    n_init: int
    rng: np.random.Generator
    normalize: object
    solver: str
    f_step: str
    anchor_auto: bool = False  # anchor=None: validated from the labels where it matters
