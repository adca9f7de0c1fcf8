"""LayerNorm for training: a forward that keeps each row's mean and rstd, and its backward in
Triton kernels, tied together by a torch.autograd.Function (`layer_norm_train`).

With xhat = (x - mean) * rstd and g = dy * weight (per row, over its D columns):

    dx      = rstd * (g - mean(g) - xhat * mean(g * xhat))
    dweight = sum over rows of dy * xhat
    dbias   = sum over rows of dy

The forward stores mean and rstd in fp32 (8 bytes a row), so the backward reads x, dy and
the weight once and never recomputes the statistics. One backward program walks a block of
rows: it writes each row's dx and accumulates its share of dweight and dbias in fp32
registers, which the second stage (rowwise_bwd.py) sums over blocks.
"""
from __future__ import annotations

from functools import partial
from typing import Callable

import torch
import triton
import triton.language as tl
from torch.autograd.function import once_differentiable

from kernels.triton.layernorm import _layer_norm_row
from kernels.triton.rowwise import _num_warps, check_rows
from kernels.triton.rowwise_bwd import rows_of, split_rows, sum_partials


@triton.jit
def _layer_norm_fwd_train_kernel(
    x_ptr,  # (n_rows, D), row stride stride_xm, unit column stride
    w_ptr,  # (D,) contiguous
    b_ptr,  # (D,) contiguous; unread unless HAS_BIAS
    y_ptr,  # (n_rows, D), row stride stride_ym, unit column stride
    mean_ptr,  # (n_rows,) fp32: what backward needs of the forward, besides x
    rstd_ptr,  # (n_rows,) fp32
    stride_xm,
    stride_ym,
    D,
    eps,
    HAS_BIAS: tl.constexpr,
    BLOCK_SIZE: tl.constexpr,  # next power of two >= D
):
    row = tl.program_id(axis=0).to(tl.int64)  # int64: row * stride can pass 2**31
    # The inference kernel's own row math (layernorm.py): y is the same to the bit.
    y, mean, rstd = _layer_norm_row(x_ptr, w_ptr, b_ptr, row, stride_xm, D, eps, HAS_BIAS,
                                    BLOCK_SIZE)
    cols = tl.arange(0, BLOCK_SIZE)
    tl.store(y_ptr + row * stride_ym + cols, y.to(y_ptr.dtype.element_ty), mask=cols < D)
    tl.store(mean_ptr + row, mean)
    tl.store(rstd_ptr + row, rstd)


@triton.jit
def _layer_norm_bwd_kernel(
    x_ptr,  # (n_rows, D), row stride stride_xm, unit column stride: the forward's input
    dy_ptr,  # (n_rows, D), row stride stride_dym (0 for an expanded gradient), unit column stride
    w_ptr,  # (D,) contiguous
    mean_ptr,  # (n_rows,) fp32, from the training forward
    rstd_ptr,  # (n_rows,) fp32
    dx_ptr,  # (n_rows, D), row stride stride_dxm, unit column stride, x's dtype
    partial_ptr,  # (n_terms, n_blocks, D) fp32 contiguous: stage 1 of dweight (and dbias)
    stride_xm,
    stride_dym,
    stride_dxm,
    stride_pt,  # n_blocks * D: from the dweight partials to the dbias ones
    n_rows,
    D,
    rows_per_program,
    HAS_BIAS: tl.constexpr,  # whether to accumulate dbias (term 1)
    BLOCK_SIZE: tl.constexpr,  # next power of two >= D
):
    block = tl.program_id(axis=0).to(tl.int64)  # int64: row * stride can pass 2**31
    cols = tl.arange(0, BLOCK_SIZE)  # (BLOCK_SIZE,)
    mask = cols < D
    dw_acc = tl.zeros((BLOCK_SIZE,), dtype=tl.float32)
    db_acc = tl.zeros((BLOCK_SIZE,), dtype=tl.float32)
    row_start = block * rows_per_program
    row_end = tl.minimum(row_start + rows_per_program, n_rows)  # the last block may be short
    for row in range(row_start, row_end):
        # fp32 math whatever the input dtype: the two row sums below cancel against g.
        x = tl.load(x_ptr + row * stride_xm + cols, mask=mask, other=0.0).to(tl.float32)
        dy = tl.load(dy_ptr + row * stride_dym + cols, mask=mask, other=0.0).to(tl.float32)
        # w again each row, from cache: held across the loop it takes registers the row
        # needs (RMSNorm's kernel spilled on sm_90 at D=768 with it held).
        w = tl.load(w_ptr + cols, mask=mask, other=0.0).to(tl.float32)
        mean = tl.load(mean_ptr + row)
        rstd = tl.load(rstd_ptr + row)
        # Masked lanes would centre to -mean * rstd: zero them so no sum or partial sees them.
        xhat = tl.where(mask, (x - mean) * rstd, 0.0)
        g = dy * w  # masked lanes: dy is 0
        mean_g = tl.sum(g, axis=0) / D  # scalar; divide by D, not BLOCK_SIZE
        mean_gx = tl.sum(g * xhat, axis=0) / D  # scalar
        dx = (g - mean_g - xhat * mean_gx) * rstd
        tl.store(dx_ptr + row * stride_dxm + cols, dx.to(dx_ptr.dtype.element_ty), mask=mask)
        dw_acc += dy * xhat
        if HAS_BIAS:
            db_acc += dy
    # This block's row of the partials buffer (block stride D: the buffer is contiguous).
    tl.store(partial_ptr + block * D + cols, dw_acc, mask=mask)
    if HAS_BIAS:
        tl.store(partial_ptr + stride_pt + block * D + cols, db_acc, mask=mask)


