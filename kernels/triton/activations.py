"""Activations that Triton kernels apply in registers, on fp32 tensors.

gelu_tanh serves the elementwise GeGLU kernel and both GEMM epilogues, so every kernel rounds
the same way. `activate` picks one by a constexpr name, for the GEMM epilogue hook.
"""
from __future__ import annotations

import triton
import triton.language as tl

ACTIVATIONS = ("none", "relu", "gelu_tanh")  # the names `activate` accepts


@triton.jit
def gelu_tanh(x):
    """GELU, tanh approximation (torch's gelu(approximate="tanh")), on an fp32 tensor.

    gelu(x) = 0.5 * x * (1 + tanh(u)),  u = sqrt(2/pi) * (x + 0.044715 x^3).
    With tanh(u) = 2 * sigmoid(2u) - 1 this is x * sigmoid(2u) = x / (1 + exp(-2u)), which
    needs only exp: tl has no tanh on every backend and Triton version, and the interpreter
    lacks libdevice. For very negative x, exp(-2u) overflows to +inf and the result is
    x / inf = -0, the right limit; for very positive x it is x / 1. No NaNs either way.
    """
    u = 0.7978845608028654 * (x + 0.044715 * x * x * x)  # 0.79788... = sqrt(2 / pi)
    return x / (1.0 + tl.exp(-2.0 * u))


@triton.jit
def activate(x, ACTIVATION: tl.constexpr):
    # Resolved at compile time, so "none" costs nothing.
    if ACTIVATION == "relu":
        x = tl.maximum(x, 0.0)
    elif ACTIVATION == "gelu_tanh":
        x = gelu_tanh(x)
    return x
