"""The mlp suite: a bias-free GeGLU MLP over named axes T (tokens), D (model), I (hidden)."""
from kernels.mlp import GeGLUMLP
from suites.catalog import SuiteDef, axes_for

SUITE = SuiteDef(
    name="mlp",
    op="mlp",
    shape_key="axes",
    size_axis="T",
    expand=axes_for(GeGLUMLP.params),
    describe="GeGLU MLP down(gelu_tanh(x Wg^T) * (x Wu^T)): does fusing gelu*mul pay off?",
)
