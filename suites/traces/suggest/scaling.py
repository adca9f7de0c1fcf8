"""`--scale F`: a trace's shapes made F times smaller along an axis whose work is linear in it,
for a machine that cannot hold them (a GPU trace swept on a CPU). Per block, the axes of SCALED
are divided in order (rounded up), what one cannot take going to the next: the tokens (T, M),
the batch, then the heads; never a sequence length or a width, whose work grows faster than
linearly or changes the kernels. Work per call is then ~1/F of the trace's, so a time measured
at the scaled shape, times the factor actually applied, stands beside the trace's
(suites/suggest/replay.py), and a ratio of two variants is the scaled shape's (said where it is
used).
"""
from __future__ import annotations

import math

# The axes a block's time is linear in, in the order they are scaled.
SCALED = {"linear": ("T",), "mlp": ("T",), "norm": ("T",), "matmul_add": ("M",),
          "attention": ("B", "H"), "block": ("B",)}


def scaled(suite: str, values: dict, factor: float) -> tuple[dict, float]:
    """(the values with one axis divided by `factor`, rounded up; the factor applied)."""
    out, applied = dict(values), 1.0
    for axis in SCALED.get(suite, ()):
        left = factor / applied
        size = out.get(axis)
        if left <= 1.0001:
            break
        if isinstance(size, int) and size > 1:  # the rest of the factor on the next axis
            out[axis] = max(1, math.ceil(size / left))
            applied *= size / out[axis]
    return out, applied
