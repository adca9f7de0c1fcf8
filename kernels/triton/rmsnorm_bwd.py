"""RMSNorm for training: a forward that keeps each row's rstd, and its backward in Triton
kernels, tied together by a torch.autograd.Function (`rms_norm_train`).

With rstd = 1 / sqrt(mean(x^2) + eps), xhat = x * rstd and g = dy * weight (per row):

    dx      = rstd * (g - xhat * mean(g * xhat))
    dweight = sum over rows of dy * xhat

The forward stores rstd in fp32 (4 bytes a row), so the backward reads x, dy and the weight
once. One backward program walks a block of rows: it writes each row's dx and accumulates its
share of dweight in fp32 registers, which the second stage (rowwise_bwd.py) sums over blocks.
"""
from __future__ import annotations

from functools import partial
from typing import Callable

import torch
import triton
import triton.language as tl
from torch.autograd.function import once_differentiable

from kernels.triton.rmsnorm import _rms_norm_row
from kernels.triton.rowwise import _num_warps, check_rows
from kernels.triton.rowwise_bwd import rows_of, split_rows, sum_partials


@triton.jit
def _rms_norm_fwd_train_kernel(
    x_ptr,  # (n_rows, D), row stride stride_xm, unit column stride
    w_ptr,  # (D,) contiguous
    y_ptr,  # (n_rows, D), row stride stride_ym, unit column stride
    rstd_ptr,  # (n_rows,) fp32: what backward needs of the forward, besides x
    stride_xm,
    stride_ym,
    D,
    eps,
    BLOCK_SIZE: tl.constexpr,  # next power of two >= D
):
    row = tl.program_id(axis=0).to(tl.int64)  # int64: row * stride can pass 2**31
    # The inference kernel's own row math (rmsnorm.py): y is the same to the bit.
    y, rstd = _rms_norm_row(x_ptr, w_ptr, row, stride_xm, D, eps, BLOCK_SIZE)
    cols = tl.arange(0, BLOCK_SIZE)
    tl.store(y_ptr + row * stride_ym + cols, y.to(y_ptr.dtype.element_ty), mask=cols < D)
    tl.store(rstd_ptr + row, rstd)


@triton.jit
def _rms_norm_bwd_kernel(
    x_ptr,  # (n_rows, D), row stride stride_xm, unit column stride: the forward's input
    dy_ptr,  # (n_rows, D), row stride stride_dym (0 for an expanded gradient), unit column stride
    w_ptr,  # (D,) contiguous
    rstd_ptr,  # (n_rows,) fp32, from the training forward
    dx_ptr,  # (n_rows, D), row stride stride_dxm, unit column stride, x's dtype
    partial_ptr,  # (1, n_blocks, D) fp32 contiguous: stage 1 of dweight
    stride_xm,
    stride_dym,
    stride_dxm,
    n_rows,
    D,
    rows_per_program,
    BLOCK_SIZE: tl.constexpr,  # next power of two >= D
):
    block = tl.program_id(axis=0).to(tl.int64)  # int64: row * stride can pass 2**31
    cols = tl.arange(0, BLOCK_SIZE)  # (BLOCK_SIZE,)
    mask = cols < D
    dw_acc = tl.zeros((BLOCK_SIZE,), dtype=tl.float32)
    row_start = block * rows_per_program
    row_end = tl.minimum(row_start + rows_per_program, n_rows)  # the last block may be short
    for row in range(row_start, row_end):
        # fp32 math whatever the input dtype: the row sum below cancels against g.
        x = tl.load(x_ptr + row * stride_xm + cols, mask=mask, other=0.0).to(tl.float32)
        dy = tl.load(dy_ptr + row * stride_dym + cols, mask=mask, other=0.0).to(tl.float32)
        # w again each row, from cache: held across the loop it takes registers the row
        # needs (RMSNorm's kernel spilled on sm_90 at D=768 with it held).
        w = tl.load(w_ptr + cols, mask=mask, other=0.0).to(tl.float32)
        rstd = tl.load(rstd_ptr + row)
        xhat = x * rstd  # masked lanes: x is 0
        g = dy * w
        mean_gx = tl.sum(g * xhat, axis=0) / D  # scalar; divide by D, not BLOCK_SIZE
        dx = (g - xhat * mean_gx) * rstd
        tl.store(dx_ptr + row * stride_dxm + cols, dx.to(dx_ptr.dtype.element_ty), mask=mask)
        dw_acc += dy * xhat
    # This block's row of the partials buffer (block stride D: the buffer is contiguous).
    tl.store(partial_ptr + block * D + cols, dw_acc, mask=mask)


