"""A pre-norm transformer decoder block, bias-free, inference only. x (B, S, D):

    h   = x + Wo · attn(rms_norm1(x))                        causal, H heads of size D/H
    out = h + Wd · (gelu_tanh(Wg · n) * (Wu · n)),  n = rms_norm2(h)

The top of the ladder: every earlier block (GEMM epilogues, the GeGLU MLP, flash attention) is a
part of this one. Eager runs it op by op; torch.compile fuses the norms, residual adds and
gelu*mul around the library GEMMs; the Triton variant chains this project's kernels, with the
residual adds fused into the projection GEMMs' epilogues and no copies in the QKV split.
"""
from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn

from kernels.base import Case, Inputs, Op, Variant, as_parameter, random_tensor
from kernels.causal_reference import causal_attention
from kernels.compiled import compile_prepare, cuda_only, eager_prepare
from kernels.formula import Formula
from kernels.registry import register_op, register_variant
from kernels.triton import runtime as triton_runtime

OP = "block"
EPS = 1e-6
WEIGHTS = ("norm1", "w_qkv", "w_o", "norm2", "w_gate", "w_up", "w_down")


def _norm_weight(D: int, case: Case, generator: torch.Generator) -> torch.Tensor:
    # Around 1, as a trained RMSNorm's gain is; not exactly 1, so a dropped weight shows up.
    noise = torch.randn(D, generator=generator, device=case.device)  # (D,) fp32
    return (1.0 + 0.1 * noise).to(case.torch_dtype)


