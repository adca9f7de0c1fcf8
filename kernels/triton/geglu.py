"""GeGLU forward in one Triton kernel: out = gelu_tanh(gate) * up, elementwise.

The gate activation and the product are fused so the activation never round-trips through
global memory. GeGLU is purely elementwise, so the kernel treats both inputs as flat 1-D
arrays and each program handles one BLOCK_SIZE chunk.
"""
from __future__ import annotations

from functools import partial
from typing import Callable

import torch
import triton
import triton.language as tl

from kernels.triton.activations import gelu_tanh
from kernels.triton.runtime import check_tensors, kernels_interpreted


@triton.jit
def _geglu_fwd_kernel(
    gate_ptr,  # (n_elements,) contiguous, input dtype
    up_ptr,  # (n_elements,) contiguous, input dtype
    out_ptr,  # (n_elements,) contiguous, input dtype
    n_elements,
    BLOCK_SIZE: tl.constexpr,
):
    # int64 offsets: a flat index can pass 2**31 for large activations (e.g. 16k tokens x 150k).
    pid = tl.program_id(axis=0).to(tl.int64)
    offsets = pid * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)  # (BLOCK_SIZE,)
    mask = offsets < n_elements  # the last block is usually partial
    # fp32 math: the cubic and the exp lose too much in fp16/bf16.
    gate = tl.load(gate_ptr + offsets, mask=mask, other=0.0).to(tl.float32)
    up = tl.load(up_ptr + offsets, mask=mask, other=0.0).to(tl.float32)
    out = gelu_tanh(gate) * up
    tl.store(out_ptr + offsets, out.to(out_ptr.dtype.element_ty), mask=mask)


def _launch_config(n_elements: int) -> tuple[int, int]:
    """(BLOCK_SIZE, num_warps). Memory-bound, so a heuristic beats autotuning here."""
    if kernels_interpreted():
        # The interpreter runs each program as numpy ops: one mid-size block is fine.
        return 1024, 4
    # 1024 elements over 4 warps = 8 per thread (16-byte vector loads for half types);
    # bigger blocks for big tensors to cut the number of tiny programs.
    if n_elements >= 1 << 22:
        return 4096, 8
    return 1024, 4


def geglu(gate: torch.Tensor, up: torch.Tensor) -> torch.Tensor:
    """gelu_tanh(gate) * up, same shape (any number of dims) and dtype as the inputs."""
    return prepare_geglu(gate, up)()


def prepare_geglu(gate: torch.Tensor, up: torch.Tensor) -> Callable[[], torch.Tensor]:
    """`geglu` on these tensors as a call, its arguments checked once, here."""
    check_tensors("geglu", gate=gate, up=up)
    if gate.shape != up.shape:
        raise ValueError(f"geglu: gate and up must have the same shape, got "
                         f"{tuple(gate.shape)} and {tuple(up.shape)}")
    return partial(_launch, gate, up)


def _launch(gate: torch.Tensor, up: torch.Tensor) -> torch.Tensor:
    # The kernel indexes flat memory: make non-contiguous views dense (a copy only if needed).
    gate_c, up_c = gate.contiguous(), up.contiguous()
    out = torch.empty_like(gate_c)  # (*shape), contiguous
    n_elements = gate_c.numel()
    if n_elements == 0:
        return out
    BLOCK_SIZE, num_warps = _launch_config(n_elements)
    grid = (triton.cdiv(n_elements, BLOCK_SIZE),)
    _geglu_fwd_kernel[grid](gate_c, up_c, out, n_elements, BLOCK_SIZE=BLOCK_SIZE, num_warps=num_warps)
    return out
