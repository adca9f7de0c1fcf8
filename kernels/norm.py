"""LayerNorm and RMSNorm over the last dim of x (T, D), the `norm` parameter choosing which:

    layer: y = (x - mean(x)) / sqrt(var(x) + eps) * weight + bias     (biased variance)
    rms:   y = x / sqrt(mean(x^2) + eps) * weight

Written out op by op (the unfused formula eager code starts from), every step is a pass over a
(T, D) tensor in memory; F.layer_norm / F.rms_norm, torch.compile and the Triton kernels (one
program per row) read x once and write y once. Memory-bound: what fusion saves here is traffic.
"""
from __future__ import annotations

import torch
import torch.nn.functional as F

from kernels.base import Case, Inputs, Op, Variant, random_tensor
from kernels.compiled import compile_prepare, eager_prepare
from kernels.formula import Formula
from kernels.registry import register_op, register_variant
from kernels.triton import runtime as triton_runtime

OP = "norm"
# nn.LayerNorm's default, and the RMSNorm eps of LLaMA-style models (kernels/block.py too).
EPS = {"layer": 1e-5, "rms": 1e-6}

# Passes over a (T, D) tensor per call of the unfused formula (each read or write of the whole
# tensor once; the (T, 1) statistics are left out). Layer: mean R 1, x - mean R+W 2, (c*c) R+W
# 2, its mean R 1, c * rstd R+W 2, * weight R+W 2, + bias R+W 2 = 12. Rms: (x*x) R+W 2, its mean
# R 1, x * rstd R+W 2, * weight R+W 2 = 7.
UNFUSED_PASSES = {"layer": 12, "rms": 7}
# One kernel per row reads x and writes y once: the ideal bytes. (A row stays in cache between
# its statistics and its normalisation, so a kernel that reads it twice still reads memory once.)
FUSED = ("functional", "compile", "triton")


class Norm(Op):
    name = OP
    params = ("T", "D", "norm")
    choices = {"norm": ("layer", "rms")}
    size_axis = "T"
    rung = 50
    describe = ("LayerNorm and RMSNorm over x (T, D): the formula op by op against PyTorch's own "
                "norm, torch.compile and a Triton kernel (one pass over each row where fused)")
    # Per element: layer = mean, centre, square, variance sum, * rstd, * weight, + bias; rms =
    # square, sum, * rstd, * weight. The per-row rsqrt is O(T).
    flops_formula = Formula("(7 if norm == 'layer' else 4) * T*D")
    # x read, y written, weight (and bias) read.
    bytes_formula = Formula("(2*T*D + (2*D if norm == 'layer' else D)) * itemsize")
    test_shape = {"T": 37, "D": 45}  # D is no power of two: the Triton kernels mask a tail

    def make_inputs(self, case: Case, generator: torch.Generator) -> Inputs:
        T, D = case["T"], case["D"]
        # Rows with a mean of about 1, so a LayerNorm that forgets to centre is caught.
        inputs = {"x": random_tensor((T, D), case, generator).add_(1.0)}  # (T, D)
        # Around 1 and 0, as trained gains and biases are; not exactly, so a dropped one shows.
        inputs["weight"] = random_tensor((D,), case, generator, scale=0.1).add_(1.0)  # (D,)
        if case["norm"] == "layer":
            inputs["bias"] = random_tensor((D,), case, generator, scale=0.1)  # (D,)
        return inputs

    def reference(self, case: Case, inputs: Inputs) -> torch.Tensor:
        x, w = inputs["x"].double(), inputs["weight"].double()
        eps = EPS[case["norm"]]
        if case["norm"] == "layer":
            centered = x - x.mean(-1, keepdim=True)
            var = centered.pow(2).mean(-1, keepdim=True)
            return centered * torch.rsqrt(var + eps) * w + inputs["bias"].double()
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * w

    def bytes_unfused(self, case: Case) -> float:
        extra = UNFUSED_PASSES[case["norm"]] - 2  # the ideal bytes hold x's read and y's write
        return self.bytes_ideal(case) + float(extra * case["T"] * case["D"]) * case.torch_dtype.itemsize

    def bytes_moved(self, case: Case, variant: str) -> float | None:
        if variant in FUSED:
            return self.bytes_ideal(case)
        return super().bytes_moved(case, variant)


