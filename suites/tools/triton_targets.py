"""Every Triton kernel and autotune config of this project compiled ahead of time for sm_80
(A100) and sm_90 (H100/H200), on a machine with no GPU, with the ptxas that ships in the triton
wheel; each compile's shared memory from Triton, and registers and spills from `ptxas -v`.
The Hopper TMA GEMM (gemm_tma.py) is compiled for sm_90 only: its variant skips older GPUs.

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
class Job:
    kernel: str        # gemm, geglu, flash, gemm_tma
    dtype: str         # bfloat16, float32
    arch: int          # 80, 90
    config: tuple      # the config's key (targets.config_key)
    constants: tuple   # the kernel's other constexprs, (name, value) pairs
    num_warps: int
    num_stages: int


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


def _ptxas() -> Path:
    import triton
    return Path(triton.__file__).parent / "backends" / "nvidia" / "bin" / "ptxas"


def _kernel_fn(name: str):
    from kernels.triton import flash_attention, gemm, gemm_geglu, gemm_tma
    wrapped = {"gemm": gemm._matmul_bias_act_kernel, "geglu": gemm_geglu._matmul_geglu_kernel,
               "flash": flash_attention._attn_fwd_kernel,
               "gemm_tma": gemm_tma._matmul_tma_kernel}[name]
    from triton.runtime.jit import JITFunction
    while not isinstance(wrapped, JITFunction):  # Autotuner -> Heuristics -> JITFunction
        wrapped = wrapped.fn
    return wrapped


def _signature(fn, dtype: str, constants: dict) -> dict:
    short = DTYPES[dtype]
    sig = {}
    for name in fn.arg_names:
        if name in constants:
            sig[name] = "constexpr"
        elif name.endswith("_ptr"):
            sig[name] = f"*{short}"
        elif name == "qk_scale":
            sig[name] = "fp32"
        else:
            sig[name] = "i32"
    return sig


def compile_one(job: Job) -> Result:
    """One kernel, config and target: Triton's compile to PTX (and its cubin), then ptxas -v."""
    import triton
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource

    constants = dict(job.constants)
    variant = ", ".join(f"{k}={v}" for k, v in job.constants if k not in CONFIG_NAMES)
    result = Result(job.kernel, job.dtype, job.arch, " ".join(map(str, job.config)), variant,
                    None, None, None)
    started = time.perf_counter()
    try:
        fn = _kernel_fn(job.kernel)
        src = ASTSource(fn=fn, signature=_signature(fn, job.dtype, constants),
                        constexprs={(fn.arg_names.index(k),): v for k, v in constants.items()})
        compiled = triton.compile(src, target=GPUTarget("cuda", job.arch, 32),
                                  options={"num_warps": job.num_warps,
                                           "num_stages": job.num_stages})
        result.shared = int(compiled.metadata.shared)
        result.registers, result.spill_bytes = _ptxas_usage(compiled.asm["ptx"], job.arch)
    except Exception as exc:  # out of resources, or a compiler error: the row says which
        text = str(exc).strip().splitlines()
        result.error = f"{type(exc).__name__}: {text[0][:300] if text else ''}"
    result.seconds = round(time.perf_counter() - started, 2)
    return result


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


# --- what to compile ------------------------------------------------------------------------

CONFIG_NAMES = ("BLOCK_SIZE_M", "BLOCK_SIZE_N", "BLOCK_SIZE_K", "GROUP_SIZE_M", "BLOCK_M",
                "BLOCK_N")
# The epilogues the project launches (matmul_add and linear: bias; the block's projections:
# residual), each with the plain K loop and with the masked one (a K that is not a multiple of
# the block depth): the masked loads need registers of their own.
GEMM_EPILOGUES = ({"HAS_BIAS": True, "ACTIVATION": "none", "HAS_RESIDUAL": False},
                  {"HAS_BIAS": False, "ACTIVATION": "none", "HAS_RESIDUAL": True})
