"""The attention suite: causal self-attention over named axes B, H, S, D (a grid per device)."""
from kernels.attention import Attention
from suites.catalog import axes_suite

SUITE = axes_suite(
    Attention, "S",
    "causal softmax(q k^T / sqrt(D)) v on (B, H, S, D): eager with the (S, S) scores in "
    "memory, torch.compile, the SDPA backends and a Triton flash kernel",
)
