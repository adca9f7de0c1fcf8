"""GeGLU MLP, bias-free: out = down(gelu_tanh(x Wg^T) * (x Wu^T)), x (T, D), Wg/Wu (I, D), Wd (D, I).

Eager runs five kernels on a GPU (three GEMMs, gelu, mul) and sends two (T, I) intermediates
through memory several times; Inductor fuses gelu*mul into one kernel; `triton_geglu` does the
same by hand (Liger style); `triton_fused` computes gate and up in one GEMM whose epilogue
applies gelu*mul, so neither ever reaches memory.
"""
from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn

from kernels.base import Case, Inputs, Op, Variant, as_parameter, random_tensor
from kernels.compiled import compile_prepare, eager_prepare
from kernels.formula import Formula
from kernels.registry import register_op, register_variant
from kernels.triton import runtime as triton_runtime

OP = "mlp"

# Passes over a (T, I) intermediate per call, by form (each write or read of one T x I tensor):
# eager: gate W, up W, gelu R+W, mul R+R+W, down R = 8; gelu*mul fused: gate W, up W, fused
# R+R+W, down R = 6; gate/up/gelu*mul in one GEMM: h W, down R = 2.
INTERMEDIATE_PASSES = {"eager": 8, "compile": 6, "triton_geglu": 6, "triton_fused": 2}


class GeGLUMLP(Op):
    name = OP
    params = ("T", "D", "I")
    size_axis = "T"
    rung = 30
    describe = "GeGLU MLP down(gelu_tanh(x Wg^T) * (x Wu^T)): does fusing gelu*mul pay off?"
    # The three GEMMs; gelu and mul add O(T*I), under 0.1% at any realistic D.
    flops_formula = Formula("6*T*D*I")
    bytes_formula = Formula("(2*T*D + 3*D*I) * itemsize")
    test_shape = {"T": 37, "D": 29, "I": 45}

    def make_inputs(self, case: Case, generator: torch.Generator) -> Inputs:
        T, D, I = case["T"], case["D"], case["I"]
        return {
            "x": random_tensor((T, D), case, generator),  # (T, D)
            "w_gate": random_tensor((I, D), case, generator, scale=1 / math.sqrt(D)),  # (I, D)
            "w_up": random_tensor((I, D), case, generator, scale=1 / math.sqrt(D)),  # (I, D)
            "w_down": random_tensor((D, I), case, generator, scale=1 / math.sqrt(I)),  # (D, I)
        }

    def reference(self, case: Case, inputs: Inputs) -> torch.Tensor:
        x, wg, wu, wd = (inputs[k].double() for k in ("x", "w_gate", "w_up", "w_down"))
        return (F.gelu(x @ wg.T, approximate="tanh") * (x @ wu.T)) @ wd.T

    def _intermediates(self, case: Case, passes: int) -> float:
        return float(passes * case["T"] * case["I"]) * case.torch_dtype.itemsize

    def bytes_unfused(self, case: Case) -> float:
        return self.bytes_ideal(case) + self._intermediates(case, INTERMEDIATE_PASSES["eager"])

    def bytes_moved(self, case: Case, variant: str) -> float | None:
        if variant not in INTERMEDIATE_PASSES:
            return None
        return self.bytes_ideal(case) + self._intermediates(case, INTERMEDIATE_PASSES[variant])


class GeGLUModule(nn.Module):
    """Three bias-free projections whose weights are the input tensors, not copies (a test that
    refills the inputs in place sees the change)."""

    def __init__(self, w_gate, w_up, w_down):
        super().__init__()
        self.w_gate = as_parameter(w_gate)
        self.w_up = as_parameter(w_up)
        self.w_down = as_parameter(w_down)

    def forward(self, x):  # x (T, D)
        gate = F.linear(x, self.w_gate)  # (T, I)
        up = F.linear(x, self.w_up)  # (T, I)
        return F.linear(F.gelu(gate, approximate="tanh") * up, self.w_down)  # (T, D)


def _module_parts(case: Case, inputs: Inputs):
    return GeGLUModule(inputs["w_gate"], inputs["w_up"], inputs["w_down"]), (inputs["x"],)


def _prepare_triton_geglu(case: Case, inputs: Inputs):
    from kernels.triton.geglu import geglu  # lazy: Triton may be missing

    x, wg, wu, wd = (inputs[k] for k in ("x", "w_gate", "w_up", "w_down"))
    # geglu's inputs are new tensors every call, so its checks run every call (a few us).
    return lambda: F.linear(geglu(F.linear(x, wg), F.linear(x, wu)), wd)


def _prepare_triton_geglu_train(case: Case, inputs: Inputs):
    """Training: the Triton gelu*mul forward and its elementwise backward (geglu_bwd.py), the
    GEMMs torch's."""
    from kernels.triton.geglu_bwd import geglu_train  # lazy: Triton may be missing

    x, wg, wu, wd = (inputs[k] for k in ("x", "w_gate", "w_up", "w_down"))
    return lambda: F.linear(geglu_train(F.linear(x, wg), F.linear(x, wu)), wd)


def _prepare_triton_fused(case: Case, inputs: Inputs):
    from kernels.triton.gemm import prepare_matmul_geglu  # lazy: Triton may be missing

    x, wg, wu, wd = (inputs[k] for k in ("x", "w_gate", "w_up", "w_down"))
    wg_t, wu_t = wg.t(), wu.t()  # (D, I) views: read through strides, never copied
    gate_up = prepare_matmul_geglu(x, wg_t, wu_t)  # checked once: a call only launches
    return lambda: F.linear(gate_up(), wd)


register_op(GeGLUMLP())
register_variant(Variant(OP, "eager", "eager", eager_prepare(_module_parts),
                         description="three nn.Linear-style GEMMs, gelu, mul: five kernels"))
register_variant(Variant(OP, "compile", "compile", compile_prepare(_module_parts),
                         description="torch.compile: Inductor fuses gelu*mul into one kernel"))
register_variant(Variant(OP, "triton_geglu", "triton", _prepare_triton_geglu,
                         supports=triton_runtime.supports,
                         description="torch GEMMs plus one hand-written Triton gelu*mul kernel "
                                     "(and its backward: one elementwise kernel)",
                         prepare_train=_prepare_triton_geglu_train))
register_variant(Variant(OP, "triton_fused", "triton", _prepare_triton_fused,
                         supports=triton_runtime.supports,
                         # gate and up: two (T, I, D) products in one kernel; down is an aten op
                         gemm_shapes=lambda c: ((c["T"], 2 * c["I"], c["D"]),),
                         description="gate and up in one Triton GEMM with a gelu*mul epilogue, "
                                     "then the down GEMM"))