EVEN_K = (True, False)
HEAD_DIMS = (64, 128)  # the CUDA grids' attention head sizes
# The TMA GEMM runs on sm_90 only (matmul_add's triton_tma variant skips older GPUs), with the
# bias epilogue; B row-major (matmul_add's w) and as a weight.t() view.
TMA_ARCHS = (90,)
TMA_EPILOGUE = {"HAS_BIAS": True, "ACTIVATION": "none"}
B_KMAJOR = (False, True)
SEQ_LEN = 8192         # long enough that no config is dropped for being taller than S


def jobs(dtypes=("bfloat16", "float32")) -> list[tuple[Job, object]]:
    """(job, its triton.Config) for every kernel, config, dtype and target (but the flash
    configs whose shared-memory estimate is over the target's: the pruning drops them, and
    ptxas takes up to a minute on each, spilling kilobytes; and the TMA GEMM off sm_90)."""
    import torch

    from kernels.triton import targets
    from kernels.triton.flash_attention import _cuda_configs
    from kernels.triton.gemm import GEMM_CONFIGS
    from kernels.triton.gemm_geglu import GEGLU_CONFIGS
    from kernels.triton.gemm_tma import TMA_CONFIGS, tma_dot_flags

    out = []
    for arch in ARCHS:
        for dtype in dtypes:
            flags = {"INPUT_PRECISION": "ieee" if dtype == "float32" else "tf32",
                     "UPCAST_BF16": False}
            for even in EVEN_K:
                for c in GEMM_CONFIGS:
                    for epilogue in GEMM_EPILOGUES:
                        out.append(_job("gemm", dtype, arch, c,
                                        {**epilogue, **flags, "EVEN_K": even}))
                for c in GEGLU_CONFIGS:
                    out.append(_job("geglu", dtype, arch, c, {**flags, "EVEN_K": even}))
            tma_flags = tma_dot_flags(getattr(torch, dtype))
            for c in TMA_CONFIGS if arch in TMA_ARCHS else ():
                for kmajor in B_KMAJOR:
                    out.append(_job("gemm_tma", dtype, arch, c,
                                    {**TMA_EPILOGUE, **tma_flags, "B_KMAJOR": kmajor}))
            for c in _cuda_configs():
                for d in HEAD_DIMS:
                    if targets.flash_smem_bytes(c, dtype, d) > targets.SMEM_LIMIT[arch]:
                        continue  # pruned by its estimate, an upper bound: not compiled
                    out.append(_job("flash", dtype, arch, c, {
                        "HEAD_DIM": d, "BLOCK_D": d, "PAD_D": False, "CAUSAL": True,
                        "UPCAST": False, "EXACT_FP32": dtype == "float32"}))
    return out


def _job(kernel, dtype, arch, config, constants) -> tuple[Job, object]:
    from kernels.triton import targets
    job = Job(kernel, dtype, arch, targets.config_key(config),
              tuple(sorted({**constants, **config.kwargs}.items())), config.num_warps,
              config.num_stages)
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
        where = f"{r.kernel} {r.dtype} sm_{r.arch} [{r.config}] ({r.variant})"
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
    """targets.UNFIT as Python, from these compiles."""
    lines = ["UNFIT: dict[tuple[str, str, int, str], frozenset] = {"]
    for group, configs in sorted(unfit(results).items()):
        lines.append(f"    {group!r}: frozenset({sorted(configs)!r}),")
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
    groups = list(dict.fromkeys(_group(Result(j.kernel, j.dtype, j.arch, "", ", ".join(
        f"{k}={v}" for k, v in j.constants), None, None, None)) for j, _ in todo))
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
              f"({r.variant})")
    if args.table:
        print(table(results))
    found = problems(results, groups)
    print(f"\n{len(results)} compiles in {time.perf_counter() - started:.0f} s; "
          f"{len(found)} problem(s)")
    for line in found:
        print(f"  {line}")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
