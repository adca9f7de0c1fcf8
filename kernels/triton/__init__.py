"""Hand-written Triton kernels (fused GEMM epilogues, GeGLU, RMSNorm, LayerNorm, flash
attention).

Import the submodules lazily: Triton may be missing (macOS, some CPU installs), and the
suite must still run its eager and compile variants there.
"""
