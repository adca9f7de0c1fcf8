"""Every Triton kernel and autotune config of this project compiled ahead of time for sm_80
(A100) and sm_90 (H100/H200), on a machine with no GPU, with the ptxas that ships in the triton
wheel; each compile's shared memory from Triton, and registers and spills from `ptxas -v`.
The Hopper TMA GEMM (gemm_tma.py) is compiled for sm_90 only: its variant skips older GPUs.
Each kernel is compiled as it runs: with the arguments its wrapper passes at the suites' shapes,
specialised as Triton's runtime specialises them (unit strides as constants, 16-divisibility),
which the tool checks against the runtime's own binder on every launch it plans.

    python -m suites.tools.triton_targets [--jobs 2] [--json out.jsonl]

A config fails its target when it needs more shared memory than the target has, or spills
registers to local memory (slow: every spill is a round trip through L1/L2). Each failing
config must be one the kernel's own pruning drops on that target (kernels/triton/targets.py);
and the pruning must not drop a config that compiles clean. The flash-attention pruning's own
shared-memory estimate is compared with the compiler's. `tests/test_triton_targets.py` runs
this in CI. Kernel modules are imported here without TRITON_INTERPRET, so they carry their GPU
config lists (run it in a process of its own).
"""
from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor
from dataclasses import asdict, dataclass
from pathlib import Path

DTYPES = {"bfloat16": "bf16", "float16": "fp16", "float32": "fp32"}
ARCHS = (80, 90)


@dataclass(frozen=True)
class Pointer:
    """A tensor argument as Triton's runtime specialises it: its element type and address."""
    dtype: str    # torch's name: bfloat16, float32
    address: int


@dataclass(frozen=True)
class Job:
    kernel: str        # gemm, geglu, flash, gemm_tma
    dtype: str         # bfloat16, float32
    arch: int          # 80, 90
    config: tuple      # the config's key (targets.config_key)
    constants: tuple   # every constexpr of the launch, (name, value) pairs
    num_warps: int
    num_stages: int
    args: tuple = ()   # the other arguments as the wrapper passes them, (name, value) pairs
    launch: str = ""   # which launch of the project these arguments are (op, shape, layout)


@dataclass
class Result:
    kernel: str
    dtype: str
    arch: int
    config: str
    variant: str       # the other constexprs, e.g. bias / residual
    shared: int | None  # bytes, from Triton's metadata
    registers: int | None
    spill_bytes: int | None  # spill stores + spill loads, from ptxas -v
    error: str = ""
    kept: bool = True  # the kernel's pruning keeps this config on this target
    estimate: int | None = None  # the pruning's shared-memory estimate (flash)
    seconds: float = 0.0
    launch: str = ""


def _ptxas() -> Path:
    import triton
    return Path(triton.__file__).parent / "backends" / "nvidia" / "bin" / "ptxas"


def _tuner(name: str):
    """The object a wrapper launches (an Autotuner, or a plain JITFunction)."""
    from kernels.triton import flash_attention, gemm, gemm_geglu, gemm_tma
    return {"gemm": gemm._matmul_bias_act_kernel, "geglu": gemm_geglu._matmul_geglu_kernel,
            "flash": flash_attention._attn_fwd_kernel,
            "gemm_tma": gemm_tma._matmul_tma_kernel}[name]


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


def _kernel_fn(name: str):
    return kernel_parts(_tuner(name))[0]


# --- the run-time specialisation ------------------------------------------------------------
# What Triton's JIT compiles for one launch depends on the argument values, not only on their
# types (runtime/jit.py's binder, the C++ specialize_impl and the backend's parse_attr): an
# integer equal to 1 becomes the constant 1 (a unit stride folds away, so loads along it are
# known contiguous and can be vectorised and copied asynchronously into multi-buffered shared
# memory), an integer or a tensor address that is a multiple of 16 gets `tt.divisibility = 16`
# (aligned vector accesses), and an integer's type is the smallest of i32 / i64 / u64 that
# holds it. A kernel compiled without these is another kernel: gemm bf16 128x256x64 with 3
# stages needs 49,152 B of shared memory and spills 4.7 KB without them, 147,456 B and no
# spill as the suites launch it. tests/test_triton_targets.py checks this mirror against the
# runtime's own binder on every planned launch.

