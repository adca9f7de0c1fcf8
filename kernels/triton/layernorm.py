"""LayerNorm forward in one Triton kernel: y = (x - mean) / sqrt(var + eps) * weight + bias.

Over the last dim, with the biased variance, as torch.nn.functional.layer_norm(x, (D,), ...).
One program normalizes one row, loaded once into registers, with its statistics in fp32, so x
is read once and y written once. D need not be a power of two: BLOCK_SIZE is the next power of
two and the tail lanes are masked.
"""
from __future__ import annotations

from typing import Callable

import torch
import triton
import triton.language as tl

from kernels.triton.rowwise import prepare_rows


@triton.jit
def _layer_norm_row(x_ptr, w_ptr, b_ptr, row, stride_xm, D, eps,
                    HAS_BIAS: tl.constexpr, BLOCK_SIZE: tl.constexpr):
    """(y in fp32 (BLOCK_SIZE,), mean, rstd) of one row: the forward's math, shared by the
    inference kernel below and the training one (layernorm_bwd.py), so the two agree exactly."""
    cols = tl.arange(0, BLOCK_SIZE)  # (BLOCK_SIZE,)
    mask = cols < D
    # fp32 statistics: fp16 sums overflow past 65504, and bf16 keeps only 8 mantissa bits.
    x = tl.load(x_ptr + row * stride_xm + cols, mask=mask, other=0.0).to(tl.float32)
    mean = tl.sum(x, axis=0) / D  # scalar; masked lanes load as 0, so divide by D
    # Masked lanes hold 0, which centres to -mean: zero them so they add nothing to the variance.
    xc = tl.where(mask, x - mean, 0.0)  # (BLOCK_SIZE,)
    # Two passes over the registers, not E[x^2] - mean^2, which cancels badly for large means.
    var = tl.sum(xc * xc, axis=0) / D  # scalar, biased as torch's
    rstd = 1.0 / tl.sqrt(var + eps)  # scalar
    w = tl.load(w_ptr + cols, mask=mask, other=0.0).to(tl.float32)
    y = xc * rstd * w  # (BLOCK_SIZE,) fp32
    if HAS_BIAS:
        y += tl.load(b_ptr + cols, mask=mask, other=0.0).to(tl.float32)
    return y, mean, rstd


@triton.jit
def _layer_norm_fwd_kernel(
    x_ptr,  # (n_rows, D), row stride stride_xm, unit column stride
    w_ptr,  # (D,) contiguous
    b_ptr,  # (D,) contiguous; unread unless HAS_BIAS
    y_ptr,  # (n_rows, D), row stride stride_ym, unit column stride
    stride_xm,
    stride_ym,
    D,
    eps,
    HAS_BIAS: tl.constexpr,
    BLOCK_SIZE: tl.constexpr,  # next power of two >= D
):
    row = tl.program_id(axis=0).to(tl.int64)  # int64: row * stride can pass 2**31
    y, _, _ = _layer_norm_row(x_ptr, w_ptr, b_ptr, row, stride_xm, D, eps, HAS_BIAS, BLOCK_SIZE)
    cols = tl.arange(0, BLOCK_SIZE)
    tl.store(y_ptr + row * stride_ym + cols, y.to(y_ptr.dtype.element_ty), mask=cols < D)


def layer_norm(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None = None,
               eps: float = 1e-5) -> torch.Tensor:
    """(x - mean) / sqrt(var + eps) * weight + bias over x's last dim (biased var), as
    F.layer_norm(x, (D,), weight, bias, eps); x (..., D), weight and bias (D,); output like x.
    """
    return prepare_layer_norm(x, weight, bias, eps)()


def prepare_layer_norm(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None = None,
                       eps: float = 1e-5) -> Callable[[], torch.Tensor]:
    """`layer_norm` on these tensors as a call, its arguments checked once, here."""
    # weight stands in for a missing bias: HAS_BIAS=False never reads it.
    return prepare_rows("layer_norm", _layer_norm_fwd_kernel, x,
                        {"weight": weight, "bias": weight if bias is None else bias}, eps,
                        HAS_BIAS=bias is not None)
