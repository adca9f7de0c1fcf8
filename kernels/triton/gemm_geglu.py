"""Triton GEMM with a GeGLU epilogue: `matmul_geglu` = gelu_tanh(x @ w_gate) * (x @ w_up).

One kernel, two fp32 accumulators fed by the same x tile; the gate and up products never reach
memory. Weights are read through strides (nn.Linear weights as `weight.t()` views).
"""
from __future__ import annotations

from functools import partial
from typing import Callable

import torch
import triton
import triton.language as tl

from kernels.triton.activations import gelu_tanh
from kernels.triton.gemm_common import (EVEN_K, INTERPRETER_CONFIGS, check_operands,
                                        check_output, config, dot_flags, grid, grouped_tile,
                                        k_loop, store_tile)
from kernels.triton import targets
from kernels.triton.runtime import kernels_interpreted

# Two fp32 accumulators per program double the register use, so no 128x256 tiles here.
GEGLU_CONFIGS = INTERPRETER_CONFIGS if kernels_interpreted() else [
    config(128, 128, 64, 3, 8),
    config(128, 128, 64, 4, 8),
    config(64, 128, 64, 4, 4),
    config(128, 64, 64, 4, 4),
    config(64, 64, 64, 4, 4),
    config(128, 128, 32, 4, 8),
    config(64, 64, 32, 4, 4),
]
# w_gate's strides: a row-major weight and a weight.t() view tune separately (see gemm.py).
TUNE_KEY = ["M", "N", "K", "stride_gk", "stride_gn"]


@triton.autotune(configs=GEGLU_CONFIGS, key=TUNE_KEY,
                 prune_configs_by={"early_config_prune": targets.gemm_prune("geglu")})
@triton.heuristics(EVEN_K)
@triton.jit
def _matmul_geglu_kernel(
        x_ptr, wg_ptr, wu_ptr, c_ptr, M, N, K,
        stride_xm, stride_xk, stride_gk, stride_gn, stride_uk, stride_un, stride_cm, stride_cn,
        INPUT_PRECISION: tl.constexpr, UPCAST_BF16: tl.constexpr,
        BLOCK_SIZE_M: tl.constexpr, BLOCK_SIZE_N: tl.constexpr, BLOCK_SIZE_K: tl.constexpr,
        GROUP_SIZE_M: tl.constexpr, EVEN_K: tl.constexpr):
    pid_m, pid_n = grouped_tile(M, N, BLOCK_SIZE_M, BLOCK_SIZE_N, GROUP_SIZE_M)
    # One x tile feeds both products, so x is read once for gate and up.
    gate, up, _, _ = k_loop(  # (BM, BN) fp32 each
        x_ptr, wg_ptr, wu_ptr, M, N, K, pid_m, pid_n,
        stride_xm, stride_xk, stride_gk, stride_gn, stride_uk, stride_un,
        INPUT_PRECISION, UPCAST_BF16, BLOCK_SIZE_M, BLOCK_SIZE_N, BLOCK_SIZE_K, EVEN_K,
        DUAL=True)

    # gate and up live only in registers: the one store is the GeGLU product.
    store_tile(c_ptr, gelu_tanh(gate) * up, pid_m, pid_n, M, N, stride_cm, stride_cn,
               BLOCK_SIZE_M, BLOCK_SIZE_N)


def matmul_geglu(x: torch.Tensor, w_gate: torch.Tensor, w_up: torch.Tensor) -> torch.Tensor:
    """gelu_tanh(x @ w_gate) * (x @ w_up): x (M, K), w_gate and w_up (K, N) -> (M, N).

    One kernel, two fp32 accumulators; the gate and up products never reach memory. Any
    strides: pass nn.Linear weights (N, K) as `weight.t()` views.
    """
    return prepare_matmul_geglu(x, w_gate, w_up)()


def prepare_matmul_geglu(x: torch.Tensor, w_gate: torch.Tensor,
                         w_up: torch.Tensor) -> Callable[[], torch.Tensor]:
    """`matmul_geglu` on these tensors as a call, its arguments checked once, here (as
    gemm.prepare_matmul_bias_act)."""
    op = "matmul_geglu"
    check_operands(op, x=x, w_gate=w_gate, w_up=w_up)
    M, K = x.shape
    if w_gate.shape[0] != K:
        raise ValueError(f"{op}: inner dimensions differ: x is {tuple(x.shape)}, "
                         f"w_gate is {tuple(w_gate.shape)} (K={K} vs {w_gate.shape[0]})")
    if w_up.shape != w_gate.shape:
        raise ValueError(f"{op}: w_up has shape {tuple(w_up.shape)} but w_gate has "
                         f"{tuple(w_gate.shape)}; both must be (K, N)")
    check_output(op, M, w_gate.shape[1])
    return partial(_launch, x, w_gate, w_up)


def _launch(x: torch.Tensor, w_gate: torch.Tensor, w_up: torch.Tensor) -> torch.Tensor:
    (M, K), N = x.shape, w_gate.shape[1]
    c = torch.empty((M, N), device=x.device, dtype=x.dtype)  # (M, N)
    if c.numel() == 0:
        return c
    _matmul_geglu_kernel[grid(M, N)](
        x, w_gate, w_up, c, M, N, K,
        x.stride(0), x.stride(1), w_gate.stride(0), w_gate.stride(1),
        w_up.stride(0), w_up.stride(1), c.stride(0), c.stride(1),
        **dot_flags(x.dtype))
    return c