DIVISIBILITY = 16  # the one divisibility the runtime marks
_INT_TYPES = (("i32", -2 ** 31, 2 ** 31 - 1), ("i64", -2 ** 63, 2 ** 63 - 1),
              ("u64", 0, 2 ** 64 - 1))


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


def runtime_specialisation(job: Job) -> tuple[dict, dict, dict]:
    """(signature, constexprs, attrs) by Triton's own launch path for the job's arguments: the
    binder JITFunction.run calls on every launch (runtime/jit.py) and its _pack_args, with the
    CUDA backend of the job's target, on meta tensors at the job's addresses. The installed
    triton's private API: only to check _signature against (mirror_problems)."""
    from triton.backends.compiler import GPUTarget
    from triton.compiler import make_backend
    from triton.runtime.jit import create_function_from_signature

    fn = _kernel_fn(job.kernel)
    backend = make_backend(GPUTarget("cuda", job.arch, 32))
    binder = create_function_from_signature(fn.signature, fn.params, backend)
    named = {**dict(job.args), **dict(job.constants)}
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


def mirror_problems(checked: list[Job]) -> list[str]:
    """Jobs whose _signature differs from what the runtime's own path makes of their arguments."""
    out = []
    for job in checked:
        fn = _kernel_fn(job.kernel)
        if _signature(fn, {**dict(job.args), **dict(job.constants)}) != \
                runtime_specialisation(job):
            out.append(f"{job.kernel} {job.dtype} [{' '.join(map(str, job.config))}] "
                       f"({job.launch}): _signature is not the runtime's specialisation")
    return out


def odd_jobs(dtypes=("bfloat16", "float32")) -> list[Job]:
    """One job per odd launch and dtype (its kernel's first config, sm_90): for mirror_problems."""
    return [_job(kernel, dtype, 90, _configs(kernel)[0], named, label)[0]
            for dtype in dtypes for kernel, label, named in odd_launches(dtype)]


def compile_one(job: Job) -> Result:
    """One kernel, config and target: Triton's compile to PTX (and its cubin), then ptxas -v."""
    started = time.perf_counter()
    result = Result(job.kernel, job.dtype, job.arch, " ".join(map(str, job.config)),
                    variant_text(job), None, None, None, launch=job.launch)
    try:
        compiled = compile_job(job)
        result.shared = int(compiled.metadata.shared)
        result.registers, result.spill_bytes = _ptxas_usage(compiled.asm["ptx"], job.arch)
    except Exception as exc:  # out of resources, or a compiler error: the row says which
        text = str(exc).strip().splitlines()
        result.error = f"{type(exc).__name__}: {text[0][:300] if text else ''}"
    result.seconds = round(time.perf_counter() - started, 2)
    return result


def compile_job(job: Job):
    """Triton's compile of the job's kernel for its target, specialised as the runtime would."""
    import triton
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource

    fn = _kernel_fn(job.kernel)
    signature, constexprs, attrs = _signature(fn, {**dict(job.args), **dict(job.constants)})
    return triton.compile(ASTSource(fn, signature, constexprs, attrs),
                          target=GPUTarget("cuda", job.arch, 32),
                          options={"num_warps": job.num_warps, "num_stages": job.num_stages})


def variant_text(job: Job) -> str:
    """The launch's constexprs but the config's, e.g. `EVEN_K=True, HAS_BIAS=True, ...`."""
    return ", ".join(f"{k}={v}" for k, v in job.constants if k not in CONFIG_NAMES)


def _ptxas_usage(ptx: str, arch: int) -> tuple[int, int]:
    """(registers, spill store + load bytes) of the kernel, as `ptxas -v` reports them."""
    gpu = f"sm_{arch}a" if arch >= 90 else f"sm_{arch}"
    with tempfile.TemporaryDirectory() as tmp:
        source = Path(tmp) / "kernel.ptx"
        source.write_text(ptx)
        done = subprocess.run([str(_ptxas()), "-v", f"--gpu-name={gpu}", str(source),
                               "-o", str(Path(tmp) / "kernel.cubin")],
                              capture_output=True, text=True, check=True)
    log = done.stdout + done.stderr
    registers = int(re.search(r"Used (\d+) registers", log).group(1))
    spills = sum(int(n) for n in re.findall(r"(\d+) bytes spill (?:stores|loads)", log))
    return registers, spills