def layer_norm_fwd_train(x2: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None,
                         eps: float) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """(y2, mean, rstd) of x2 (n_rows, D) with unit column stride: y2 (n_rows, D) in x's dtype,
    mean and rstd (n_rows,) fp32. One launch; the arguments are not checked here."""
    n_rows, D = x2.shape
    y2 = torch.empty((n_rows, D), dtype=x2.dtype, device=x2.device)
    mean = torch.empty(n_rows, dtype=torch.float32, device=x2.device)
    rstd = torch.empty(n_rows, dtype=torch.float32, device=x2.device)
    if n_rows == 0:
        return y2, mean, rstd
    BLOCK_SIZE = triton.next_power_of_2(D)
    w = weight.contiguous()
    # weight stands in for a missing bias: HAS_BIAS=False never reads it.
    _layer_norm_fwd_train_kernel[(n_rows,)](
        x2, w, w if bias is None else bias.contiguous(), y2, mean, rstd,
        x2.stride(0), y2.stride(0), D, float(eps),
        HAS_BIAS=bias is not None, BLOCK_SIZE=BLOCK_SIZE, num_warps=_num_warps(BLOCK_SIZE),
    )
    return y2, mean, rstd


def layer_norm_bwd_rows(dy2: torch.Tensor, x2: torch.Tensor, weight: torch.Tensor,
                        mean: torch.Tensor, rstd: torch.Tensor, has_bias: bool,
                        rows_per_program: int | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """Stage 1: (dx2 (n_rows, D) in x's dtype, partials (1 + has_bias, n_blocks, D) fp32), dy2
    and x2 (n_rows, D) with unit column stride. One launch; not checked here."""
    n_rows, D = x2.shape
    rows_per_program, n_blocks = split_rows(n_rows, x2.device, rows_per_program)
    dx2 = torch.empty((n_rows, D), dtype=x2.dtype, device=x2.device)
    partials = torch.empty((1 + has_bias, n_blocks, D), dtype=torch.float32, device=x2.device)
    if n_blocks == 0:
        return dx2, partials
    BLOCK_SIZE = triton.next_power_of_2(D)
    _layer_norm_bwd_kernel[(n_blocks,)](
        x2, dy2, weight.contiguous(), mean, rstd, dx2, partials,
        x2.stride(0), dy2.stride(0), dx2.stride(0), n_blocks * D, n_rows, D, rows_per_program,
        HAS_BIAS=has_bias, BLOCK_SIZE=BLOCK_SIZE, num_warps=_num_warps(BLOCK_SIZE),
    )
    return dx2, partials


class LayerNormFn(torch.autograd.Function):
    """F.layer_norm(x, (D,), weight, bias, eps) with this module's kernels both ways: three
    launches per training step (forward; backward's dx and stage 1; stage 2)."""

    @staticmethod
    def forward(ctx, x, weight, bias, eps, rows_per_program=None):
        x2 = rows_of(x)
        y2, mean, rstd = layer_norm_fwd_train(x2, weight, bias, eps)
        ctx.save_for_backward(x2, weight, bias, mean, rstd)
        ctx.x_shape, ctx.rows_per_program = x.shape, rows_per_program
        return y2.reshape(x.shape)

    @staticmethod
    @once_differentiable  # the kernels' backward has no backward of its own
    def backward(ctx, dy):
        x2, weight, bias, mean, rstd = ctx.saved_tensors
        dx2, partials = layer_norm_bwd_rows(rows_of(dy), x2, weight, mean, rstd,
                                            bias is not None, ctx.rows_per_program)
        dw = torch.empty(weight.shape, dtype=weight.dtype, device=weight.device)
        db = None if bias is None else torch.empty(bias.shape, dtype=bias.dtype,
                                                   device=bias.device)
        sum_partials(partials, dw, db)
        needs = ctx.needs_input_grad
        return (dx2.reshape(ctx.x_shape) if needs[0] else None, dw if needs[1] else None,
                db if needs[2] else None, None, None)


def layer_norm_train(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None = None,
                     eps: float = 1e-5, rows_per_program: int | None = None) -> torch.Tensor:
    """`layer_norm` (layernorm.py) that autograd can differentiate with the Triton backward:
    x (..., D), weight and bias (D,); gradients for whichever of them require grad.
    rows_per_program fixes the backward's blocks of rows (default: rowwise_bwd.split_rows)."""
    return prepare_layer_norm_train(x, weight, bias, eps, rows_per_program)()


def prepare_layer_norm_train(x: torch.Tensor, weight: torch.Tensor,
                             bias: torch.Tensor | None = None, eps: float = 1e-5,
                             rows_per_program: int | None = None) -> Callable[[], torch.Tensor]:
    """`layer_norm_train` on these tensors as a call, its arguments checked once, here."""
    check_rows("layer_norm", x, eps, weight=weight, bias=bias)
    return partial(LayerNormFn.apply, x, weight, bias, eps, rows_per_program)
