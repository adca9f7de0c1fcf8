"""The block suite: a pre-norm decoder block (RMSNorm, causal attention, GeGLU MLP, residuals)
over named axes B (batch), S (sequence), D (model), H (heads), I (MLP hidden)."""
from kernels.block import DecoderBlockOp
from suites.catalog import axes_suite

SUITE = axes_suite(
    DecoderBlockOp, "S",
    "pre-norm decoder block x + attn(norm(x)), h + GeGLU(norm(h)): how much of a whole "
    "block do compile and hand-fused Triton kernels win back?",
)
