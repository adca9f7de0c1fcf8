"""Which kernel launches the ahead-of-time compile (triton_targets.py) compiles: every Triton
kernel of kernels/triton, with the arguments the project's own launchers give it.

A compile is only worth its numbers if it is the kernel the GPU runs, and what Triton compiles
depends on the argument values (triton_specialisation.py). So nothing here restates a launch:
each one is *captured* by calling the real Python launcher (a `prepare_*` wrapper, or a training
forward and its autograd backward, as suites/harness/training.py runs a step) on meta tensors
(shapes, strides, addresses; no memory), with every kernel of the registry below replaced by a
recorder that keeps the arguments instead of launching. The grid, the constexprs the wrapper
passes, its num_warps/num_stages and every size, stride and address are then exactly the
suites'. A launcher that asks the GPU (how many SMs, to size a grid) is given the target's
answer (`_gpu_stand_ins`), so the capture needs no GPU and plans what that GPU would run. The
plan is a hand-picked set of launches, the groups the pruning tables are made of, and every
Triton launch of the suites' CUDA grids (conf/suite/*.yaml) on top: launches that compile to
the same kernel are one job.

Kernels with `triton.autotune` are compiled with each of their configs (the pruning in
kernels/triton/targets.py decides which run); the others are compiled with the one config their
launcher picks, and always count as kept. `defined_kernels` finds every kernel defined in
kernels/triton, so a kernel left out of `KERNELS` fails tests/test_triton_targets.py.

Import with TRITON_INTERPRET unset: under the interpreter the kernel modules carry their
interpreter configs and tiles, not the GPU's.
"""
from __future__ import annotations

import ast
import importlib
import inspect
import pkgutil
import textwrap

from suites.tools.triton_capture import (  # noqa: F401 (the plan's names, used by its readers)
    CONFIG_NAMES, KERNELS, LAUNCH_OPTIONS, SM_COUNT, Kernel, Launch, _capture, _gpu_stand_ins,
    _meta, _train_step, autotuned, config_names, function_name, kernel_fn, tuner)
from suites.tools.triton_specialisation import Job, kernel_parts, params, specialisation_key
from suites.tools.triton_suite_launches import grid_launches

ARCHS = (80, 90)
# The dtypes compiled: fp16 takes bf16's tensor-core path in every kernel here.
PLANNED_DTYPES = ("bfloat16", "float32")


# --- the shapes --------------------------------------------------------------------------
# The suites' kind: every size a multiple of 16, whole tensors (as fresh allocations, 16-byte
# aligned). What is compiled depends on no size but through its divisibility by 16 (and on
# the norms' and GeGLU's, which pick blocks and warps by size: those take each size the CUDA
# grids pick differently at).
SIZE = 1024       # M and N, and K where it is a multiple of every block depth (EVEN_K)
MASKED_K = 1040   # 16 x 65: a multiple of 16 (as linear's IN=32 is) but of no block depth
# The GEMM launches, each with the plain K loop and the masked one: matmul_add (bias, B
# row-major), linear (bias, an nn.Linear weight.t() view) and the block's projections (the
# residual epilogue, weight.t()). The pruning's groups take them together (targets.UNFIT).
GEMM_LAUNCHES = (("matmul_add", "bias", False), ("linear", "bias", True),
                 ("block", "residual", True))
# The GEMM training steps (gemm_bwd.MatmulBiasFn): dx = dy @ w^T and dw = x^T @ dy run the same
# kernel with no epilogue, on transposed views (A column-major for dw), and db is a column sum.
# matmul_add passes w row-major, linear and the block an nn.Linear weight.t(). dx's K is N and
# dw's is M: the masked K loop comes at M = N = MASKED_K.
GEMM_TRAIN_LAUNCHES = (("matmul_add", False), ("linear", True))
HEAD_DIMS = (64, 128)  # the CUDA grids' attention head sizes
# The TMA GEMM runs on sm_90 only (matmul_add's triton_tma variant skips older GPUs), with the
# bias epilogue; B row-major (matmul_add's w) and as a weight.t() view.
TMA_ARCHS = (90,)
B_KMAJOR = (False, True)
SEQ_LEN = 8192         # long enough that no config is dropped for being taller than S
# The norms' rows and widths: the CUDA grid's reference T, and each width whose block size and
# warps differ (rowwise._num_warps: 1024 lanes over 4 warps, 4096 over 8, 8192 over 16).
NORM_ROWS = 8192
NORM_DIMS = (768, 4096, 8192)
# GeGLU's (T, I): under 2**22 elements it takes 1024-element blocks over 4 warps, over it 4096
# over 8 (geglu._launch_config): the mlp suite's T=128 and T=8192 at I=3072.
GEGLU_SHAPES = ((128, 3072), (8192, 3072))