class DecoderBlockOp(Op):
    name = OP
    params = ("B", "S", "D", "H", "I")
    size_axis = "S"
    rung = 60
    describe = ("pre-norm decoder block x + attn(norm(x)), h + GeGLU(norm(h)): how much of a whole "
                "block do compile and hand-fused Triton kernels win back?")
    # T = B*S tokens: QKV 6·T·D² + causal attention 4·B·H·S²·(D/H) / 2 + Wo 2·T·D² + GeGLU MLP
    # 6·T·D·I. Norms, softmax, gelu and adds are O(T·D) or O(B·H·S²): under 1% at any realistic
    # D, and left out, as for the other blocks.
    flops_formula = Formula("6*B*S*D**2 + 2*B*H*S**2*(D//H) + 2*B*S*D**2 + 6*B*S*D*I")
    # x read, out written, and the weights: qkv 3D², o D², gate/up/down 3·D·I, two norm gains.
    bytes_formula = Formula("(2*B*S*D + 4*D**2 + 3*D*I + 2*D) * itemsize")
    # Odd sizes: T = 74 and D = 60 are no multiples of the 32-wide interpreter tiles, the head
    # size 20 is no power of two (flash attention pads it to 32), and B = 2 checks batch strides.
    test_shape = {"B": 2, "S": 37, "D": 60, "H": 3, "I": 80}

    def shape_problem(self, values) -> str | None:
        if values["D"] % values["H"]:
            return (f"D={values['D']} is not divisible by H={values['H']}; the head size D/H "
                    "must be an integer")
        return None

    def make_inputs(self, case: Case, generator: torch.Generator) -> Inputs:
        B, S, D, H, I = (case[k] for k in self.params)
        problem = self.shape_problem(case.values)
        if problem:
            raise ValueError(f"block: {problem}")

        def weight(shape, fan_in):  # 1/sqrt(fan_in): every projection's output stays O(1)
            return random_tensor(shape, case, generator, scale=1 / math.sqrt(fan_in))

        return {
            "x": random_tensor((B, S, D), case, generator),  # (B, S, D)
            "norm1": _norm_weight(D, case, generator),  # (D,)
            "w_qkv": weight((3 * D, D), D),  # (3D, D): q, k, v stacked, nn.Linear layout
            "w_o": weight((D, D), D),  # (D, D)
            "norm2": _norm_weight(D, case, generator),  # (D,)
            "w_gate": weight((I, D), D),  # (I, D)
            "w_up": weight((I, D), D),  # (I, D)
            "w_down": weight((D, I), I),  # (D, I)
        }

    def reference(self, case: Case, inputs: Inputs) -> torch.Tensor:
        x, n1, wqkv, wo, n2, wg, wu, wd = (inputs[k].double() for k in ("x",) + WEIGHTS)
        B, S, D = x.shape
        H = case["H"]

        def rms(t, w):
            return t * torch.rsqrt(t.pow(2).mean(-1, keepdim=True) + EPS) * w

        q, k, v = (rms(x, n1) @ wqkv.T).view(B, S, 3, H, D // H).permute(2, 0, 3, 1, 4)
        attn = causal_attention(q, k, v)  # (B, H, S, D/H), a block of query rows at a time
        h = x + attn.transpose(1, 2).reshape(B, S, D) @ wo.T  # (B, S, D)
        n = rms(h, n2)
        return h + (F.gelu(n @ wg.T, approximate="tanh") * (n @ wu.T)) @ wd.T

    def _moved(self, case: Case, td_passes: int, ti_passes: int) -> float:
        T, D, I = case["B"] * case["S"], case["D"], case["I"]
        extra = td_passes * T * D + ti_passes * T * I
        return self.bytes_ideal(case) + float(extra) * case.torch_dtype.itemsize

    def bytes_unfused(self, case: Case) -> float:
        # The eager module's op-level data flow: each intermediate written once and read by each
        # consumer, rms_norm and SDPA counted as one op each (SDPA's fused backends keep the
        # scores on chip; passes inside a decomposed rms_norm are not counted). In (T, D)
        # passes: x re-read by the residual 1, norm1 W+R 2, qkv W+R 6, attention out W+R 2 (a
        # view: see DecoderBlock.forward), Wo out W+R 2, h W+R+R 3, norm2 W+R+R 3, down out
        # W+R 2 = 21; in (T, I) passes: the MLP's gate/up/gelu/mul = 8 (see mlp.py).
        return self._moved(case, 21, 8)

    def bytes_moved(self, case: Case, variant: str) -> float | None:
        if variant == "triton":
            # Residual adds in the GEMM epilogues, gelu*mul in the gate/up GEMM. In (T, D)
            # passes: x re-read by the residual 1, norm1 W+R 2, qkv W+R 6, attention out W+R 2
            # (the head merge is a view), h W+R+R 3, norm2 W+R 2 = 16; in (T, I) passes: the
            # GeGLU product W+R = 2.
            return self._moved(case, 16, 2)
        return super().bytes_moved(case, variant)


class DecoderBlock(nn.Module):
    """The eager block. Its parameters ARE the input tensors (shared storage), not copies: every
    variant reads the same tensors, and a test that refills them in place sees the change."""

    def __init__(self, inputs: Inputs, heads: int):
        super().__init__()
        self.heads = heads
        I, D = inputs["w_gate"].shape
        self.eps = EPS
        self.norm1 = as_parameter(inputs["norm1"])  # (D,)
        self.norm2 = as_parameter(inputs["norm2"])  # (D,)
        # Built on the meta device: no throwaway weights are allocated and initialised.
        self.qkv = nn.Linear(D, 3 * D, bias=False, device="meta")
        self.o = nn.Linear(D, D, bias=False, device="meta")
        self.gate = nn.Linear(D, I, bias=False, device="meta")
        self.up = nn.Linear(D, I, bias=False, device="meta")
        self.down = nn.Linear(I, D, bias=False, device="meta")
        for layer, key in ((self.qkv, "w_qkv"), (self.o, "w_o"), (self.gate, "w_gate"),
                           (self.up, "w_up"), (self.down, "w_down")):
            layer.weight = as_parameter(inputs[key])

    def forward(self, x):  # x (B, S, D)
        B, S, D = x.shape
        n = F.rms_norm(x, (D,), self.norm1, self.eps)  # (B, S, D)
        # Split the fused projection into heads: views, no copies.
        q, k, v = self.qkv(n).view(B, S, 3, self.heads, D // self.heads).permute(2, 0, 3, 1, 4)
        a = F.scaled_dot_product_attention(q, k, v, is_causal=True)  # (B, H, S, D/H)
        # SDPA's flash and memory-efficient backends (CPU and CUDA) lay their output out as
        # (B, S, H, D/H) and return a transposed view, so merging the heads is a view, no copy.
        h = x + self.o(a.transpose(1, 2).reshape(B, S, D))  # (B, S, D)
        n = F.rms_norm(h, (D,), self.norm2, self.eps)  # (B, S, D)
        return h + self.down(F.gelu(self.gate(n), approximate="tanh") * self.up(n))


def _parts(case: Case, inputs: Inputs):
    return DecoderBlock(inputs, heads=case["H"]), (inputs["x"],)


def _prepare_reduce_overhead(case: Case, inputs: Inputs):
    call = compile_prepare(_parts, mode="reduce-overhead")(case, inputs)

    def run():
        # CUDA graphs replay into a fixed output buffer, so a call's result is valid only until
        # the next call. The harness uses each result before calling again (the correctness
        # pass compares it first; timing and profiling drop it), so no clone is needed, and a
        # clone would add a (B, S, D) copy kernel to every timed call. Inference calls already
        # start a new cudagraph-trees generation each; marking it says so explicitly, and an
        # output held across calls then fails loudly on access instead of reading stale data.
        # (x is a plain input, not a parameter, so cudagraph trees copy it into the graph's
        # static input buffer on every call: expect one device copy per call in the profile.)
        torch.compiler.cudagraph_mark_step_begin()
        return call()

    run.compiled_from = call.compiled_from  # suites/harness/compile_partition.py reads it
    return run


def _prepare_triton(case: Case, inputs: Inputs):
    # Lazy: Triton may be missing, and the interpreter flag must be set before these imports.
    from kernels.triton.flash_attention import flash_attention
    from kernels.triton.gemm import matmul_bias_act, matmul_geglu
    from kernels.triton.rmsnorm import rms_norm

    x = inputs["x"]
    B, S, D = x.shape
    H, T = case["H"], B * S
    x2 = x.view(T, D)  # (T, D), the same storage
    norm1, norm2 = inputs["norm1"], inputs["norm2"]
    # (in, out) views of the nn.Linear (out, in) weights: the GEMMs read them through strides.
    wqkv_t, wo_t, wg_t, wu_t, wd_t = (inputs[k].t() for k in ("w_qkv", "w_o", "w_gate",
                                                               "w_up", "w_down"))

    def block():
        qkv = matmul_bias_act(rms_norm(x2, norm1, EPS), wqkv_t)  # (T, 3D)
        # (T, 3D) -> (3, B, H, S, D/H): strided views into qkv, which flash_attention reads in
        # place (row stride 3D, head stride D/H).
        q, k, v = qkv.view(B, S, 3, H, D // H).permute(2, 0, 3, 1, 4)
        # (B, H, S, D/H) view of a (B, S, H, D/H)-major buffer, as SDPA returns: merging the
        # heads back into (T, D) rows below is a view, not a copy.
        a = flash_attention(q, k, v, causal=True)
        a = a.transpose(1, 2).reshape(T, D)  # (T, D)
        h = matmul_bias_act(a, wo_t, residual=x2)  # (T, D): x + attn Wo^T, add in the epilogue
        g = matmul_geglu(rms_norm(h, norm2, EPS), wg_t, wu_t)  # (T, I): gate and up fused
        return matmul_bias_act(g, wd_t, residual=h).view(B, S, D)  # h + g Wd^T

    return block


def _prepare_triton_train(case: Case, inputs: Inputs):
    """Training: the same block on the Triton kernels that have a backward, each through
    torch.autograd.Function: RMSNorm (rmsnorm_bwd.py), the GEMMs (gemm_bwd.py), attention
    (flash_attention_bwd.py) and gelu*mul (geglu_bwd.py). The residual adds and the gate/up pair
    are separate here: the forward's fused epilogues have no backward of their own."""
    from kernels.triton.flash_attention_bwd import flash_attention_train
    from kernels.triton.geglu_bwd import geglu_train
    from kernels.triton.gemm_bwd import matmul_bias_train
    from kernels.triton.rmsnorm_bwd import rms_norm_train

    x = inputs["x"]
    B, S, D = x.shape
    H, T = case["H"], B * S
    norm1, norm2 = inputs["norm1"], inputs["norm2"]
    wqkv, wo, wg, wu, wd = (inputs[k] for k in ("w_qkv", "w_o", "w_gate", "w_up", "w_down"))

    def block():
        x2 = x.reshape(T, D)
        qkv = matmul_bias_train(rms_norm_train(x2, norm1, EPS), wqkv.t())  # (T, 3D)
        q, k, v = qkv.view(B, S, 3, H, D // H).permute(2, 0, 3, 1, 4)
        a = flash_attention_train(q, k, v, causal=True).transpose(1, 2).reshape(T, D)
        h = x2 + matmul_bias_train(a, wo.t())  # (T, D)
        n2 = rms_norm_train(h, norm2, EPS)
        g = geglu_train(matmul_bias_train(n2, wg.t()), matmul_bias_train(n2, wu.t()))  # (T, I)
        return (h + matmul_bias_train(g, wd.t())).view(B, S, D)

    return block


def _triton_gemms(case: Case) -> tuple[tuple[int, int, int], ...]:
    """The Triton variant's GEMMs in launch order: QKV, O, gate and up fused, down."""
    T, D, I = case["B"] * case["S"], case["D"], case["I"]
    return ((T, 3 * D, D), (T, D, D), (T, 2 * I, D), (T, D, I))


register_op(DecoderBlockOp())
register_variant(Variant(OP, "eager", "eager", eager_prepare(_parts),
                         description="nn.Module: F.rms_norm, nn.Linear QKV/O/MLP, SDPA (causal), "
                                     "residual adds, op by op"))
register_variant(Variant(OP, "compile", "compile", compile_prepare(_parts),
                         description="torch.compile of the eager module (default mode): norms, "
                                     "adds and gelu*mul fused around library GEMMs"))
register_variant(Variant(OP, "compile_reduce_overhead", "compile", _prepare_reduce_overhead,
                         supports=cuda_only, replays="compile",
                         description="torch.compile mode='reduce-overhead': the compiled block "
                                     "replayed as one CUDA graph"))
register_variant(Variant(OP, "triton", "triton", _prepare_triton,
                         supports=lambda case: triton_runtime.supports(
                             case, head_dim=("D/H", case["D"] // case["H"])),
                         gemm_shapes=_triton_gemms,
                         description="this project's Triton kernels: rms_norm, QKV GEMM, flash "
                                     "attention on strided views, GEMMs with residual epilogues, "
                                     "fused GeGLU GEMM; training: every kernel's backward "
                                     "(norm, GEMMs, flash attention, gelu*mul)",
                         prepare_train=_prepare_triton_train))
