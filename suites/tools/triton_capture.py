"""The capture of Triton launches: every kernel of kernels/triton by name (`KERNELS`), and each
launch a call makes recorded instead of run (`_capture`), on meta tensors, with the launchers'
questions to the device answered for the target GPU (`_gpu_stand_ins`). The plans that use it:
triton_launches.py (the hand-picked launches and the compile jobs) and triton_suite_launches.py
(the suites' own calls, per case). See triton_launches.py's docstring for why launches are
captured rather than restated.

Import with TRITON_INTERPRET unset: under the interpreter the kernel modules carry their
interpreter configs and tiles, not the GPU's.
"""
from __future__ import annotations

import importlib
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from typing import NamedTuple

from suites.tools.triton_specialisation import kernel_parts, stand_ins

@dataclass(frozen=True)
class Kernel:
    module: str        # in kernels.triton
    attribute: str     # what its launchers launch: an Autotuner, or the JITFunction itself
    # A fixed (not autotuned) kernel's block-size constexprs: with its warps and stages, the
    # key of the one config its launcher picks.
    tiles: tuple = ()


# Every kernel, by the name the tool's rows and targets.UNFIT use.
KERNELS = {
    "gemm": Kernel("gemm", "_matmul_bias_act_kernel"),
    "geglu": Kernel("gemm_geglu", "_matmul_geglu_kernel"),  # the GEMM with the GeGLU epilogue
    "gemm_tma": Kernel("gemm_tma", "_matmul_tma_kernel"),
    "flash": Kernel("flash_attention", "_attn_fwd_launch"),
    "flash_bwd_delta": Kernel("flash_attention_bwd", "_attn_bwd_delta_kernel", ("BLOCK_M",)),
    "flash_bwd_dkdv": Kernel("flash_attention_bwd", "_attn_bwd_dkdv_kernel",
                             ("BLOCK_M", "BLOCK_N")),
    "flash_bwd_dq": Kernel("flash_attention_bwd", "_attn_bwd_dq_kernel", ("BLOCK_M", "BLOCK_N")),
    "column_sum": Kernel("gemm_bwd", "_column_sum_kernel", ("BLOCK_M", "BLOCK_N")),
    "geglu_fwd": Kernel("geglu", "_geglu_fwd_kernel", ("BLOCK_SIZE",)),  # elementwise
    "geglu_bwd": Kernel("geglu_bwd", "_geglu_bwd_kernel", ("BLOCK_SIZE",)),
    "layer_norm_fwd": Kernel("layernorm", "_layer_norm_fwd_kernel", ("BLOCK_SIZE",)),
    "layer_norm_fwd_train": Kernel("layernorm_bwd", "_layer_norm_fwd_train_kernel",
                                   ("BLOCK_SIZE",)),
    "layer_norm_bwd": Kernel("layernorm_bwd", "_layer_norm_bwd_kernel", ("BLOCK_SIZE",)),
    "rms_norm_fwd": Kernel("rmsnorm", "_rms_norm_fwd_kernel", ("BLOCK_SIZE",)),
    "rms_norm_fwd_train": Kernel("rmsnorm_bwd", "_rms_norm_fwd_train_kernel", ("BLOCK_SIZE",)),
    "rms_norm_bwd": Kernel("rmsnorm_bwd", "_rms_norm_bwd_kernel", ("BLOCK_SIZE",)),
    "sum_partials": Kernel("rowwise_bwd", "_sum_partials_kernel", ("BLOCK_B", "BLOCK_D")),
    "nop": Kernel("nop", "nop_kernel"),
}
# The autotuned kernels' config names (the rest of a launch's constexprs are its variant).
CONFIG_NAMES = ("BLOCK_SIZE_M", "BLOCK_SIZE_N", "BLOCK_SIZE_K", "GROUP_SIZE_M", "BLOCK_M",
                "BLOCK_N")
# What a launch may pass besides the kernel's parameters: the compile options.
LAUNCH_OPTIONS = ("num_warps", "num_stages")
# The GPUs each target stands for, by their SM count: the launchers that size a grid by it
# (gemm_bwd's column sum, the norms' backward) plan for this many.
SM_COUNT = {80: 108, 90: 132}  # A100; H100 SXM and H200


class Launch(NamedTuple):
    kernel: str    # a KERNELS name
    label: str     # which launch of the project: op, shape, layout, step
    named: dict    # every argument by name but an autotuned kernel's config (tensors: Pointers)
    options: dict  # the launch's num_warps / num_stages, where it passes them


def tuner(name: str):
    """The object a wrapper launches (an Autotuner, or a plain JITFunction)."""
    spec = KERNELS[name]
    return getattr(importlib.import_module(f"kernels.triton.{spec.module}"), spec.attribute)