# Each builder returns (the call, the steps it launches).

def _gemm(dtype: str, shape: tuple, epilogue: str, kmajor: bool):
    from kernels.triton import gemm
    M, N, K = shape
    a, b = _meta(M, K, dtype=dtype), _meta(K, N, dtype=dtype, transposed=kmajor)
    bias = _meta(N, dtype=dtype) if epilogue == "bias" else None
    residual = _meta(M, N, dtype=dtype) if epilogue == "residual" else None
    return (lambda: gemm.prepare_matmul_bias_act(a, b, bias, residual=residual)(),
            (("gemm", ""),))


def _gemm_train(dtype: str, shape: tuple, kmajor: bool, stages: int = 2):
    """matmul_bias_train's step: the forward, dx, dw, and db in `stages` column-sum launches
    (two where dy is tall: gemm_bwd.column_sum_plan on the target's SMs)."""
    from kernels.triton import gemm_bwd
    M, N, K = shape
    x = _meta(M, K, dtype=dtype, grad=True)
    w = _meta(K, N, dtype=dtype, transposed=kmajor, grad=True)
    b = _meta(N, dtype=dtype, grad=True)
    steps = (("gemm", "forward"), ("gemm", "dx"), ("gemm", "dw"))
    steps += (("column_sum", "db"),) if stages == 1 else (
        ("column_sum", "db stage 1"), ("column_sum", "db stage 2"))
    return lambda: _train_step(lambda: gemm_bwd.matmul_bias_train(x, w, b)), steps


def _geglu_gemm(dtype: str, shape: tuple):
    from kernels.triton import gemm_geglu
    M, N, K = shape
    x = _meta(M, K, dtype=dtype)
    w_gate, w_up = (_meta(K, N, dtype=dtype, transposed=True) for _ in range(2))
    return (lambda: gemm_geglu.prepare_matmul_geglu(x, w_gate, w_up)(), (("geglu", ""),))


def _tma(dtype: str, shape: tuple, kmajor: bool):
    from kernels.triton import gemm_tma
    M, N, K = shape
    a, b = _meta(M, K, dtype=dtype), _meta(K, N, dtype=dtype, transposed=kmajor)
    return (lambda: gemm_tma.prepare_matmul_bias_act_tma(a, b, _meta(N, dtype=dtype))(),
            (("gemm_tma", ""),))


def _flash(dtype: str, shape: tuple):
    from kernels.triton import flash_attention
    q, k, v = (_meta(*shape, dtype=dtype) for _ in range(3))
    return (lambda: flash_attention.prepare_flash_attention(q, k, v, causal=True)(),
            (("flash", ""),))


_FLASH_BWD = (("flash_bwd_delta", "delta"), ("flash_bwd_dkdv", "dk dv"), ("flash_bwd_dq", "dq"))


def _flash_train(dtype: str, shape: tuple):
    """The attention suites' training step (causal): the forward that stores each row's
    log-sum-exp (the autotuned kernel with STORE_LSE), then delta, dk/dv and dq."""
    from kernels.triton import flash_attention_bwd
    q, k, v = (_meta(*shape, dtype=dtype, grad=True) for _ in range(3))
    return (lambda: _train_step(lambda: flash_attention_bwd.prepare_flash_attention_train(
        q, k, v, causal=True)()), (("flash", "forward"), *_FLASH_BWD))


