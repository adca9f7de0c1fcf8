"""The launch floor: what a call costs when its work is nothing, through each launch path the
other suites use. A call makes L launches (the size axis), so time per call / L is the floor of
one launch, and the slope of a path's time over L is that floor without what a call adds once:

    eager          x.add_(1) on a one-element tensor, L times: the dispatcher's floor
    compile        torch.compile of that function, called L times: guards, the compiled
                   graph's wrapper and its one kernel
    compile_guard  torch.compile of a function returning its input, L times: no graph at all,
                   Dynamo's frame and guard check alone (the guard floor)
    triton_jit     an empty Triton kernel through the JIT's dispatch, L launches (CUDA)
    triton_handle  the same kernel through its CompiledKernel's launcher (CUDA)
    triton_driver  the same kernel by cuLaunchKernel, through ctypes (CUDA)
    cuda_graph     one replay of a CUDA graph of L launches of it: per node, time / L (CUDA)

L is a case axis rather than one graph variant per node count: every path then has its
per-launch floor at 1, 10 and 100 launches, each graph size is a case like any other (its id,
plot and interval), and the graph's per-node cost reads against the others' per-launch cost at
the same L. On a CPU the eager and compile floors run; the Triton paths need compiled kernels,
so they are skipped rows with the reason. The floors are inference-only: a training mode would
time autograd's recording, which is no launch path.

The calls compute nothing worth checking: each returns x as the call leaves it (the eager and
compiled adds change it in place), and the reference is x itself in float64, so the check sees
that the right tensor comes back and the harness leaves it alone (an output that is an input is
never overwritten with NaN: correctness.py).
"""
from __future__ import annotations

import functools

import torch

from kernels.base import Case, Inputs, Op, Variant, random_tensor
from kernels.compiled import compile_prepare, eager_prepare
from kernels.formula import Formula
from kernels.registry import register_op, register_variant
from kernels.triton import runtime as triton_runtime

OP = "launch"


class Launch(Op):
    name = OP
    params = ("L",)
    size_axis = "L"
    rung = 70  # after the blocks: not a rung of the ladder but the floor its rungs stand on
    describe = ("the launch floor: L launches of (almost) nothing per call through each path the "
                "other suites use (eager dispatch, torch.compile, Triton's JIT, its compiled "
                "handle, the driver, a CUDA graph)")
    flops_formula = Formula("L")  # one add per launch (eager, compile); the Triton kernel: none
    bytes_formula = Formula("2*L*itemsize")  # the element read and written by each add
    test_shape = {"L": 3}

    def make_inputs(self, case: Case, generator: torch.Generator) -> Inputs:
        return {"x": random_tensor((1,), case, generator)}  # (1,): the floor is at one element

    def reference(self, case: Case, inputs: Inputs) -> torch.Tensor:
        return inputs["x"].double()  # x as the call left it (module docstring)


def _inference_only(case: Case) -> str | None:
    if case.trains:
        return (f"mode {case.mode}: the launch floors are timed under no_grad only (a training "
                "mode would time autograd's recording, which is no launch path)")
    return None


def _add_one(x):
    return x.add_(1)


def _identity(x):
    return x


def _parts(fn):
    return lambda case, inputs: (fn, (inputs["x"],))


def _repeated(prepare):
    """The prepare whose call makes the case's L calls of the one `prepare` gives, returning the
    last one's output."""

    def repeated(case: Case, inputs: Inputs):
        once, launches = prepare(case, inputs), range(case["L"])

        def call():
            for _ in launches:
                out = once()
            return out

        return call

    return repeated


def _launches(make):
    """A prepare for a Triton launch path: `make(x)` gives one launch, made L times a call;
    the call returns x. Lazy import: Triton may be missing."""

    def prepare(case: Case, inputs: Inputs):
        from kernels.triton import nop

        x = inputs["x"]
        launch, launches = make(nop)(x), range(case["L"])

        def call():
            for _ in launches:
                launch()
            return x

        return call

    return prepare


def _prepare_graph(case: Case, inputs: Inputs):
    from kernels.triton import nop  # lazy: Triton may be missing

    x = inputs["x"]
    replay = nop.graph_replay(x, case["L"])

    def call():
        replay()
        return x

    return call


def _supports_compiled_triton(case: Case) -> str | None:
    """A compiled Triton kernel on a GPU: its launch paths do not exist on a CPU, where Triton
    only interprets (an interpreted launch is a Python loop, no launch)."""
    problem = _inference_only(case)
    if problem is None and case.device_type != "cuda":
        problem = ("a launch path of a compiled Triton kernel: needs a CUDA GPU (on a CPU Triton "
                   "only interprets, which launches nothing)")
    if problem is None and not triton_runtime.triton_installed():
        problem = "triton is not installed"
    if problem is None and triton_runtime.kernels_interpreted():
        problem = "TRITON_INTERPRET=1 is set: the kernel is interpreted, no launch path to time"
    return problem


@functools.lru_cache(maxsize=None)
def _handle_problem(device: str) -> str | None:
    """Asked of the kernel compiled once per device: whether its handle has the launcher's parts."""
    from kernels.triton import nop  # lazy: Triton may be missing

    return nop.handle_problem(nop.compiled_nop(torch.zeros(1, device=device)))


def _supports_handle(case: Case) -> str | None:
    """As the JIT path, and this Triton's CompiledKernel must expose its launcher's parts."""
    return _supports_compiled_triton(case) or _handle_problem(case.device)


def _supports_driver(case: Case) -> str | None:
    problem = _supports_handle(case)
    if problem is None:
        from kernels.triton import nop

        problem = nop.driver_problem()
    return problem


register_op(Launch())
register_variant(Variant(OP, "eager", "eager", _repeated(eager_prepare(_parts(_add_one))),
                         supports=_inference_only,
                         description="x.add_(1) on a one-element tensor, L times: the "
                                     "dispatcher's floor"))
register_variant(Variant(OP, "compile", "compile", _repeated(compile_prepare(_parts(_add_one))),
                         supports=_inference_only,
                         description="torch.compile of x.add_(1), called L times: guards, the "
                                     "compiled graph's wrapper and its one kernel"))
register_variant(Variant(OP, "compile_guard", "compile",
                         _repeated(compile_prepare(_parts(_identity))), supports=_inference_only,
                         description="torch.compile of a function returning its input, called "
                                     "L times: no graph, Dynamo's frame and guard check alone"))
register_variant(Variant(OP, "triton_jit", "triton", _launches(lambda nop: nop.jit_launch),
                         supports=_supports_compiled_triton,
                         description="an empty Triton kernel through the JIT's dispatch "
                                     "(kernel[grid](x)), L launches (CUDA)"))
register_variant(Variant(OP, "triton_handle", "triton", _launches(lambda nop: nop.handle_launch),
                         supports=_supports_handle,
                         description="the empty kernel through its CompiledKernel's launcher, "
                                     "arguments bound once: no binding, no cache lookup (CUDA)"))
register_variant(Variant(OP, "triton_driver", "triton", _launches(lambda nop: nop.driver_launch),
                         supports=_supports_driver,
                         description="the empty kernel by cuLaunchKernel through ctypes: no "
                                     "Triton in the path (CUDA)"))
register_variant(Variant(OP, "cuda_graph", "triton", _prepare_graph,
                         supports=_supports_compiled_triton,
                         description="one replay of a CUDA graph of L empty-kernel launches: "
                                     "per node, time / L; its profile may miss the graph's "
                                     "kernels, the timing is the result (CUDA)"))
