"""RMSNorm forward in one Triton kernel: y = x / sqrt(mean(x^2, -1) + eps) * weight.

One program normalizes one row: the row is loaded once into registers, its mean square is
reduced in fp32, and the scaled row is written back, so x is read once and y written once.
The row length D need not be a power of two: BLOCK_SIZE is the next power of two and the
tail lanes are masked (loaded as 0, which adds nothing to the sum of squares).
"""
from __future__ import annotations

from typing import Callable

import torch
import triton
import triton.language as tl

from kernels.triton.rowwise import prepare_rows


@triton.jit
def _rms_norm_row(x_ptr, w_ptr, row, stride_xm, D, eps, BLOCK_SIZE: tl.constexpr):
    """(y in fp32 (BLOCK_SIZE,), rstd) of one row: the forward's math, shared by the inference
    kernel below and the training one (rmsnorm_bwd.py), so the two agree exactly."""
    cols = tl.arange(0, BLOCK_SIZE)  # (BLOCK_SIZE,)
    mask = cols < D
    # Statistics in fp32: a sum of D squares in fp16 overflows (max 65504) and bf16 has
    # only 8 bits of mantissa.
    x = tl.load(x_ptr + row * stride_xm + cols, mask=mask, other=0.0).to(tl.float32)
    mean_sq = tl.sum(x * x, axis=0) / D  # scalar; masked lanes are 0 so divide by D, not BLOCK_SIZE
    rstd = 1.0 / tl.sqrt(mean_sq + eps)  # scalar
    w = tl.load(w_ptr + cols, mask=mask, other=0.0).to(tl.float32)
    y = x * rstd * w  # (BLOCK_SIZE,) fp32
    return y, rstd


@triton.jit
def _rms_norm_fwd_kernel(
    x_ptr,  # (n_rows, D), row stride stride_xm, unit column stride
    w_ptr,  # (D,) contiguous
    y_ptr,  # (n_rows, D), row stride stride_ym, unit column stride
    stride_xm,
    stride_ym,
    D,
    eps,
    BLOCK_SIZE: tl.constexpr,  # next power of two >= D
):
    row = tl.program_id(axis=0).to(tl.int64)  # int64: row * stride can pass 2**31
    y, _ = _rms_norm_row(x_ptr, w_ptr, row, stride_xm, D, eps, BLOCK_SIZE)
    cols = tl.arange(0, BLOCK_SIZE)
    tl.store(y_ptr + row * stride_ym + cols, y.to(y_ptr.dtype.element_ty), mask=cols < D)


def rms_norm(x: torch.Tensor, weight: torch.Tensor, eps: float = 1e-6) -> torch.Tensor:
    """x / sqrt(mean(x^2, -1) + eps) * weight; x (..., D), weight (D,); output like x."""
    return prepare_rms_norm(x, weight, eps)()


def prepare_rms_norm(x: torch.Tensor, weight: torch.Tensor,
                     eps: float = 1e-6) -> Callable[[], torch.Tensor]:
    """`rms_norm` on these tensors as a call, its arguments checked once, here."""
    return prepare_rows("rms_norm", _rms_norm_fwd_kernel, x, {"weight": weight}, eps)
