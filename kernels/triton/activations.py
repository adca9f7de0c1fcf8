"""Activations that Triton kernels apply in registers, on fp32 tensors.

gelu_tanh serves the elementwise GeGLU kernel and both GEMM epilogues, so every kernel rounds
the same way; gelu_tanh_with_grad adds its derivative for backward kernels. `activate` picks
one by a constexpr name, for the GEMM epilogue hook.
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
def gelu_tanh_with_grad(x):
    """(gelu_tanh(x), d gelu_tanh / dx) on an fp32 tensor, sharing one exp.

    The value is gelu_tanh's own expression, so a backward kernel recomputes exactly what the
    forward stored. With s = sigmoid(2u) = 1 / (1 + exp(-2u)), gelu = x * s and
        gelu'(x) = s + x * 2 s (1 - s) * du/dx,  du/dx = sqrt(2/pi) * (1 + 3 * 0.044715 x^2).
    Where the sigmoid saturates (exp(-2u) is 0 or inf), s is exactly 1 or 0 and the slope
    2 s (1 - s) is 0: the right limits 1 and 0. The slope term is then left out rather than
    multiplied, since du/dx overflows for |x| > ~1e19 and 0 * inf would be NaN.
    """
    u = 0.7978845608028654 * (x + 0.044715 * x * x * x)  # as gelu_tanh
    denom = 1.0 + tl.exp(-2.0 * u)
    s = 1.0 / denom
    slope = 2.0 * s * (1.0 - s)  # d sigmoid(2u) / du
    du_dx = 0.7978845608028654 * (1.0 + 0.134145 * x * x)  # 0.134145 = 3 * 0.044715
    grad = s + tl.where(slope > 0.0, x * slope * du_dx, 0.0)
    return x / denom, grad


@triton.jit
def activate(x, ACTIVATION: tl.constexpr):
    # Resolved at compile time, so "none" costs nothing.
    if ACTIVATION == "relu":
        x = tl.maximum(x, 0.0)
    elif ACTIVATION == "gelu_tanh":
        x = gelu_tanh(x)
    return x
