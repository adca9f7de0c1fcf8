"""The linear suite: nn.Linear(IN, OUT) on x (T, IN), over named axes T, IN, OUT."""
from kernels.linear import Linear
from suites.catalog import SuiteDef, axes_for

SUITE = SuiteDef(
    name="linear",
    op="linear",
    shape_key="axes",
    size_axis="T",
    expand=axes_for(Linear.params),
    describe="nn.Linear(IN, OUT, bias=True) on x (T, IN): the bias add fused into the GEMM",
)
