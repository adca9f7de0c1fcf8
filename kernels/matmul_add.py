"""matmul + bias: y = x @ w + b, with x (M, K), w (K, N), b (N,); or x (B, M, K) with
`suite.batch` (the series' 3-D experiment: what a batched input dispatches).

The first rung of the ladder (the series' `torch.add(torch.matmul(x, w), b)`): two ops in
eager mode, one `addmm` when the dispatcher fuses them, a compiled graph, and a Triton GEMM
that adds the bias in its epilogue so the (M, N) product never makes a round trip to memory
(plain tiles, and on Hopper a persistent one fed by TMA).
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
    optional = {"B": 1}  # B > 1: x is (B, M, K), w and b shared by the batch
    size_axis = "M"
    rung = 10
    describe = "y = x @ w + b, square M = N = K: the series' torch.add(torch.matmul(x, w), b)"
    flops_formula = Formula("B*(2*M*N*K + M*N)")  # the GEMM, then one add per output
    bytes_formula = Formula("(B*M*K + K*N + N + B*M*N) * itemsize")
    test_shape = {"M": 37, "N": 45, "K": 29}

    def make_inputs(self, case: Case, generator: torch.Generator) -> Inputs:
        M, N, K = case["M"], case["N"], case["K"]
        batch = (case["B"],) if "B" in case.values else ()  # absent: 2-D, as the series began
        return {
            "x": random_tensor((*batch, M, K), case, generator),  # ([B,] M, K)
            # 1/sqrt(K) keeps outputs O(1), so low-precision errors are comparable across K.
            "w": random_tensor((K, N), case, generator, scale=1 / math.sqrt(K)),  # (K, N)
            "b": random_tensor((N,), case, generator),  # (N,)
        }

    def reference(self, case: Case, inputs: Inputs) -> torch.Tensor:
        x, w, b = (inputs[k].double() for k in ("x", "w", "b"))
        return x @ w + b

    def bytes_unfused(self, case: Case) -> float:
        # Eager writes the (M, N) product, then the add reads it back and writes y.
        M, N = self.value(case, "B") * case["M"], case["N"]
        return self.bytes_ideal(case) + 2.0 * M * N * case.torch_dtype.itemsize


def _eager_parts(case: Case, inputs: Inputs):
    def matmul_then_add(x, w, b):
        return torch.add(torch.matmul(x, w), b)

    return matmul_then_add, (inputs["x"], inputs["w"], inputs["b"])


def _prepare_addmm(case: Case, inputs: Inputs):
    x, w, b = inputs["x"], inputs["w"], inputs["b"]
    if x.dim() == 2:
        return lambda: torch.addmm(b, x, w)
    rows = x.view(-1, x.shape[-1])  # addmm is 2-D: the batch folds into M, a view
    return lambda: torch.addmm(b, rows, w).view(*x.shape[:-1], w.shape[1])


def _batched(prepare_2d, inputs: Inputs):
    """A 2-D Triton GEMM on ([B,] M, K) inputs: the batch folded into M (a view of the
    contiguous x), the (B*M, N) output viewed back. Checked once, here: a call only launches."""
    x, w, b = inputs["x"], inputs["w"], inputs["b"]
    call = prepare_2d(x.view(-1, x.shape[-1]), w, b)
    if x.dim() == 2:
        return call
    shape = (*x.shape[:-1], w.shape[1])
    return lambda: call().view(shape)


def _prepare_triton(case: Case, inputs: Inputs):
    from kernels.triton.gemm import prepare_matmul_bias_act  # lazy: Triton may be missing

    return _batched(prepare_matmul_bias_act, inputs)


def _prepare_triton_train(case: Case, inputs: Inputs):
    """Training: the Triton GEMM forward and backward (dx, dw on the same GEMM kernel, db one
    column reduction: gemm_bwd.py), through torch.autograd.Function; ([B,] M, K) folds into M
    inside."""
    from kernels.triton.gemm_bwd import matmul_bias_train  # lazy: Triton may be missing

    x, w, b = inputs["x"], inputs["w"], inputs["b"]
    return lambda: matmul_bias_train(x, w, b)


def _prepare_triton_tma(case: Case, inputs: Inputs):
    from kernels.triton.gemm_tma import prepare_matmul_bias_act_tma  # lazy: Triton may be missing

    return _batched(prepare_matmul_bias_act_tma, inputs)


def _gemm_shape(case: Case) -> tuple[tuple[int, int, int], ...]:
    """The one GEMM a Triton variant launches: the batch folded into M."""
    return ((MatmulAdd().value(case, "B") * case["M"], case["N"], case["K"]),)


def _supports_triton_tma(case: Case) -> str | None:
    """The Triton rules, then Hopper (TMA and wgmma need sm_90+) and TMA's 16-byte rows. On a
    CPU the interpreter runs the descriptors (zero padding and clipped stores included)."""
    problem = triton_runtime.supports(case)
    if problem is None and case.device_type == "cuda":
        major, minor = torch.cuda.get_device_capability(case.device)
        if major < 9:
            problem = (f"the TMA GEMM needs compute capability 9.0 or newer (Hopper: TMA, "
                       f"wgmma); this GPU is {major}.{minor}")
    if problem is None:
        from kernels.triton.gemm_tma import layout_problem
        problem = layout_problem(case["K"], case["N"], case.torch_dtype.itemsize)
    return problem


register_op(MatmulAdd())
register_variant(Variant(OP, "eager", "eager", eager_prepare(_eager_parts),
                         description="torch.add(torch.matmul(x, w), b): two ops"))
register_variant(Variant(OP, "addmm", "library", _prepare_addmm,
                         description="torch.addmm(b, x, w): the dispatcher's fused GEMM + bias"))
register_variant(Variant(OP, "compile", "compile", compile_prepare(_eager_parts),
                         description="torch.compile of the eager function (default mode)"))
register_variant(Variant(OP, "triton", "triton", _prepare_triton,
                         supports=triton_runtime.supports, gemm_shapes=_gemm_shape,
                         description="Triton tiled GEMM, bias added in the epilogue; training: "
                                     "dx and dw on the same GEMM, db one column reduction",
                         prepare_train=_prepare_triton_train))
register_variant(Variant(OP, "triton_tma", "triton", _prepare_triton_tma,
                         supports=_supports_triton_tma, gemm_shapes=_gemm_shape,
                         description="Triton persistent GEMM on Hopper: TMA tensor descriptors, "
                                     "wgmma, bias in the epilogue (sm_90+)"))