def _flash_bwd(dtype: str, shape: tuple, causal: bool):
    """The backward's three launches alone (flash_attention_bwd._backward), for a non-causal
    forward the suites never time, on the forward's saved tensors: its output stored
    (B, S, H, D) and read as a (B, H, S, D) view, and the rows' fp32 log-sum-exp."""
    import math

    from kernels.triton import flash_attention_bwd
    B, H, S, D = shape
    q, k, v, do = (_meta(*shape, dtype=dtype) for _ in range(4))
    out = _meta(B, S, H, D, dtype=dtype).transpose(1, 2)
    lse = _meta(B, H, S, dtype="float32")
    return (lambda: flash_attention_bwd._backward(q, k, v, out, lse, do, causal,
                                                  1.0 / math.sqrt(D)), _FLASH_BWD)


def _norm(dtype: str, norm: str, shape: tuple):
    from kernels.triton import layernorm, rmsnorm
    x, w = _meta(*shape, dtype=dtype), _meta(shape[-1], dtype=dtype)
    if norm == "layer":
        b = _meta(shape[-1], dtype=dtype)
        return (lambda: layernorm.prepare_layer_norm(x, w, b)(), (("layer_norm_fwd", ""),))
    return lambda: rmsnorm.prepare_rms_norm(x, w)(), (("rms_norm_fwd", ""),)


def _norm_train(dtype: str, norm: str, shape: tuple):
    """The norm suite's training step: the forward that keeps the rows' statistics, the
    backward's dx and partial sums (rows split for the target's SMs), the partials' sum."""
    from kernels.triton import layernorm_bwd, rmsnorm_bwd
    x = _meta(*shape, dtype=dtype, grad=True)
    w = _meta(shape[-1], dtype=dtype, grad=True)
    if norm == "layer":
        b = _meta(shape[-1], dtype=dtype, grad=True)
        def forward():  # prepared in the capture: its checks pass meta tensors only there
            return layernorm_bwd.prepare_layer_norm_train(x, w, b)()
    else:
        def forward():
            return rmsnorm_bwd.prepare_rms_norm_train(x, w)()
    name = f"{norm}_norm" if norm == "rms" else "layer_norm"
    return lambda: _train_step(forward), ((f"{name}_fwd_train", "forward"),
                                          (f"{name}_bwd", "dx"),
                                          ("sum_partials", "dw" if norm == "rms" else "dw db"))


def _geglu_elementwise(dtype: str, shape: tuple, train: bool):
    from kernels.triton import geglu, geglu_bwd
    gate, up = (_meta(*shape, dtype=dtype, grad=train) for _ in range(2))
    if not train:
        return lambda: geglu.prepare_geglu(gate, up)(), (("geglu_fwd", ""),)
    return (lambda: _train_step(lambda: geglu_bwd.geglu_train(gate, up)),
            (("geglu_fwd", "forward"), ("geglu_bwd", "backward")))


def _nop():
    from kernels.triton import nop
    x = _meta(1, dtype="float32")
    return lambda: nop.jit_launch(x), (("nop", ""),)


