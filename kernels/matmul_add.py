"""matmul + bias: y = x @ w + b, with x (M, K), w (K, N), b (N,).

The first rung of the ladder (the series' `torch.add(torch.matmul(x, w), b)`): two ops in
eager mode, one `addmm` when the dispatcher fuses them, a compiled graph, and a Triton GEMM
that adds the bias in its epilogue so the (M, N) product never makes a round trip to memory.
"""
from __future__ import annotations

import math

import torch

from kernels.base import Case, Inputs, Op, Variant, random_tensor
from kernels.compiled import compile_prepare, eager_prepare
from kernels.formula import Formula
from kernels.registry import register_op, register_variant
from kernels.triton import runtime as triton_runtime

OP = "matmul_add"


class MatmulAdd(Op):
    name = OP
    params = ("M", "N", "K")
    size_axis = "M"
    rung = 10
    describe = "y = x @ w + b, square M = N = K: the series' torch.add(torch.matmul(x, w), b)"
    flops_formula = Formula("2*M*N*K + M*N")  # the GEMM, then one add per output
    bytes_formula = Formula("(M*K + K*N + N + M*N) * itemsize")
    test_shape = {"M": 37, "N": 45, "K": 29}

    def make_inputs(self, case: Case, generator: torch.Generator) -> Inputs:
        M, N, K = case["M"], case["N"], case["K"]
        return {
            "x": random_tensor((M, K), case, generator),  # (M, K)
            # 1/sqrt(K) keeps outputs O(1), so low-precision errors are comparable across K.
            "w": random_tensor((K, N), case, generator, scale=1 / math.sqrt(K)),  # (K, N)
            "b": random_tensor((N,), case, generator),  # (N,)
        }

    def reference(self, case: Case, inputs: Inputs) -> torch.Tensor:
        x, w, b = (inputs[k].double() for k in ("x", "w", "b"))
        return x @ w + b

    def bytes_unfused(self, case: Case) -> float:
        # Eager writes the (M, N) product, then the add reads it back and writes y.
        M, N = case["M"], case["N"]
        return self.bytes_ideal(case) + 2.0 * M * N * case.torch_dtype.itemsize


def _eager_parts(case: Case, inputs: Inputs):
    def matmul_then_add(x, w, b):
        return torch.add(torch.matmul(x, w), b)

    return matmul_then_add, (inputs["x"], inputs["w"], inputs["b"])


def _prepare_addmm(case: Case, inputs: Inputs):
    x, w, b = inputs["x"], inputs["w"], inputs["b"]
    return lambda: torch.addmm(b, x, w)


def _prepare_triton(case: Case, inputs: Inputs):
    from kernels.triton.gemm import matmul_bias_act  # lazy: Triton may be missing

    x, w, b = inputs["x"], inputs["w"], inputs["b"]
    return lambda: matmul_bias_act(x, w, b)


register_op(MatmulAdd())
register_variant(Variant(OP, "eager", "eager", eager_prepare(_eager_parts),
                         description="torch.add(torch.matmul(x, w), b): two ops"))
register_variant(Variant(OP, "addmm", "library", _prepare_addmm,
                         description="torch.addmm(b, x, w): the dispatcher's fused GEMM + bias"))
register_variant(Variant(OP, "compile", "compile", compile_prepare(_eager_parts),
                         description="torch.compile of the eager function (default mode)"))
register_variant(Variant(OP, "triton", "triton", _prepare_triton,
                         supports=triton_runtime.supports,
                         description="Triton tiled GEMM, bias added in the epilogue"))