def _layer_norm_unfused(x, weight, bias, eps):  # x (T, D)
    mean = x.mean(-1, keepdim=True)  # (T, 1)
    centered = x - mean  # (T, D)
    var = (centered * centered).mean(-1, keepdim=True)  # (T, 1), biased, as F.layer_norm's
    return centered * torch.rsqrt(var + eps) * weight + bias


def _rms_norm_unfused(x, weight, eps):  # x (T, D)
    mean_square = (x * x).mean(-1, keepdim=True)  # (T, 1)
    return x * torch.rsqrt(mean_square + eps) * weight


def _unfused_parts(case: Case, inputs: Inputs):
    """The formula op by op; `compile` compiles exactly this function."""
    eps = EPS[case["norm"]]
    if case["norm"] == "layer":
        return _layer_norm_unfused, (inputs["x"], inputs["weight"], inputs["bias"], eps)
    return _rms_norm_unfused, (inputs["x"], inputs["weight"], eps)


def _prepare_functional(case: Case, inputs: Inputs):
    x, w, eps, D = inputs["x"], inputs["weight"], EPS[case["norm"]], case["D"]
    if case["norm"] == "layer":
        b = inputs["bias"]
        return lambda: F.layer_norm(x, (D,), w, b, eps)
    return lambda: F.rms_norm(x, (D,), w, eps)


def _prepare_triton(case: Case, inputs: Inputs):
    # Lazy: Triton may be missing, and the interpreter flag must be set before these imports.
    from kernels.triton.layernorm import prepare_layer_norm
    from kernels.triton.rmsnorm import prepare_rms_norm

    # Checked once, here: a timed call only launches.
    x, w, eps = inputs["x"], inputs["weight"], EPS[case["norm"]]
    if case["norm"] == "layer":
        return prepare_layer_norm(x, w, inputs["bias"], eps)
    return prepare_rms_norm(x, w, eps)


def _prepare_triton_train(case: Case, inputs: Inputs):
    """The training form: the forward that keeps each row's statistics and the backward kernels
    (dx, then dW/db in two stages), wired through torch.autograd.Function."""
    from kernels.triton.layernorm_bwd import prepare_layer_norm_train
    from kernels.triton.rmsnorm_bwd import prepare_rms_norm_train

    x, w, eps = inputs["x"], inputs["weight"], EPS[case["norm"]]
    if case["norm"] == "layer":
        return prepare_layer_norm_train(x, w, inputs["bias"], eps)
    return prepare_rms_norm_train(x, w, eps)


register_op(Norm())
register_variant(Variant(OP, "eager", "eager", eager_prepare(_unfused_parts),
                         description="the formula op by op (mean, centre, variance, rsqrt, scale, "
                                     "shift): each step a pass over (T, D) in memory"))
register_variant(Variant(OP, "functional", "library", _prepare_functional,
                         description="F.layer_norm / F.rms_norm: PyTorch's own norm (one kernel "
                                     "where it has a fused one; F.rms_norm on a CPU decomposes "
                                     "into aten ops)"))
register_variant(Variant(OP, "compile", "compile", compile_prepare(_unfused_parts),
                         description="torch.compile of the unfused formula: Inductor fuses it "
                                     "into one reduction kernel per row"))
register_variant(Variant(OP, "triton", "triton", _prepare_triton,
                         supports=lambda c: triton_runtime.supports(c, row=("D", c["D"])),
                         description="this project's Triton kernels (layernorm.py, rmsnorm.py): "
                                     "one program per row, statistics in fp32; training: "
                                     "layernorm_bwd.py, rmsnorm_bwd.py (dx per row, dW/db in "
                                     "two stages)",
                         prepare_train=_prepare_triton_train))