def launches(dtype: str, arch: int) -> list[Launch]:
    """Each launch planned for `dtype` on `arch`; tensors as Pointer stand-ins (picklable, no
    memory). First the hand-picked ones, which name what the pruning's groups are made of (the
    masked K loop at sizes that are multiples of 16, the non-causal backward); then every
    launch of the suites' CUDA grids (suite_launches), so nothing the suites run is left out."""
    planned = []
    for K in (SIZE, MASKED_K):
        for op, epilogue, kmajor in GEMM_LAUNCHES:
            planned.append((f"{op} K={K}{' w.t()' if kmajor else ''}",
                            _gemm(dtype, (SIZE, SIZE, K), epilogue, kmajor)))
        planned.append((f"mlp K={K} w.t()", _geglu_gemm(dtype, (SIZE, SIZE, K))))
    for op, kmajor in GEMM_TRAIN_LAUNCHES:
        for M in (SIZE, MASKED_K):
            planned.append((f"{op} train M=N={M} K={SIZE}{' w.t()' if kmajor else ''}",
                            _gemm_train(dtype, (M, M, SIZE), kmajor)))
    for kmajor in B_KMAJOR if arch in TMA_ARCHS else ():
        planned.append((f"matmul_add{' w.t()' if kmajor else ''}",
                        _tma(dtype, (SIZE, SIZE, SIZE), kmajor)))
    for d in HEAD_DIMS:
        shape = (1, 32, SEQ_LEN, d)
        planned.append((f"attention S={SEQ_LEN} D={d}", _flash(dtype, shape)))
        planned.append((f"attention train S={SEQ_LEN} D={d}", _flash_train(dtype, shape)))
        planned.append((f"attention bwd non-causal S={SEQ_LEN} D={d}",
                        _flash_bwd(dtype, shape, causal=False)))
    for D in NORM_DIMS:
        for norm in ("layer", "rms"):
            planned.append((f"norm={norm} T={NORM_ROWS} D={D}",
                            _norm(dtype, norm, (NORM_ROWS, D))))
            planned.append((f"norm={norm} train T={NORM_ROWS} D={D}",
                            _norm_train(dtype, norm, (NORM_ROWS, D))))
    for T, I in GEGLU_SHAPES:
        planned.append((f"mlp geglu T={T} I={I}", _geglu_elementwise(dtype, (T, I), False)))
        planned.append((f"mlp geglu train T={T} I={I}",
                        _geglu_elementwise(dtype, (T, I), True)))
    if dtype == "float32":  # the launch suite's one dtype
        planned.append(("launch", _nop()))
    return [launch for label, (call, steps) in planned
            for launch in _capture(label, call, steps, arch)] + suite_launches(dtype, arch)


def suite_launches(dtype: str, arch: int) -> list[Launch]:
    """Every launch of the suites' CUDA grids (triton_suite_launches.py)."""
    return grid_launches(dtype, arch)


def odd_launches(dtype: str, arch: int = 90) -> list[Launch]:
    """Launches at the ops' odd test shapes (nothing a multiple of 16, a padded head dim): not
    compiled here, but their specialisation is checked against the runtime's too."""
    odd = (37, 45, 29)
    planned = [(f"{epilogue} w.t()={kmajor}", _gemm(dtype, odd, epilogue, kmajor))
               for epilogue in ("bias", "residual") for kmajor in B_KMAJOR]
    planned += [(f"train w.t()={kmajor}", _gemm_train(dtype, odd, kmajor, stages=1))
                for kmajor in B_KMAJOR]
    planned += [("mlp", _geglu_gemm(dtype, odd)),
                ("matmul_add", _tma(dtype, (37, 72, 64), True)),
                ("attention", _flash(dtype, (1, 3, 77, 20))),
                ("attention train", _flash_train(dtype, (1, 3, 77, 20))),
                ("attention bwd non-causal", _flash_bwd(dtype, (1, 3, 77, 20), causal=False)),
                ("mlp geglu train", _geglu_elementwise(dtype, (37, 45), True))]
    for norm in ("layer", "rms"):
        planned += [(f"norm={norm}", _norm(dtype, norm, (37, 1500))),
                    (f"norm={norm} train", _norm_train(dtype, norm, (37, 1500)))]
    return [launch for label, (call, steps) in planned
            for launch in _capture(label, call, steps, arch)]


# --- the jobs -----------------------------------------------------------------------------

def _default_options() -> dict:
    """What Triton compiles a launch with that passes no num_warps / num_stages."""
    from triton.backends.nvidia.compiler import CUDAOptions
    return {name: getattr(CUDAOptions, name) for name in LAUNCH_OPTIONS}


def configs(launch: Launch) -> list:
    """The configs a launch is compiled with: an autotuned kernel's every config, or the one
    its launcher picked (its block sizes, warps and stages) for a fixed kernel."""
    import triton
    if autotuned(launch.kernel):
        if launch.kernel == "flash":  # the GPU list (the autotuner holds the same)
            from kernels.triton.flash_attention import _cuda_configs
            return _cuda_configs()
        return tuner(launch.kernel).configs
    options = {**_default_options(), **launch.options}
    return [triton.Config({t: launch.named[t] for t in KERNELS[launch.kernel].tiles}, **options)]


def config_key(kernel: str, config) -> tuple:
    """An autotuned kernel's targets.config_key; a fixed kernel's block sizes, warps, stages."""
    from kernels.triton import targets
    if not autotuned(kernel):
        return (*(config.kwargs[t] for t in KERNELS[kernel].tiles), config.num_warps,
                config.num_stages)
    return targets.config_key(config)


