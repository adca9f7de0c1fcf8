"""The host side that row-wise Triton kernels share (rmsnorm.py, layernorm.py).

Such a kernel runs one program per row of x viewed as (n_rows, D), the row loaded once into
registers. Its arguments follow one order, which `launch_rows` relies on:
(x_ptr, *param_ptrs, y_ptr, stride_xm, stride_ym, D, eps, ..., BLOCK_SIZE).
"""
from __future__ import annotations

from functools import partial
from typing import Callable

import torch
import triton

from kernels.triton.runtime import MAX_ROW, check_tensors, kernels_interpreted


def check_rows(op: str, x: torch.Tensor, eps: float, **params: torch.Tensor | None) -> None:
    """x (..., D) with 1 <= D <= MAX_ROW, each given param (weight, bias) of shape (D,), eps >= 0."""
    # Params may differ in dtype from x (e.g. fp32 weights for bf16 activations), as torch's
    # norms allow.
    check_tensors(op, same_dtype=False, x=x, **params)
    if x.ndim < 1:
        raise ValueError(f"{op}: x must have at least 1 dim (..., D), got a 0-dim tensor")
    D = x.shape[-1]
    for name, p in params.items():
        if p is not None and (p.ndim != 1 or p.shape[0] != D):
            raise ValueError(f"{op}: {name} must have shape (D,) = ({D},) to match x's last dim, "
                             f"got {tuple(p.shape)}")
    if D == 0 or D > MAX_ROW:  # one row lives in one program's registers
        raise ValueError(f"{op}: last dim D={D} is not supported; need 1 <= D <= {MAX_ROW}")
    if not (isinstance(eps, (int, float)) and eps >= 0):
        raise ValueError(f"{op}: eps must be a non-negative number, got {eps!r}")


def _num_warps(block_size: int) -> int:
    """Enough threads that each holds a handful of elements (no register spills for big D)."""
    if kernels_interpreted():
        return 1  # ignored by the interpreter
    if block_size <= 1024:
        return 4
    if block_size <= 4096:
        return 8
    return 16


def prepare_rows(op: str, kernel, x: torch.Tensor, params: dict[str, torch.Tensor | None],
                 eps: float, **constexprs) -> Callable[[], torch.Tensor]:
    """The checks once, then `launch_rows` as a call on these tensors: what each call of a
    row-wise wrapper does, without the checks (params None are dropped: pass a stand-in in the
    kernel's argument order where it needs one)."""
    check_rows(op, x, eps, **params)
    given = tuple(p for p in params.values() if p is not None)
    return partial(launch_rows, kernel, x, given, eps, **constexprs)


def launch_rows(kernel, x: torch.Tensor, params: tuple, eps: float, **constexprs) -> torch.Tensor:
    """Run `kernel` over the rows of x (..., D) with contiguous `params`; y like x (shape, dtype)."""
    D = x.shape[-1]
    # 2-D view (n_rows, D); reshape copies only when the leading dims cannot be merged, and
    # the kernel needs unit stride along D.
    x2 = x.reshape(-1, D)
    if x2.stride(-1) != 1:
        x2 = x2.contiguous()
    n_rows = x2.shape[0]
    y2 = torch.empty((n_rows, D), dtype=x.dtype, device=x.device)  # (n_rows, D)
    if n_rows == 0:
        return y2.reshape(x.shape)
    BLOCK_SIZE = triton.next_power_of_2(D)
    kernel[(n_rows,)](
        x2, *(p.contiguous() for p in params), y2, x2.stride(0), y2.stride(0), D, float(eps),
        BLOCK_SIZE=BLOCK_SIZE, num_warps=_num_warps(BLOCK_SIZE), **constexprs,
    )
    return y2.reshape(x.shape)
