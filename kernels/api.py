"""The public API for a block of your own: the same base classes and helpers the blocks in
kernels/ use. A block is a module on your PYTHONPATH that defines an Op and registers it with
its Variants; a suite YAML in your own config folder names it, and run_suite.py finds both:

    python run_suite.py suite=bias_relu hydra.searchpath=[file:///path/to/my_conf]

    # my_conf/suite/bias_relu.yaml           # my_ops.py (on PYTHONPATH)
    name: bias_relu                           class BiasRelu(Op): name = "bias_relu" ...
    op: my_ops:BiasRelu                       register_op(BiasRelu())
    sizes: [64, 256]                          register_variant(Variant("bias_relu", "eager",
    dtypes: [float32]                                                  "eager", prepare_eager))
    variants: all

The README's "Your own block" is a whole worked example (a test runs it from outside the repo).

What an Op declares (kernels/base.py has the details): `name` (the suite's name too),
`params` (named sizes, or categorical `choices`), `size_axis` (the x axis of its plots),
`flops_formula` and `bytes_formula` (Formula of the params and `itemsize`, printed in the
report), `make_inputs(case, generator)` (every tensor, weights included, drawn from the
generator: never zeros) and `reference(case, inputs)` (the exact answer in float64). Optional:
`baseline` (the variant speedups are against, "eager" by default), `describe`, `rung` (its place
on the ladder; 0: after the built-in blocks), `test_shape`, `shape_problem`, and
`from_trace(call)`: given one top-level op call of a model's trace (its `name`, `tensor_dims()`,
`dtype()`, `flag(i)` of its scalar inputs), the block's params where the block covers that call,
else None; `python -m suites.analyze TRACE --suggest` then maps those calls to the block and
sweeps them at the trace's shapes (docs/analyze.md).

What a Variant gives: `prepare(case, inputs) -> call`, a zero-argument callable returning the
output tensor; `family` (eager | library | compile | triton); optionally `supports(case)` (why
it cannot run a case, or None) and `scope()` (settings entered around all its calls).

The contract the harness keeps, per case and variant:
- `inputs` are final when `prepare` gets them: the correctness check, the timing rounds and the
  profile all use these tensors with these values. Set-up derived from them (a transposed or
  packed weight, a compiled graph) may be done in `prepare` and kept.
- The first call is timed on its own (`first_call_ms`: compilation, autotuning); warm-up calls
  follow; then one call is checked against `reference` in float64 (a wrong answer makes the row
  `incorrect`, with the error and the tolerance); only then is the call timed and profiled.
- Every call must compute: before the checked call, the previous call's output is overwritten
  with NaN, so a call that hands back a result computed once (in `prepare` or its first call)
  is `incorrect`, with that reason. An output buffer allocated in `prepare` and written by
  every call is fine.
"""
from kernels.base import Call, Case, Inputs, Op, Variant, always_supported, random_tensor
from kernels.compiled import compile_prepare, cuda_only, eager_prepare
from kernels.formula import Formula
from kernels.registry import register_op, register_variant

__all__ = ["Call", "Case", "Formula", "Inputs", "Op", "Variant", "always_supported",
           "compile_prepare", "cuda_only", "eager_prepare", "random_tensor", "register_op",
           "register_variant"]
