"""The linear suite: nn.Linear(IN, OUT) on x (T, IN), over named axes T, IN, OUT."""
from kernels.linear import Linear
from suites.catalog import axes_suite

SUITE = axes_suite(
    Linear, "T",
    "nn.Linear(IN, OUT, bias=True) on x (T, IN): the bias add fused into the GEMM",
)
