"""The attention suite: causal self-attention over named axes B, H, S, D (a grid per device)."""
from kernels.attention import Attention
from suites.catalog import SuiteDef, axes_for

SUITE = SuiteDef(
    name="attention",
    op="attention",
    shape_key="axes",
    size_axis="S",
    expand=axes_for(Attention.params),
    describe="causal softmax(q k^T / sqrt(D)) v on (B, H, S, D): eager with the (S, S) scores in "
             "memory, torch.compile, the SDPA backends and a Triton flash kernel",
)