def kernel_fn(name: str):
    return kernel_parts(tuner(name))[0]


def autotuned(name: str) -> bool:
    from triton.runtime.autotuner import Autotuner
    return isinstance(tuner(name), Autotuner)


def function_name(name: str) -> str:
    """The kernel's Python function, as `module.name` (what defined_kernels names it by)."""
    fn = kernel_fn(name).fn
    return f"{fn.__module__}.{fn.__name__}"


def config_names(name: str) -> tuple:
    """The constexprs that make a kernel's config rather than its variant."""
    return CONFIG_NAMES if autotuned(name) else KERNELS[name].tiles


# --- the capture --------------------------------------------------------------------------

class _Recorder:
    """Stands in for a kernel in its module: keeps each launch's arguments, launches nothing."""

    def __init__(self, name: str, kept: list):
        self.name, self.kept, self.fn = name, kept, kernel_fn(name)

    def __getitem__(self, grid):
        return self._keep

    def _keep(self, *args, **kwargs):
        options = {k: kwargs.pop(k) for k in LAUNCH_OPTIONS if k in kwargs}
        self.kept.append((self.name, {**dict(zip(self.fn.arg_names, args)), **kwargs}, options))
        return self  # a launch returns its CompiledKernel: nop.compiled_nop wants one


def _patched(stack: ExitStack, owner, attribute: str, value) -> None:
    saved = getattr(owner, attribute)
    setattr(owner, attribute, value)
    stack.callback(setattr, owner, attribute, saved)


@contextmanager
def _gpu_stand_ins(arch: int):
    """The launchers' questions to the device, answered for `arch`'s GPU: meta tensors may pass
    the wrappers' device check (they never reach a launch), the column sum's grid is planned for
    SM_COUNT[arch] SMs, the norms' backward splits its rows as on that GPU (split_rows asks
    for a CUDA device; it gets device 0, whose SM count is the stand-in's), and a variant that
    asks the compute capability (the TMA GEMM's needs sm_90) is told `arch`'s."""
    import torch
    from kernels.triton import gemm_bwd, layernorm_bwd, rmsnorm_bwd, rowwise_bwd, runtime

    split_rows = rowwise_bwd.split_rows

    def split_on_gpu(n_rows, device, rows_per_program=None):
        return split_rows(n_rows, torch.device("cuda", 0), rows_per_program)

    with ExitStack() as stack:
        _patched(stack, runtime, "_device_problem", lambda device_type, interpreted: None)
        _patched(stack, gemm_bwd, "_device_sms", lambda device: SM_COUNT[arch])
        _patched(stack, rowwise_bwd, "_sm_count", lambda index: SM_COUNT[arch])
        for module in (layernorm_bwd, rmsnorm_bwd):
            _patched(stack, module, "split_rows", split_on_gpu)
        _patched(stack, torch.cuda, "get_device_capability",
                 lambda device=None: divmod(arch, 10))
        yield


def _capture(label: str, call, steps: tuple | None, arch: int) -> list[Launch]:
    """The launches `call` makes, in order, with every KERNELS kernel recorded, not run.
    `steps`: (kernel, what) of each launch it must make; another sequence is an error (a
    launcher changed: the plan must follow it). None: whatever it launches, each labelled by
    its kernel (a suite's own call)."""
    kept: list = []
    with ExitStack() as stack, _gpu_stand_ins(arch):
        for name, spec in KERNELS.items():
            module = importlib.import_module(f"kernels.triton.{spec.module}")
            _patched(stack, module, spec.attribute, _Recorder(name, kept))
        call()
    made = tuple(kernel for kernel, _, _ in kept)
    if steps is None:
        steps = tuple((kernel, kernel) for kernel in made)
    if made != tuple(kernel for kernel, _ in steps):
        raise RuntimeError(f"{label}: the launcher launched {made}, the plan expects "
                           f"{tuple(kernel for kernel, _ in steps)}")
    return [Launch(kernel, f"{label}{': ' + what if what else ''}", stand_ins(named), options)
            for (kernel, named, options), (_, what) in zip(kept, steps)]


def _meta(*shape, dtype: str, transposed: bool = False, grad: bool = False):
    """A fresh tensor of `shape` (or the .t() view of one stored transposed), no memory;
    `grad`: a leaf that requires grad, as the harness makes every input of a training step."""
    import torch
    stored = shape[::-1] if transposed else shape
    t = torch.empty(stored, dtype=getattr(torch, dtype), device="meta", requires_grad=grad)
    return t.t() if transposed else t


def _train_step(forward):
    """forward() and its backward, as the harness runs a training step
    (suites/harness/training.py): the output's gradient a fresh contiguous tensor."""
    import torch
    out = forward()
    torch.autograd.backward(out, torch.empty(out.shape, dtype=out.dtype, device=out.device))