# --- what to compile: the project's launches --------------------------------------------------

CONFIG_NAMES = ("BLOCK_SIZE_M", "BLOCK_SIZE_N", "BLOCK_SIZE_K", "GROUP_SIZE_M", "BLOCK_M",
                "BLOCK_N")
# Each kernel is compiled with the arguments one of the project's launches gives it, captured
# from the kernel's own wrapper: the constexprs it passes (epilogue, dot flags), the heuristics'
# (EVEN_K), and every other argument's value as the runtime specialises it (unit strides,
# 16-divisible sizes and strides, aligned addresses). The shapes are the suites' kind: every
# size a multiple of 16, whole tensors (as fresh allocations, 16-byte aligned).
SIZE = 1024       # M and N, and K where it is a multiple of every block depth (EVEN_K)
MASKED_K = 1040   # 16 x 65: a multiple of 16 (as linear's IN=32 is) but of no block depth
# The GEMM launches, each with the plain K loop and the masked one: matmul_add (bias, B
# row-major), linear (bias, an nn.Linear weight.t() view) and the block's projections (the
# residual epilogue, weight.t()). The pruning's groups take them together (targets.UNFIT).
GEMM_LAUNCHES = (("matmul_add", "bias", False), ("linear", "bias", True),
                 ("block", "residual", True))
HEAD_DIMS = (64, 128)  # the CUDA grids' attention head sizes
# The TMA GEMM runs on sm_90 only (matmul_add's triton_tma variant skips older GPUs), with the
# bias epilogue; B row-major (matmul_add's w) and as a weight.t() view.
TMA_ARCHS = (90,)
B_KMAJOR = (False, True)
SEQ_LEN = 8192         # long enough that no config is dropped for being taller than S


class _Recorder:
    """Stands in for a kernel in its wrapper's module: keeps the one launch's arguments."""

    def __getitem__(self, grid):
        return self._keep

    def _keep(self, *args, **kwargs):
        self.args, self.kwargs = args, kwargs


def _captured(module, attribute: str, call) -> dict:
    """Every argument, by name, that `call` (a wrapper's prepare and call, on meta tensors:
    shapes, strides and addresses, no memory) launches `module.<attribute>` with. The
    wrappers refuse tensors off CUDA; meta ones are let through here, and the launch itself
    never happens."""
    from kernels.triton import runtime
    kernel, recorder, problem = getattr(module, attribute), _Recorder(), runtime._device_problem
    setattr(module, attribute, recorder)
    runtime._device_problem = lambda device_type, interpreted: None
    try:
        call()
    finally:
        setattr(module, attribute, kernel)
        runtime._device_problem = problem
    fn = kernel_parts(kernel)[0]
    return {**dict(zip(fn.arg_names, recorder.args)), **recorder.kwargs}


def _meta(*shape, dtype: str, transposed: bool = False):
    """A fresh tensor of `shape` (or the .t() view of one stored transposed), no memory."""
    import torch
    if transposed:
        return torch.empty(shape[::-1], dtype=getattr(torch, dtype), device="meta").t()
    return torch.empty(shape, dtype=getattr(torch, dtype), device="meta")


def _gemm_call(dtype: str, shape: tuple, epilogue: str, kmajor: bool):
    from kernels.triton import gemm
    M, N, K = shape
    a, b = _meta(M, K, dtype=dtype), _meta(K, N, dtype=dtype, transposed=kmajor)
    bias = _meta(N, dtype=dtype) if epilogue == "bias" else None
    residual = _meta(M, N, dtype=dtype) if epilogue == "residual" else None
    return gemm, "_matmul_bias_act_kernel", \
        lambda: gemm.prepare_matmul_bias_act(a, b, bias, residual=residual)()


def _geglu_call(dtype: str, shape: tuple):
    from kernels.triton import gemm_geglu
    M, N, K = shape
    x = _meta(M, K, dtype=dtype)
    w_gate, w_up = (_meta(K, N, dtype=dtype, transposed=True) for _ in range(2))
    return gemm_geglu, "_matmul_geglu_kernel", \
        lambda: gemm_geglu.prepare_matmul_geglu(x, w_gate, w_up)()


