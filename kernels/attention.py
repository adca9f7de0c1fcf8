"""Causal self-attention: out = softmax(q k^T / sqrt(D) + causal mask) v, q/k/v (B, H, S, D).

The series' attention experiment: the textbook eager form materializes the (B, H, S, S) score
matrix, which five ops in a row write or read (matmul, scale, mask, softmax, matmul);
torch.compile fuses the middle three; SDPA's fused backends and the Triton flash kernel never
let the scores leave the chip. Which SDPA backend actually ran is read from the profile (the
`backend` column).
"""
from __future__ import annotations

import contextlib
import functools
import math
import re
import warnings

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

from kernels.base import DTYPES, Case, Inputs, Op, Variant, always_supported, random_tensor
from kernels.causal_reference import causal_attention
from kernels.compiled import compile_prepare, eager_prepare
from kernels.formula import Formula
from kernels.registry import register_op, register_variant
from kernels.triton import runtime as triton_runtime

OP = "attention"

# Passes over the (B, H, S, S) scores, in elements of the input dtype, each read or write one pass.
# A model of what each form moves, checked against the ops in its profile, not a measurement. The
# reads of the (S, S) bool mask (broadcast over B*H: at most one byte per score per masked_fill_,
# less while it stays in cache) are left out.
SCORE_PASSES = {
    # matmul writes (1); `* scale` reads + writes (2); out-of-place masked_fill runs as
    # aten::clone + aten::masked_fill_ (the profile shows both): copy read + write, fill read +
    # write (4); softmax reads + writes (2); the second matmul reads (1).
    "naive": 10,
    # The same without the clone: masked_fill_ reads + writes the scores in place.
    "naive_inplace": 8,
    # Inductor on CUDA: the bmm writes the scores (1), one fused Triton kernel does scale + mask +
    # softmax (read + write, 2), the second bmm reads (1); on CPU the profile shows the same split
    # (bmm, cpp_fused__softmax_masked_fill_mul, bmm). A model: a looped (non-persistent) softmax
    # over long rows reads the scores twice.
    "compile": 4,
    # Fused kernels: the scores live in registers / shared memory, never in DRAM. (They re-read
    # K and V once per query block, which the ideal bytes ignore.)
    "sdpa_flash": 0, "sdpa_efficient": 0, "sdpa_cudnn": 0, "triton_flash": 0,
    # sdpa (default) and sdpa_math are not modelled: the backend (or the math fallback's own
    # decomposition) decides what is materialized.
}


class Attention(Op):
    name = OP
    params = ("B", "H", "S", "D")
    baseline = "naive"
    size_axis = "S"
    rung = 40
    describe = ("causal softmax(q k^T / sqrt(D)) v on (B, H, S, D): eager with the (S, S) scores "
                "in memory, torch.compile, the SDPA backends and a Triton flash kernel")
    # Two (S, S, D) GEMMs per head at 2 FLOPs per multiply-add, halved: causal keeps the part on
    # or below the diagonal, the useful work. The unfused forms compute the full square (and
    # throw half away), so their achieved TFLOP/s reads low by design.
    flops_formula = Formula("4*B*H*S**2*D / 2")
    bytes_formula = Formula("4*B*H*S*D * itemsize")  # q, k, v read, out written
    # S = 37 is not a multiple of any block size; D = 16 is a head dim every fused backend
    # accepts (a multiple of 8).
    test_shape = {"B": 1, "H": 2, "S": 37, "D": 16}

    def make_inputs(self, case: Case, generator: torch.Generator) -> Inputs:
        shape = (case["B"], case["H"], case["S"], case["D"])
        # Unit normal q and k: scores q.k / sqrt(D) are O(1) for every D, so the softmax is
        # neither uniform nor one-hot and low-precision errors compare across shapes.
        return {name: random_tensor(shape, case, generator)  # (B, H, S, D)
                for name in ("q", "k", "v")}

    def reference(self, case: Case, inputs: Inputs) -> torch.Tensor:
        q, k, v = (inputs[name].double() for name in ("q", "k", "v"))  # (B, H, S, D)
        return causal_attention(q, k, v)  # a block of query rows at a time: it fits

    def bytes_moved(self, case: Case, variant: str) -> float | None:
        passes = SCORE_PASSES.get(variant)
        if passes is None:
            return None
        B, H, S = case["B"], case["H"], case["S"]
        return self.bytes_ideal(case) + passes * float(B * H * S * S) * case.torch_dtype.itemsize

    def bytes_unfused(self, case: Case) -> float:
        return self.bytes_moved(case, "naive")


def _naive_parts(case: Case, inputs: Inputs, inplace: bool = False):
    """The textbook eager attention; `compile` compiles exactly this function."""
    S = case["S"]
    scale = 1.0 / math.sqrt(case["D"])
    # Built once here, outside the timed call, as eager code builds it once per model.
    mask = torch.ones(S, S, dtype=torch.bool, device=case.device).triu(1)  # (S, S) key j > query i

    def attention(q, k, v, mask):  # (B, H, S, D) x 3, (S, S) bool
        scores = torch.matmul(q, k.transpose(-2, -1))  # (B, H, S, S)
        scores = scores * scale
        if inplace:
            scores.masked_fill_(mask, float("-inf"))
        else:
            scores = scores.masked_fill(mask, float("-inf"))  # a new tensor: clone, then fill
        probs = torch.softmax(scores, dim=-1)  # (B, H, S, S), in the input dtype, as in eager code
        return torch.matmul(probs, v)  # (B, H, S, D)

    return attention, (inputs["q"], inputs["k"], inputs["v"], mask)


