"""What Triton's JIT compiles for one launch, worked out from the launch's argument values alone,
without a GPU: the specialisation mirror that `triton_targets` compiles each kernel with.

What Triton compiles for a launch depends on the argument values, not only on their types
(runtime/jit.py's binder, the C++ specialize_impl and the backend's parse_attr): an integer
equal to 1 becomes the constant 1 (a unit stride folds away, so loads along it are known
contiguous and can be vectorised and copied asynchronously into multi-buffered shared memory),
an integer or a tensor address that is a multiple of 16 gets `tt.divisibility = 16` (aligned
vector accesses), and an integer's type is the smallest of i32 / i64 / u64 that holds it. A
kernel compiled without these is another kernel: gemm bf16 128x256x64 with 3 stages needs
49,152 B of shared memory and spills 4.7 KB without them, 147,456 B and no spill as the suites
launch it.

The mirror (`_signature`) reads only public facts of the kernel (its parameters) and the
values, so a planned launch can be pickled to a compile worker as plain data (`Job`, with
tensors as `Pointer` stand-ins). `runtime_specialisation` runs Triton's own binder, a private
API of the installed triton, on the same values; `mirror_problems` compares the two on every
launch the tools plan (tests/test_triton_targets.py), so a Triton upgrade that specialises
differently fails there rather than silently compiling other kernels than the GPU runs.

Used by suites/tools/triton_targets.py (the ahead-of-time compile), triton_launches.py (the
launches it compiles) and gpu_check_configs.py (which specialisation a GPU call compiles to).
"""
from __future__ import annotations

from dataclasses import dataclass

DTYPES = {"bfloat16": "bf16", "float16": "fp16", "float32": "fp32"}
DIVISIBILITY = 16  # the one divisibility the runtime marks
_INT_TYPES = (("i32", -2 ** 31, 2 ** 31 - 1), ("i64", -2 ** 63, 2 ** 63 - 1),
              ("u64", 0, 2 ** 64 - 1))


@dataclass(frozen=True)
class Pointer:
    """A tensor argument as Triton's runtime specialises it: its element type and address."""
    dtype: str    # torch's name: bfloat16, float32
    address: int


@dataclass(frozen=True)
class Job:
    """One compile: a kernel of triton_launches.KERNELS, for one dtype and target, with one
    config, and every argument as one launch of the project passes it. Plain, picklable data:
    it travels to the compile workers."""
    kernel: str        # a triton_launches.KERNELS name: gemm, flash, layer_norm_bwd...
    dtype: str         # the launch's dtype: bfloat16, float32
    arch: int          # 80, 90
    config: tuple      # the config's key (triton_launches.config_key)
    constants: tuple   # every constexpr of the launch, (name, value) pairs
    num_warps: int
    num_stages: int
    args: tuple = ()   # the other arguments as the wrapper passes them, (name, value) pairs
    launch: str = ""   # which launch of the project these arguments are (op, shape, layout)

    @property
    def named(self) -> dict:
        """Every parameter's value by name, constexprs included."""
        return {**dict(self.args), **dict(self.constants)}


def kernel_parts(wrapped) -> tuple:
    """(the JITFunction, or the InterpretedFunction under TRITON_INTERPRET=1; its heuristics:
    name -> function of the named arguments) under an Autotuner -> Heuristics -> JITFunction
    chain."""
    from triton.runtime.autotuner import Heuristics
    from triton.runtime.interpreter import InterpretedFunction
    from triton.runtime.jit import JITFunction
    heuristics = {}
    while not isinstance(wrapped, (JITFunction, InterpretedFunction)):
        if isinstance(wrapped, Heuristics):
            heuristics.update(wrapped.values)
        wrapped = wrapped.fn
    return wrapped, heuristics


def params(fn) -> list:
    """The kernel's parameters as the JIT reads them (KernelParam: name, is_constexpr,
    do_not_specialize...). An InterpretedFunction keeps none: made from its signature, as a
    JITFunction without do_not_specialize makes them (the planning of gpu_check's CPU test)."""
    if hasattr(fn, "params"):
        return fn.params
    import inspect
    from triton.runtime.jit import KernelParam
    return [KernelParam(i, p, False, False)
            for i, p in enumerate(inspect.signature(fn.fn).parameters.values())]


def _short_dtype(dtype) -> str:
    name = str(dtype).removeprefix("torch.")
    return DTYPES.get(name, name)