def _tma_call(dtype: str, shape: tuple, kmajor: bool):
    from kernels.triton import gemm_tma
    M, N, K = shape
    a, b = _meta(M, K, dtype=dtype), _meta(K, N, dtype=dtype, transposed=kmajor)
    return gemm_tma, "_matmul_tma_kernel", \
        lambda: gemm_tma.prepare_matmul_bias_act_tma(a, b, _meta(N, dtype=dtype))()


def _flash_call(dtype: str, shape: tuple):
    from kernels.triton import flash_attention
    q, k, v = (_meta(*shape, dtype=dtype) for _ in range(3))
    return flash_attention, "_attn_fwd_launch", \
        lambda: flash_attention.prepare_flash_attention(q, k, v, causal=True)()


def launches(dtype: str, arch: int) -> list[tuple[str, str, dict]]:
    """(kernel, launch label, every argument by name but the config's) of each launch planned
    for `dtype` on `arch`; tensors as Pointer stand-ins (picklable, no memory)."""
    planned = []
    for K in (SIZE, MASKED_K):
        for op, epilogue, kmajor in GEMM_LAUNCHES:
            planned.append(("gemm", f"{op} K={K}{' w.t()' if kmajor else ''}",
                            _gemm_call(dtype, (SIZE, SIZE, K), epilogue, kmajor)))
        planned.append(("geglu", f"mlp K={K} w.t()", _geglu_call(dtype, (SIZE, SIZE, K))))
    for kmajor in B_KMAJOR if arch in TMA_ARCHS else ():
        planned.append(("gemm_tma", f"matmul_add{' w.t()' if kmajor else ''}",
                        _tma_call(dtype, (SIZE, SIZE, SIZE), kmajor)))
    for d in HEAD_DIMS:
        planned.append(("flash", f"attention S={SEQ_LEN} D={d}",
                        _flash_call(dtype, (1, 32, SEQ_LEN, d))))
    return [(kernel, label, stand_ins(_captured(*call))) for kernel, label, call in planned]


def odd_launches(dtype: str) -> list[tuple[str, str, dict]]:
    """Launches at the ops' odd test shapes (nothing a multiple of 16, a padded head dim): not
    compiled here, but their specialisation is checked against the runtime's too."""
    planned = [("gemm", f"{epilogue} w.t()={kmajor}",
                _gemm_call(dtype, (37, 45, 29), epilogue, kmajor))
               for epilogue in ("bias", "residual") for kmajor in B_KMAJOR]
    planned += [("geglu", "mlp", _geglu_call(dtype, (37, 45, 29))),
                ("gemm_tma", "matmul_add", _tma_call(dtype, (37, 72, 64), True)),
                ("flash", "attention", _flash_call(dtype, (1, 3, 77, 20)))]
    return [(kernel, label, stand_ins(_captured(*call))) for kernel, label, call in planned]


def stand_ins(named: dict) -> dict:
    """The arguments with each tensor as a Pointer (picklable, hashable, holds no memory):
    its dtype, and its address modulo 16, all of it the runtime specialises on."""
    import torch
    return {k: Pointer(str(v.dtype).removeprefix("torch."), v.data_ptr() % DIVISIBILITY)
            if isinstance(v, torch.Tensor) else v for k, v in named.items()}


def _configs(kernel: str) -> list:
    return _tuner(kernel).configs if kernel != "flash" else _flash_configs()


def _flash_configs() -> list:
    from kernels.triton.flash_attention import _cuda_configs
    return _cuda_configs()


def jobs(dtypes=("bfloat16", "float32")) -> list[tuple[Job, object]]:
    """(job, its triton.Config) for every launch, config, dtype and target (but the flash
    configs whose shared-memory estimate is over the target's: the pruning drops them, and
    ptxas takes up to a minute on each, spilling kilobytes; and the TMA GEMM off sm_90)."""
    from kernels.triton import targets

    out = []
    for arch in ARCHS:
        for dtype in dtypes:
            for kernel, label, named in launches(dtype, arch):
                for c in _configs(kernel):
                    if kernel == "flash" and targets.flash_smem_bytes(
                            c, dtype, named["BLOCK_D"]) > targets.SMEM_LIMIT[arch]:
                        continue  # pruned by its estimate, an upper bound: not compiled
                    out.append(_job(kernel, dtype, arch, c, named, label))
    return out


