"""nn.Linear(IN, OUT, bias=True) on x (T, IN): y = x W^T + b with W (OUT, IN).

The module's forward is one aten::linear -> aten::addmm (bias fused by the dispatcher, the
weight read through its transpose view). The Triton variant does the same with the fused
bias-epilogue GEMM, reading the (OUT, IN) weight through its strides: no transpose copy.
"""
from __future__ import annotations

import math

import torch
from torch import nn

from kernels.base import Case, Inputs, Op, Variant, as_parameter, random_tensor
from kernels.compiled import compile_prepare, eager_prepare
from kernels.formula import Formula
from kernels.registry import register_op, register_variant
from kernels.triton import runtime as triton_runtime

OP = "linear"


class Linear(Op):
    name = OP
    params = ("T", "IN", "OUT")
    size_axis = "T"
    rung = 20
    describe = "nn.Linear(IN, OUT, bias=True) on x (T, IN): the bias add fused into the GEMM"
    flops_formula = Formula("2*T*IN*OUT + T*OUT")
    bytes_formula = Formula("(T*IN + OUT*IN + OUT + T*OUT) * itemsize")
    test_shape = {"T": 37, "IN": 29, "OUT": 45}

    def make_inputs(self, case: Case, generator: torch.Generator) -> Inputs:
        T, IN, OUT = case["T"], case["IN"], case["OUT"]
        return {
            "x": random_tensor((T, IN), case, generator),  # (T, IN)
            "weight": random_tensor((OUT, IN), case, generator, scale=1 / math.sqrt(IN)),  # (OUT, IN)
            "bias": random_tensor((OUT,), case, generator),  # (OUT,)
        }

    def reference(self, case: Case, inputs: Inputs) -> torch.Tensor:
        x, w, b = (inputs[k].double() for k in ("x", "weight", "bias"))
        return x @ w.T + b


def _module_parts(case: Case, inputs: Inputs):
    """The module whose parameters ARE the input tensors, not copies: every variant reads the same
    tensors, and a test that refills them in place sees the change."""
    module = nn.Linear(case["IN"], case["OUT"], bias=True, device="meta")
    module.weight = as_parameter(inputs["weight"])
    module.bias = as_parameter(inputs["bias"])
    return module, (inputs["x"],)


def _prepare_triton(case: Case, inputs: Inputs):
    from kernels.triton.gemm import prepare_matmul_bias_act  # lazy: Triton may be missing

    x, w, b = inputs["x"], inputs["weight"], inputs["bias"]
    w_t = w.t()  # (IN, OUT) view of the (OUT, IN) weight: strides, no copy
    return prepare_matmul_bias_act(x, w_t, b)  # checked once: a call only launches


def _prepare_triton_train(case: Case, inputs: Inputs):
    """Training: the Triton GEMM forward and backward through torch.autograd.Function
    (gemm_bwd.py), the (OUT, IN) weight read as an (IN, OUT) view, its gradient (OUT, IN)."""
    from kernels.triton.gemm_bwd import matmul_bias_train  # lazy: Triton may be missing

    x, w, b = inputs["x"], inputs["weight"], inputs["bias"]
    return lambda: matmul_bias_train(x, w.t(), b)


register_op(Linear())
register_variant(Variant(OP, "eager", "eager", eager_prepare(_module_parts),
                         description="nn.Linear module (aten::linear -> addmm)"))
register_variant(Variant(OP, "compile", "compile", compile_prepare(_module_parts),
                         description="torch.compile of the nn.Linear module"))
register_variant(Variant(OP, "triton", "triton", _prepare_triton,
                         supports=triton_runtime.supports,
                         gemm_shapes=lambda c: ((c["T"], c["OUT"], c["IN"]),),
                         description="Triton GEMM with the bias in the epilogue, weight read "
                                     "through its strides; training: dx, dW on the same GEMM, "
                                     "db one column reduction",
                         prepare_train=_prepare_triton_train))