def with_config(heuristics: dict, named: dict, config) -> dict:
    """A launch's arguments (all but the config's) as the kernel gets them under `config`: its
    block sizes, then each heuristic's value (EVEN_K), as Triton's Heuristics computes it."""
    named = {**named, **config.kwargs}
    for name, rule in heuristics.items():
        named[name] = rule(named)
    return named


def job(launch: Launch, dtype: str, arch: int, config) -> Job:
    """The job of one launch with one config: the config's constexprs and the heuristics' (as
    the Heuristics wrapper computes them, from every argument) join the launch's."""
    fn, heuristics = kernel_parts(tuner(launch.kernel))
    named = with_config(heuristics, launch.named, config)
    constexpr = {p.name for p in params(fn) if p.is_constexpr}
    return Job(launch.kernel, dtype, arch, config_key(launch.kernel, config),
               tuple(sorted((k, v) for k, v in named.items() if k in constexpr)),
               config.num_warps, config.num_stages,
               tuple((k, named[k]) for k in fn.arg_names if k not in constexpr), launch.label)


def jobs(dtypes=PLANNED_DTYPES) -> list[tuple[Job, object]]:
    """(job, its triton.Config) for every launch, config, dtype and target (but the flash
    configs whose shared-memory estimate is over the target's: the pruning drops them, and
    ptxas takes up to a minute on each, spilling kilobytes; and the TMA GEMM off sm_90). Two
    launches that compile to the same kernel (the same specialisation, config, warps and
    stages: a training step's forward is the inference launch, the matmul_add and linear dw
    GEMMs read the same layouts) are one job, with the first one's label."""
    from kernels.triton import targets

    out, seen = [], set()
    for arch in ARCHS:
        for dtype in dtypes:
            for launch in launches(dtype, arch):
                for c in configs(launch):
                    if launch.kernel == "flash" and targets.flash_smem_bytes(
                            c, dtype, launch.named["BLOCK_D"]) > targets.SMEM_LIMIT[arch]:
                        continue  # pruned by its estimate, an upper bound: not compiled
                    planned = job(launch, dtype, arch, c)
                    compiled_as = (planned.kernel, arch, planned.num_warps, planned.num_stages,
                                   specialisation_key(kernel_fn(planned.kernel), planned.named))
                    if compiled_as not in seen:
                        seen.add(compiled_as)
                        out.append((planned, c))
    return out


def odd_jobs(dtypes=PLANNED_DTYPES) -> list[Job]:
    """One job per odd launch and dtype (its kernel's first config, sm_90): for the mirror
    check (triton_specialisation.mirror_problems)."""
    return [job(launch, dtype, 90, configs(launch)[0])
            for dtype in dtypes for launch in odd_launches(dtype)]


# --- every kernel of the project ----------------------------------------------------------

def defined_kernels() -> dict[str, object]:
    """`module.name` -> function of every Triton kernel defined in kernels/triton: each
    @triton.jit function that no other one calls (those are device helpers). Read from the
    modules, not from KERNELS, so that a new kernel nobody registered is found."""
    import kernels.triton as package
    from triton.runtime.jit import KernelInterface

    jitted = {}
    for info in pkgutil.iter_modules(package.__path__):
        module = importlib.import_module(f"{package.__name__}.{info.name}")
        for value in vars(module).values():
            if not isinstance(value, KernelInterface):  # jit, autotune, heuristics
                continue
            fn = kernel_parts(value)[0]
            if fn.fn.__module__ == module.__name__:  # defined here, not imported
                jitted[f"{module.__name__}.{fn.fn.__name__}"] = fn
    called = set()
    for fn in jitted.values():
        for node in ast.walk(ast.parse(textwrap.dedent(inspect.getsource(fn.fn)))):
            if isinstance(node, ast.Call):
                func = node.func
                called.add(func.id if isinstance(func, ast.Name) else getattr(func, "attr", None))
    return {name: fn for name, fn in jitted.items() if fn.fn.__name__ not in called}