def with_config(heuristics: dict, named: dict, config) -> dict:
    """A launch's arguments (all but the config's) as the kernel gets them under `config`: its
    block sizes, then each heuristic's value (EVEN_K), as Triton's Heuristics computes it."""
    named = {**named, **config.kwargs}
    for name, rule in heuristics.items():
        named[name] = rule(named)
    return named


def _job(kernel, dtype, arch, config, named: dict, label: str) -> tuple[Job, object]:
    """The job of one launch with one config: the config's constexprs and the heuristics' (as
    the Heuristics wrapper computes them, from every argument) join the launch's."""
    from kernels.triton import targets
    fn, heuristics = kernel_parts(_tuner(kernel))
    named = with_config(heuristics, named, config)
    constexpr = {p.name for p in params(fn) if p.is_constexpr}
    job = Job(kernel, dtype, arch, targets.config_key(config),
              tuple(sorted((k, v) for k, v in named.items() if k in constexpr)),
              config.num_warps, config.num_stages,
              tuple((k, named[k]) for k in fn.arg_names if k not in constexpr), label)
    return job, config


def kept(job: Job, config) -> bool:
    """Whether the kernel's pruning keeps this config on this target."""
    from kernels.triton import targets
    constants = dict(job.constants)
    if job.kernel == "flash":
        return targets.flash_keeps(config, job.dtype, job.arch, constants["BLOCK_D"], SEQ_LEN)
    if job.kernel == "gemm_tma":
        return targets.tma_keeps(config, job.dtype, job.arch, constants["B_KMAJOR"])
    return targets.gemm_keeps(job.kernel, config, job.dtype, job.arch, constants["EVEN_K"],
                              constants.get("HAS_RESIDUAL", False))


def judge(job: Job, config, result: Result) -> Result:
    """The pruning's verdict on this config, and its shared-memory estimate (flash)."""
    from kernels.triton import targets
    result.kept = kept(job, config)
    if job.kernel == "flash":
        result.estimate = targets.flash_smem_bytes(config, job.dtype,
                                                   dict(job.constants)["BLOCK_D"])
    return result


def _group(r: Result) -> tuple:
    """targets.UNFIT's key: (kernel, dtype, arch, targets.variant(...))."""
    from kernels.triton import targets
    values = dict(kv.split("=") for kv in r.variant.split(", ") if "=" in kv)
    if r.kernel == "flash":
        return (r.kernel, r.dtype, r.arch, targets.flash_variant(int(values["BLOCK_D"])))
    if r.kernel == "gemm_tma":
        return (r.kernel, r.dtype, r.arch, targets.tma_variant(values["B_KMAJOR"] == "True"))
    return (r.kernel, r.dtype, r.arch, targets.gemm_variant(values["EVEN_K"] == "True",
                                                            values.get("HAS_RESIDUAL") == "True"))


def _fits(r: Result) -> bool:
    from kernels.triton import targets
    return not r.error and r.shared is not None and r.shared <= targets.SMEM_LIMIT[r.arch]


def unfit(results: list[Result]) -> dict[tuple, set]:
    """What targets.UNFIT must hold: per group, the configs over shared memory or failing to
    compile under any epilogue, and those that spill: a 16-bit config always, an fp32 one where
    another fp32 config of the group runs clean under every epilogue."""
    by_config: dict[tuple, list[Result]] = {}
    for r in results:
        by_config.setdefault((_group(r), r.config), []).append(r)
    clean_groups = {group for (group, _), rs in by_config.items()
                    if all(_fits(r) and r.spill_bytes == 0 for r in rs)}
    out: dict[tuple, set] = {}
    for (group, config), rs in by_config.items():
        spills = any(r.spill_bytes for r in rs if _fits(r))
        tolerated = group[1] == "float32" and group not in clean_groups
        if not all(_fits(r) for r in rs) or (spills and not tolerated):
            out.setdefault(group, set()).add(tuple(int(x) for x in config.split()))
    return out


