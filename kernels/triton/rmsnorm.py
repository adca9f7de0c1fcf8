"""RMSNorm forward in one Triton kernel: y = x / sqrt(mean(x^2, -1) + eps) * weight.

One program normalizes one row: the row is loaded once into registers, its mean square is
reduced in fp32, and the scaled row is written back, so x is read once and y written once.
The row length D need not be a power of two: BLOCK_SIZE is the next power of two and the
tail lanes are masked (loaded as 0, which adds nothing to the sum of squares).
"""
from __future__ import annotations

import torch
import triton
import triton.language as tl

from kernels.triton.runtime import check_tensors, kernels_interpreted

_INTERPRET = kernels_interpreted()

# One row must fit in one program's registers; beyond this a looped (two-pass) kernel is needed.
MAX_D = 65536


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
    cols = tl.arange(0, BLOCK_SIZE)  # (BLOCK_SIZE,)
    mask = cols < D
    # Statistics in fp32: a sum of D squares in fp16 overflows (max 65504) and bf16 has
    # only 8 bits of mantissa.
    x = tl.load(x_ptr + row * stride_xm + cols, mask=mask, other=0.0).to(tl.float32)
    mean_sq = tl.sum(x * x, axis=0) / D  # scalar; masked lanes are 0 so divide by D, not BLOCK_SIZE
    rstd = 1.0 / tl.sqrt(mean_sq + eps)  # scalar
    w = tl.load(w_ptr + cols, mask=mask, other=0.0).to(tl.float32)
    y = x * rstd * w  # (BLOCK_SIZE,) fp32
    tl.store(y_ptr + row * stride_ym + cols, y.to(y_ptr.dtype.element_ty), mask=mask)


def _num_warps(block_size: int) -> int:
    """Enough threads that each holds a handful of elements (no register spills for big D)."""
    if _INTERPRET:
        return 1  # ignored by the interpreter
    if block_size <= 1024:
        return 4
    if block_size <= 4096:
        return 8
    return 16


def _check(x: torch.Tensor, weight: torch.Tensor, eps: float) -> None:
    # weight may differ in dtype (e.g. fp32 weights for bf16 activations), as F.rms_norm allows.
    check_tensors("rms_norm", same_dtype=False, x=x, weight=weight)
    if x.ndim < 1:
        raise ValueError("rms_norm: x must have at least 1 dim (..., D), got a 0-dim tensor")
    D = x.shape[-1]
    if weight.ndim != 1 or weight.shape[0] != D:
        raise ValueError(f"rms_norm: weight must have shape (D,) = ({D},) to match x's last dim, "
                         f"got {tuple(weight.shape)}")
    if D == 0 or D > MAX_D:
        raise ValueError(f"rms_norm: last dim D={D} is not supported; need 1 <= D <= {MAX_D}")
    if not (isinstance(eps, (int, float)) and eps >= 0):
        raise ValueError(f"rms_norm: eps must be a non-negative number, got {eps!r}")


def rms_norm(x: torch.Tensor, weight: torch.Tensor, eps: float = 1e-6) -> torch.Tensor:
    """x / sqrt(mean(x^2, -1) + eps) * weight; x (..., D), weight (D,); output like x."""
    _check(x, weight, eps)
    D = x.shape[-1]
    # 2-D view (n_rows, D); reshape copies only when the leading dims cannot be merged, and
    # the kernel needs unit stride along D.
    x2 = x.reshape(-1, D)
    if x2.stride(-1) != 1:
        x2 = x2.contiguous()
    w = weight.contiguous()
    n_rows = x2.shape[0]
    y2 = torch.empty((n_rows, D), dtype=x.dtype, device=x.device)  # (n_rows, D)
    if n_rows == 0:
        return y2.reshape(x.shape)
    BLOCK_SIZE = triton.next_power_of_2(D)
    _rms_norm_fwd_kernel[(n_rows,)](
        x2, w, y2, x2.stride(0), y2.stride(0), D, float(eps),
        BLOCK_SIZE=BLOCK_SIZE, num_warps=_num_warps(BLOCK_SIZE),
    )
    return y2.reshape(x.shape)