# Variant name -> the backend it pins (None: let SDPA choose).
SDPA_BACKENDS = {
    "sdpa": None,
    "sdpa_math": SDPBackend.MATH,
    "sdpa_efficient": SDPBackend.EFFICIENT_ATTENTION,
    "sdpa_flash": SDPBackend.FLASH_ATTENTION,
    "sdpa_cudnn": SDPBackend.CUDNN_ATTENTION,
}


def _prepare_sdpa(case: Case, inputs: Inputs):
    q, k, v = inputs["q"], inputs["k"], inputs["v"]  # (B, H, S, D)
    return lambda: F.scaled_dot_product_attention(q, k, v, is_causal=True)


def _pinned(backend: SDPBackend | None):
    """The variant's scope: the harness enters it once around all of the variant's calls, so
    the backend is pinned without timing sdpa_kernel's ~10 us of Python on every call."""
    return (lambda: sdpa_kernel(backend)) if backend is not None else contextlib.nullcontext


# C++ warnings carry their source location: "... (Triggered internally at .../sdp_utils.cpp:773.)"
_TRIGGERED = re.compile(r"\s*\(Triggered internally at .*$")


@functools.lru_cache(maxsize=None)
def _probe(device: str, dtype: str, D: int, backend: SDPBackend) -> str | None:
    """Run `backend` once on tiny tensors; its error (and the warnings that explain it) or None.

    Whether a backend has a kernel depends on the device, its architecture, the dtype and the
    head dim, not on B, H or S, so one tiny call answers for every case that shares those.
    """
    x = torch.randn(1, 1, 16, D, device=device).to(DTYPES[dtype])  # (B=1, H=1, S=16, D)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")  # CUDA says *why* a backend was refused only in warnings
        try:
            with sdpa_kernel(backend):
                F.scaled_dot_product_attention(x, x, x, is_causal=True)
            return None
        except RuntimeError as exc:
            lines = str(exc).strip().splitlines()
            reason = f"SDPA {backend.name} has no kernel for {dtype}, D={D} on {device}: " + (
                lines[0] if lines else type(exc).__name__)
    why = [_TRIGGERED.sub("", str(w.message).strip().splitlines()[0]) for w in caught
           if str(w.message).strip()]
    why = [w for w in dict.fromkeys(why) if not w.endswith(":")]  # drop "... not used because:"
    return f"{reason} ({'; '.join(why)})" if why else reason  # whole: the console cuts it


def _sdpa_supports(backend: SDPBackend):
    def supports(case: Case) -> str | None:
        return _probe(case.device, case.dtype, case["D"], backend)

    return supports


def _prepare_triton(case: Case, inputs: Inputs):
    # Lazy: Triton may be missing. Checked here, once: a timed call only launches.
    from kernels.triton.flash_attention import prepare_flash_attention

    q, k, v = inputs["q"], inputs["k"], inputs["v"]  # (B, H, S, D)
    return prepare_flash_attention(q, k, v, causal=True)


def _prepare_triton_train(case: Case, inputs: Inputs):
    """Training: the Triton forward that also keeps each row's log-sum-exp, and the
    FlashAttention-2 backward (delta, dk/dv per key block, dq per query block: no atomics),
    through torch.autograd.Function (flash_attention_bwd.py)."""
    from kernels.triton.flash_attention_bwd import prepare_flash_attention_train

    q, k, v = inputs["q"], inputs["k"], inputs["v"]  # (B, H, S, D)
    return prepare_flash_attention_train(q, k, v, causal=True)


_SDPA_DESCRIPTIONS = {
    "sdpa": "F.scaled_dot_product_attention(is_causal=True): SDPA picks the backend "
            "(see the backend column)",
    "sdpa_math": "SDPA pinned to the math backend: the unfused reference decomposition in aten ops",
    "sdpa_efficient": "SDPA pinned to the memory-efficient (xFormers-style) fused kernel",
    "sdpa_flash": "SDPA pinned to the FlashAttention fused kernel (on CPU: its flash-style C++ "
                  "kernel)",
    "sdpa_cudnn": "SDPA pinned to the cuDNN fused attention kernel",
}

register_op(Attention())
register_variant(Variant(OP, "naive", "eager", eager_prepare(_naive_parts),
                         description="matmul, * scale, masked_fill (out of place), softmax, "
                                     "matmul: the (S, S) scores round-trip through memory"))
register_variant(Variant(OP, "naive_inplace", "eager",
                         eager_prepare(functools.partial(_naive_parts, inplace=True)),
                         description="naive with masked_fill_: one copy of the scores fewer"))
register_variant(Variant(OP, "compile", "compile", compile_prepare(_naive_parts),
                         description="torch.compile of naive (default mode): scale, mask and "
                                     "softmax fused into one kernel between the two GEMMs"))
for _name, _backend in SDPA_BACKENDS.items():
    register_variant(Variant(OP, _name, "library", _prepare_sdpa, scope=_pinned(_backend),
                             supports=_sdpa_supports(_backend) if _backend else always_supported,
                             description=_SDPA_DESCRIPTIONS[_name]))
register_variant(Variant(OP, "triton_flash", "triton", _prepare_triton,
                         supports=lambda c: triton_runtime.supports(c, head_dim=("D", c["D"])),
                         description="Triton FlashAttention-2-style forward: online softmax, "
                                     "causal tiles above the diagonal skipped; training: the "
                                     "FlashAttention-2 backward (dk/dv per key block, dq per "
                                     "query block)",
                         prepare_train=_prepare_triton_train))