def _specialise_value(value, specialise: bool, align: bool) -> tuple[str, object]:
    """(type, key) of one non-constexpr argument: key "D" (divisible by 16) or "" for integers
    and pointers, the value itself for a constant, None when not specialised."""
    if value is None:
        return "constexpr", None
    if isinstance(value, bool):  # before int: a bool is an int in Python
        return "u1", None
    if isinstance(value, int):
        if specialise and value == 1:
            return "constexpr", 1
        kind = next(name for name, low, high in _INT_TYPES if low <= value <= high)
        return kind, (("D" if align and value % DIVISIBILITY == 0 else "") if specialise else None)
    if isinstance(value, float):
        return "fp32", None
    if isinstance(value, Pointer):
        dtype, address = value.dtype, value.address
    else:  # a tensor
        dtype, address = value.dtype, value.data_ptr()
    key = ("D" if align and address % DIVISIBILITY == 0 else "") if specialise else None
    return f"*{_short_dtype(dtype)}", key


def _signature(fn, named: dict) -> tuple[dict, dict, dict]:
    """(signature, constexprs, attrs) that Triton's runtime compiles `fn` with when it is
    launched with these arguments: `named` holds every parameter by name, constexprs included
    (tensors, or Pointer stand-ins)."""
    signature, constexprs, attrs = {}, {}, {}
    for index, param in enumerate(params(fn)):
        if param.is_constexpr:
            signature[param.name], constexprs[(index,)] = "constexpr", named[param.name]
            attrs[(index,)] = []
            continue
        if param.annotation:  # typed parameters are specialised otherwise: not modelled here
            raise NotImplementedError(f"{fn.__name__}: annotated parameter {param.name}")
        kind, key = _specialise_value(named[param.name], not param.do_not_specialize,
                                      not param.do_not_specialize_on_alignment)
        signature[param.name] = kind
        if kind == "constexpr":
            constexprs[(index,)], attrs[(index,)] = key, []
        elif isinstance(key, str):
            attrs[(index,)] = [["tt.divisibility", DIVISIBILITY]] if key == "D" else []
    return signature, constexprs, attrs


def specialisation_key(fn, named: dict) -> tuple:
    """What tells two launches of `fn` apart for the compiler, as a hashable: each parameter's
    type, constant value, or divisibility by 16."""
    signature, constexprs, attrs = _signature(fn, named)
    out = []
    for index, name in enumerate(fn.arg_names):
        value = constexprs.get((index,), bool(attrs.get((index,))))
        out.append((name, signature[name], value))
    return tuple(out)


def runtime_specialisation(fn, job: Job) -> tuple[dict, dict, dict]:
    """(signature, constexprs, attrs) by Triton's own launch path for the job's arguments to
    `fn` (the job's JITFunction): the binder JITFunction.run calls on every launch
    (runtime/jit.py) and its _pack_args, with the CUDA backend of the job's target, on meta
    tensors at the job's addresses. The installed triton's private API: only to check
    _signature against (mirror_problems)."""
    from triton.backends.compiler import GPUTarget
    from triton.compiler import make_backend
    from triton.runtime.jit import create_function_from_signature

    backend = make_backend(GPUTarget("cuda", job.arch, 32))
    binder = create_function_from_signature(fn.signature, fn.params, backend)
    named = job.named
    values = [_tensor_at(v) if isinstance(v, Pointer) else v
              for v in (named[name] for name in fn.arg_names)]
    options = {"num_warps": job.num_warps, "num_stages": job.num_stages}
    bound, specialization, parsed = binder(*values, **options)
    _, signature, constexprs, attrs = fn._pack_args(backend, options, bound, specialization,
                                                    parsed)
    return signature, constexprs, attrs


def _tensor_at(pointer: Pointer):
    """A meta tensor (no memory) of the pointer's dtype whose data_ptr() is its address."""
    import torch
    dtype = getattr(torch, pointer.dtype)
    offset = pointer.address // dtype.itemsize
    return torch.empty(offset + 1, dtype=dtype, device="meta")[offset:]


def mirror_problems(checked: list[Job], kernel_fn) -> list[str]:
    """Jobs whose _signature differs from what the runtime's own path makes of their arguments;
    `kernel_fn`: a job's kernel name -> its JITFunction."""
    out = []
    for job in checked:
        fn = kernel_fn(job.kernel)
        if _signature(fn, job.named) != runtime_specialisation(fn, job):
            out.append(f"{job.kernel} {job.dtype} [{' '.join(map(str, job.config))}] "
                       f"({job.launch}): _signature is not the runtime's specialisation")
    return out


def stand_ins(named: dict) -> dict:
    """The arguments with each tensor as a Pointer (picklable, hashable, holds no memory):
    its dtype, and its address modulo 16, all of it the runtime specialises on."""
    import torch
    return {k: Pointer(str(v.dtype).removeprefix("torch."), v.data_ptr() % DIVISIBILITY)
            if isinstance(v, torch.Tensor) else v for k, v in named.items()}