def rms_norm_fwd_train(x2: torch.Tensor, weight: torch.Tensor,
                       eps: float) -> tuple[torch.Tensor, torch.Tensor]:
    """(y2, rstd) of x2 (n_rows, D) with unit column stride: y2 (n_rows, D) in x's dtype, rstd
    (n_rows,) fp32. One launch; the arguments are not checked here."""
    n_rows, D = x2.shape
    y2 = torch.empty((n_rows, D), dtype=x2.dtype, device=x2.device)
    rstd = torch.empty(n_rows, dtype=torch.float32, device=x2.device)
    if n_rows == 0:
        return y2, rstd
    BLOCK_SIZE = triton.next_power_of_2(D)
    _rms_norm_fwd_train_kernel[(n_rows,)](
        x2, weight.contiguous(), y2, rstd, x2.stride(0), y2.stride(0), D, float(eps),
        BLOCK_SIZE=BLOCK_SIZE, num_warps=_num_warps(BLOCK_SIZE),
    )
    return y2, rstd


def rms_norm_bwd_rows(dy2: torch.Tensor, x2: torch.Tensor, weight: torch.Tensor,
                      rstd: torch.Tensor,
                      rows_per_program: int | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """Stage 1: (dx2 (n_rows, D) in x's dtype, partials (1, n_blocks, D) fp32), dy2 and x2
    (n_rows, D) with unit column stride. One launch; not checked here."""
    n_rows, D = x2.shape
    rows_per_program, n_blocks = split_rows(n_rows, x2.device, rows_per_program)
    dx2 = torch.empty((n_rows, D), dtype=x2.dtype, device=x2.device)
    partials = torch.empty((1, n_blocks, D), dtype=torch.float32, device=x2.device)
    if n_blocks == 0:
        return dx2, partials
    BLOCK_SIZE = triton.next_power_of_2(D)
    _rms_norm_bwd_kernel[(n_blocks,)](
        x2, dy2, weight.contiguous(), rstd, dx2, partials,
        x2.stride(0), dy2.stride(0), dx2.stride(0), n_rows, D, rows_per_program,
        BLOCK_SIZE=BLOCK_SIZE, num_warps=_num_warps(BLOCK_SIZE),
    )
    return dx2, partials


class RMSNormFn(torch.autograd.Function):
    """F.rms_norm(x, (D,), weight, eps) with this module's kernels both ways: three launches
    per training step (forward; backward's dx and stage 1; stage 2)."""

    @staticmethod
    def forward(ctx, x, weight, eps, rows_per_program=None):
        x2 = rows_of(x)
        y2, rstd = rms_norm_fwd_train(x2, weight, eps)
        ctx.save_for_backward(x2, weight, rstd)
        ctx.x_shape, ctx.rows_per_program = x.shape, rows_per_program
        return y2.reshape(x.shape)

    @staticmethod
    @once_differentiable  # the kernels' backward has no backward of its own
    def backward(ctx, dy):
        x2, weight, rstd = ctx.saved_tensors
        dx2, partials = rms_norm_bwd_rows(rows_of(dy), x2, weight, rstd, ctx.rows_per_program)
        dw = torch.empty(weight.shape, dtype=weight.dtype, device=weight.device)
        sum_partials(partials, dw)
        needs = ctx.needs_input_grad
        return (dx2.reshape(ctx.x_shape) if needs[0] else None, dw if needs[1] else None,
                None, None)


def rms_norm_train(x: torch.Tensor, weight: torch.Tensor, eps: float = 1e-6,
                   rows_per_program: int | None = None) -> torch.Tensor:
    """`rms_norm` (rmsnorm.py) that autograd can differentiate with the Triton backward:
    x (..., D), weight (D,); gradients for whichever of them require grad.
    rows_per_program fixes the backward's blocks of rows (default: rowwise_bwd.split_rows)."""
    return prepare_rms_norm_train(x, weight, eps, rows_per_program)()


def prepare_rms_norm_train(x: torch.Tensor, weight: torch.Tensor, eps: float = 1e-6,
                           rows_per_program: int | None = None) -> Callable[[], torch.Tensor]:
    """`rms_norm_train` on these tensors as a call, its arguments checked once, here."""
    check_rows("rms_norm", x, eps, weight=weight)
    return partial(RMSNormFn.apply, x, weight, eps, rows_per_program)
