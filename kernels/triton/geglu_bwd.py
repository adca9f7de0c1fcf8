"""GeGLU backward in one Triton kernel, and `GeGLUFn`: the forward kernel (geglu.py) and this one
as a torch.autograd.Function, for the training modes.

h = gelu_tanh(gate) * up, so given dh:
    dgate = dh * up * gelu_tanh'(gate),   dup = dh * gelu_tanh(gate).
One pass reads dh, gate and up once and writes both gradients. Only the inputs are saved for
backward: gelu(gate) is recomputed in registers (one exp) instead of being kept in memory
between the passes, as eager autograd keeps it. Like the forward, the kernel treats every
tensor as a flat array and each program handles one BLOCK_SIZE chunk.
"""
from __future__ import annotations

import torch
import triton
import triton.language as tl
from torch.autograd.function import once_differentiable

from kernels.triton.activations import gelu_tanh_with_grad
from kernels.triton.geglu import _launch_config, geglu
from kernels.triton.runtime import check_tensors


@triton.jit
def _geglu_bwd_kernel(
    dh_ptr,  # (n_elements,) contiguous, input dtype: the gradient of h
    gate_ptr,  # (n_elements,) contiguous, input dtype
    up_ptr,  # (n_elements,) contiguous, input dtype
    dgate_ptr,  # (n_elements,) contiguous, input dtype
    dup_ptr,  # (n_elements,) contiguous, input dtype
    n_elements,
    BLOCK_SIZE: tl.constexpr,
):
    # int64 offsets, as the forward: a flat index can pass 2**31.
    pid = tl.program_id(axis=0).to(tl.int64)
    offsets = pid * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)  # (BLOCK_SIZE,)
    mask = offsets < n_elements
    # fp32 math, as the forward: the derivative's cubic and exp lose too much in fp16/bf16.
    dh = tl.load(dh_ptr + offsets, mask=mask, other=0.0).to(tl.float32)
    gate = tl.load(gate_ptr + offsets, mask=mask, other=0.0).to(tl.float32)
    up = tl.load(up_ptr + offsets, mask=mask, other=0.0).to(tl.float32)
    gelu, gelu_grad = gelu_tanh_with_grad(gate)
    tl.store(dgate_ptr + offsets, (dh * up * gelu_grad).to(dgate_ptr.dtype.element_ty), mask=mask)
    tl.store(dup_ptr + offsets, (dh * gelu).to(dup_ptr.dtype.element_ty), mask=mask)


def geglu_backward(dh: torch.Tensor, gate: torch.Tensor,
                   up: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """(dgate, dup) of h = gelu_tanh(gate) * up given dh, all of one shape and dtype."""
    check_tensors("geglu_backward", dh=dh, gate=gate, up=up)
    if not dh.shape == gate.shape == up.shape:
        raise ValueError(f"geglu_backward: dh, gate and up must have the same shape, got "
                         f"{tuple(dh.shape)}, {tuple(gate.shape)} and {tuple(up.shape)}")
    return _launch_backward(dh, gate, up)


def _launch_backward(dh: torch.Tensor, gate: torch.Tensor,
                     up: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    # Flat indexing needs dense memory. dh is often not: `h.sum().backward()` hands an
    # expanded scalar (stride 0). contiguous() copies only what is not dense already.
    dh_c, gate_c, up_c = dh.contiguous(), gate.contiguous(), up.contiguous()
    dgate, dup = torch.empty_like(gate_c), torch.empty_like(up_c)  # (*shape), contiguous
    n_elements = gate_c.numel()
    if n_elements == 0:
        return dgate, dup
    # The forward's blocks: this kernel is as memory-bound (3 loads and 2 stores per element).
    BLOCK_SIZE, num_warps = _launch_config(n_elements)
    grid = (triton.cdiv(n_elements, BLOCK_SIZE),)
    _geglu_bwd_kernel[grid](dh_c, gate_c, up_c, dgate, dup, n_elements,
                            BLOCK_SIZE=BLOCK_SIZE, num_warps=num_warps)
    return dgate, dup


class GeGLUFn(torch.autograd.Function):
    """h = gelu_tanh(gate) * up with Triton in both directions; saves gate and up only."""

    @staticmethod
    def forward(ctx, gate: torch.Tensor, up: torch.Tensor) -> torch.Tensor:
        out = geglu(gate, up)  # checks the inputs
        ctx.save_for_backward(gate, up)
        return out

    @staticmethod
    @once_differentiable  # the kernel's gradients are not themselves differentiable
    def backward(ctx, dh: torch.Tensor):
        gate, up = ctx.saved_tensors
        # One kernel writes both: asking for one costs the same pass, so always compute both.
        dgate, dup = _launch_backward(dh.to(gate.dtype), gate, up)
        return (dgate if ctx.needs_input_grad[0] else None,
                dup if ctx.needs_input_grad[1] else None)


def geglu_train(gate: torch.Tensor, up: torch.Tensor) -> torch.Tensor:
    """gelu_tanh(gate) * up that autograd can differentiate: Triton forward and backward."""
    return GeGLUFn.apply(gate, up)
