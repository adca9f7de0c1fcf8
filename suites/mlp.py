"""The mlp suite: a bias-free GeGLU MLP over named axes T (tokens), D (model), I (hidden)."""
from kernels.mlp import GeGLUMLP
from suites.catalog import axes_suite

SUITE = axes_suite(
    GeGLUMLP, "T",
    "GeGLU MLP down(gelu_tanh(x Wg^T) * (x Wu^T)): does fusing gelu*mul pay off?",
)