def problems(results: list[Result], groups=()) -> list[str]:
    """What a target check fails on: the pruning keeps a config that is unfit on its target,
    or drops one that is not (the table in kernels/triton/targets.py is out of date), keeps
    none in a group, or its shared-memory estimate is below the compiler's (a kept config may
    not launch). `groups`: every group planned, kept configs or not."""
    needed = unfit(results)
    out = []
    for group in groups:
        fine = [r for r in results if _group(r) == group and r.kept
                and tuple(int(x) for x in r.config.split()) not in needed.get(group, set())]
        if not fine:
            out.append(f"{' '.join(map(str, group))}: the pruning keeps no config that fits")
    for r in results:
        where = f"{r.kernel} {r.dtype} sm_{r.arch} [{r.config}] ({r.launch}: {r.variant})"
        bad = tuple(int(x) for x in r.config.split()) in needed.get(_group(r), set())
        why = (r.error or (f"needs {r.shared:,} B of shared memory" if not _fits(r) else
                           f"spills {r.spill_bytes} B of registers"))
        if r.kept and bad:
            out.append(f"{where}: kept, but {why}")
        elif not r.kept and not bad and _fits(r):
            out.append(f"{where}: pruned, but it fits ({r.shared:,} B shared, "
                       f"{r.spill_bytes} B spilled)")
        if r.estimate is not None and r.shared is not None and r.estimate < r.shared:
            # The estimate is an upper bound (Triton may share buffers, never needs more): below
            # the compiler's, a config it keeps may fail to launch.
            out.append(f"{where}: the pruning estimates {r.estimate:,} B of shared memory, the "
                       f"compiler needs {r.shared:,} B")
    return list(dict.fromkeys(out))


def table(results: list[Result]) -> str:
    """targets.UNFIT as Python, from these compiles, wrapped as kernels/triton/targets.py
    holds it (paste it there)."""
    return format_table(unfit(results))


def format_table(groups: dict[tuple, set]) -> str:
    lines = ["UNFIT: dict[tuple[str, str, int, str], frozenset] = {"]
    for group, configs in sorted(groups.items()):
        lines.append(f"    {group!r}: frozenset({{")
        row = "       "
        for config in sorted(configs):
            item = f" {config!r},"
            if len(row) + len(item) > 100:
                lines.append(row)
                row = "       "
            row += item
        lines += [row, "    }),"]
    return "\n".join(lines + ["}"])


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--json", type=Path, help="write one JSON line per compile here")
    parser.add_argument("--table", action="store_true",
                        help="print targets.UNFIT as these compiles make it")
    parser.add_argument("--kept-only", action="store_true",
                        help="compile only the configs the pruning keeps (what a GPU would "
                             "run; CI): does not find configs pruned for nothing")
    args = parser.parse_args(argv)
    if os.environ.get("TRITON_INTERPRET") == "1":
        sys.exit("triton_targets: unset TRITON_INTERPRET: the kernels must carry their GPU configs")
    todo = jobs()
    groups = list(dict.fromkeys(_group(Result(j.kernel, j.dtype, j.arch, "", variant_text(j),
                                              None, None, None)) for j, _ in todo))
    if args.kept_only:
        todo = [(job, config) for job, config in todo if kept(job, config)]
    started = time.perf_counter()
    with ProcessPoolExecutor(max_workers=args.jobs) as pool:
        compiled = pool.map(compile_one, [job for job, _ in todo])
        results = [judge(job, config, r) for (job, config), r in zip(todo, compiled)]
    if args.json:
        args.json.write_text("".join(json.dumps(asdict(r)) + "\n" for r in results))
    for r in results:
        state = r.error or (f"{r.shared:>7,} B shared, {r.registers:>3} regs, "
                            f"{r.spill_bytes:>4} B spilled")
        verdict = "kept  " if r.kept else "pruned"
        print(f"{r.kernel:8} {r.dtype:8} sm_{r.arch} {r.config:22} {verdict} {state}  "
              f"({r.launch}: {r.variant})")
    if args.table:
        print(table(results))
    found = mirror_problems([job for job, _ in todo] + odd_jobs()) + problems(results, groups)
    print(f"\n{len(results)} compiles in {time.perf_counter() - started:.0f} s; "
          f"{len(found)} problem(s)")
    for line in found:
        print(f"  {line}")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
