"""Every Triton kernel and config of this project compiled ahead of time for sm_80 (A100) and
sm_90 (H100/H200), on a machine with no GPU, and judged: does it fit its target?

    python -m suites.tools.triton_targets [--jobs 2] [--kept-only] [--table] [--json out.jsonl]

Why: a config that needs more shared memory than its GPU has fails to launch, and one that
spills registers to local memory is slow (every spill a round trip through L1/L2); the
autotuner times whatever it is given and may keep a spilling config that happens to win on a
quiet machine. So the autotuned kernels prune their configs per target (kernels/triton/
targets.py), and this tool checks that pruning against the compiler: Triton's own compile to
a cubin with the ptxas that ships in the triton wheel, its shared memory from Triton's
metadata and registers and spills from that ptxas run's `-v` log. A config fails its target
when it needs more shared memory than the target has, or spills (a 16-bit config always; an
fp32 one where another fp32 config of its group runs clean). Each failing config must be one
the kernel's pruning drops on that target, and the pruning must drop none that compiles clean
(`--table` prints targets.UNFIT as the compiles make it); the flash pruning's shared-memory
estimate is compared with the compiler's. Kernels without an autotuner run the one config
their launcher picks: it is always kept, so it must fit. The Hopper TMA GEMM (gemm_tma.py) is
compiled for sm_90 only: its variant skips older GPUs.

The parts: triton_launches.py captures every launch of every kernel from the project's own
launchers (forward and backward, at the suites' shapes); triton_specialisation.py makes each
into what Triton's runtime compiles for it (unit strides as constants, 16-divisibility), and
is checked here against the runtime's own binder on every launch planned. This file compiles
and judges. `tests/test_triton_targets.py` runs it in CI on the kept configs. Kernel modules
are imported without TRITON_INTERPRET, so they carry their GPU configs (run it in a process
of its own).
"""
from __future__ import annotations

import argparse
import contextlib
import io
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

from suites.tools import triton_launches as planned
from suites.tools import triton_record as record
from suites.tools.triton_specialisation import Job, _signature, mirror_problems


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
    fixed: bool = False  # no autotuner: the launcher's one config, always run
    function: str = ""   # the kernel's Python function, module.name


def _ptxas() -> Path:
    import triton
    return Path(triton.__file__).parent / "backends" / "nvidia" / "bin" / "ptxas"


def _planned_result(job: Job) -> Result:
    """The Result a job's compile would fill, before it runs: its identity alone."""
    return Result(job.kernel, job.dtype, job.arch, " ".join(map(str, job.config)),
                  variant_text(job), None, None, None, launch=job.launch,
                  fixed=not planned.autotuned(job.kernel),
                  function=planned.function_name(job.kernel))


def compile_one(job: Job) -> Result:
    """One kernel, config and target: Triton's compile to PTX and its cubin; registers and
    spills from the `ptxas -v` log of that very cubin (Triton runs ptxas with -v and prints
    the log when asked), so ptxas runs once per compile and the numbers are the binary's."""
    from triton import knobs

    started = time.perf_counter()
    result = _planned_result(job)
    try:
        log = io.StringIO()
        with knobs.nvidia.scope(), contextlib.redirect_stdout(log):
            knobs.nvidia.dump_ptxas_log = True
            compiled = compile_job(job)
        result.shared = int(compiled.metadata.shared)
        usage = _usage(log.getvalue())
        # None: the cubin came from Triton's cache and no ptxas ran; run it as Triton does.
        result.registers, result.spill_bytes = usage or _ptxas_usage(compiled.asm["ptx"],
                                                                     job.arch)
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

    fn = planned.kernel_fn(job.kernel)
    signature, constexprs, attrs = _signature(fn, job.named)
    return triton.compile(ASTSource(fn, signature, constexprs, attrs),
                          target=GPUTarget("cuda", job.arch, 32),
                          options={"num_warps": job.num_warps, "num_stages": job.num_stages})


def variant_text(job: Job) -> str:
    """The launch's constexprs but the config's, e.g. `EVEN_K=True, HAS_BIAS=True, ...`."""
    names = planned.config_names(job.kernel)
    return ", ".join(f"{k}={v}" for k, v in job.constants if k not in names)


def _usage(log: str) -> tuple[int, int] | None:
    """(registers, spill store + load bytes) from a `ptxas -v` log, None if it holds none."""
    found = re.search(r"Used (\d+) registers", log)
    if not found:
        return None
    return int(found.group(1)), sum(int(n) for n in
                                    re.findall(r"(\d+) bytes spill (?:stores|loads)", log))


# What Triton's make_cubin passes ptxas besides the files (backends/nvidia/compiler.py, triton
# 3.7): line info, and a register-allocation level that works around a ptxas 13 bug.
PTXAS_OPTIONS = ("-lineinfo", "-v", "--regAllocOptLevel=2")


def _ptxas_usage(ptx: str, arch: int) -> tuple[int, int]:
    """(registers, spill store + load bytes) of the kernel, running ptxas as Triton does."""
    gpu = f"sm_{arch}a" if arch >= 90 else f"sm_{arch}"
    with tempfile.TemporaryDirectory() as tmp:
        source = Path(tmp) / "kernel.ptx"
        source.write_text(ptx)
        done = subprocess.run([str(_ptxas()), *PTXAS_OPTIONS, f"--gpu-name={gpu}", str(source),
                               "-o", str(Path(tmp) / "kernel.cubin")],
                              capture_output=True, text=True, check=True)
    return _usage(done.stdout + done.stderr)


# --- the verdicts -------------------------------------------------------------------------

def kept(job: Job, config) -> bool:
    """Whether the kernel's pruning keeps this config on this target (a fixed kernel has no
    pruning: its config always runs)."""
    from kernels.triton import targets
    constants = dict(job.constants)
    if not planned.autotuned(job.kernel):
        return True
    if job.kernel == "flash":
        return targets.flash_keeps(config, job.dtype, job.arch, constants["BLOCK_D"],
                                   planned.SEQ_LEN)
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
    """targets.UNFIT's key: (kernel, dtype, arch, targets.variant(...)); a fixed kernel's
    variant is its launch's constexprs but the block sizes (its config)."""
    from kernels.triton import targets
    values = dict(kv.split("=") for kv in r.variant.split(", ") if "=" in kv)
    if r.fixed:
        return (r.kernel, r.dtype, r.arch, r.variant)
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
    """Per group, the configs over shared memory or failing to compile under any launch, and
    those that spill: a 16-bit config always, an fp32 one where another fp32 config of the
    group runs clean under every launch (for the autotuned kernels: what targets.UNFIT must
    hold)."""
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
    not launch); a fixed kernel's one config is unfit. `groups`: every group planned, kept
    configs or not."""
    needed = unfit(results)
    out = []
    for group in groups:
        fine = [r for r in results if _group(r) == group and r.kept
                and tuple(int(x) for x in r.config.split()) not in needed.get(group, set())]
        if not fine and planned.autotuned(group[0]):  # a fixed one's row says why, below
            out.append(f"{' '.join(map(str, group))}: the pruning keeps no config that fits")
    for r in results:
        where = f"{r.kernel} {r.dtype} sm_{r.arch} [{r.config}] ({r.launch}: {r.variant})"
        bad = tuple(int(x) for x in r.config.split()) in needed.get(_group(r), set())
        why = (r.error or (f"needs {r.shared:,} B of shared memory" if not _fits(r) else
                           f"spills {r.spill_bytes} B of registers" if r.spill_bytes else
                           "it is unfit under another launch of its group"))
        if r.kept and bad:
            out.append(f"{where}: {'its fixed config' if r.fixed else 'kept'}, but {why}")
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
    holds it (paste it there). Only the autotuned kernels prune by it: an unfit fixed config
    is a problem (problems) to fix in its kernel, not a row here."""
    return format_table(unfit([r for r in results if not r.fixed]))


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


def _cost(job: Job) -> int:
    """A rough rank of a compile's time, to start the slow ones first: the pool's last
    minutes then run short compiles side by side rather than one long one alone."""
    slow = {"flash": 3, "flash_bwd_dkdv": 3, "flash_bwd_dq": 3, "gemm_tma": 2, "geglu": 2,
            "gemm": 2}
    return slow.get(job.kernel, 0) + (job.dtype == "float32")


def compile_all(todo: list[tuple[Job, object]], workers: int) -> list[Result]:
    """compile_one on every job in `workers` processes, judged; results in `todo`'s order."""
    order = sorted(range(len(todo)), key=lambda i: -_cost(todo[i][0]))
    with ProcessPoolExecutor(max_workers=workers) as pool:
        done = dict(zip(order, pool.map(compile_one, [todo[i][0] for i in order])))
    return [judge(job, config, done[i]) for i, (job, config) in enumerate(todo)]


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1,
                        help="compile processes (default: one per CPU)")
    parser.add_argument("--json", type=Path, help="write one JSON line per compile here")
    parser.add_argument("--table", action="store_true",
                        help="print targets.UNFIT as these compiles make it")
    parser.add_argument("--record", action="store_true",
                        help="store the results and verdict in tests/fixtures/"
                             "triton_targets.json, keyed by their inputs (triton_record.py)")
    parser.add_argument("--sample", type=Path,
                        help="compile only the compiles this record lists one of per kernel "
                             "and target (the test's check that a record is the compiler's)")
    parser.add_argument("--kept-only", action="store_true",
                        help="compile only the configs the pruning keeps (what a GPU would "
                             "run; CI): does not find configs pruned for nothing")
    args = parser.parse_args(argv)
    if os.environ.get("TRITON_INTERPRET") == "1":
        sys.exit("triton_targets: unset TRITON_INTERPRET: the kernels must carry their GPU configs")
    todo = planned.jobs()
    groups = list(dict.fromkeys(
        _group(Result(j.kernel, j.dtype, j.arch, "", variant_text(j), None, None, None,
                      fixed=not planned.autotuned(j.kernel))) for j, _ in todo))
    if args.kept_only:
        todo = [(job, config) for job, config in todo if kept(job, config)]
    if args.sample:
        wanted = record.sample(record.read(args.sample)["results"])
        todo = [(job, config) for job, config in todo
                if record.identity(asdict(_planned_result(job))) in wanted]
    started = time.perf_counter()
    results = compile_all(todo, args.jobs)
    if args.json:
        args.json.write_text("".join(json.dumps(asdict(r)) + "\n" for r in results))
    for r in results:
        state = r.error or (f"{r.shared:>7,} B shared, {r.registers:>3} regs, "
                            f"{r.spill_bytes:>4} B spilled")
        verdict = "fixed " if r.fixed else "kept  " if r.kept else "pruned"
        print(f"{r.kernel:20} {r.dtype:8} sm_{r.arch} {r.config:22} {verdict} {state}  "
              f"({r.launch}: {r.variant})")
    if args.table:
        print(table(results))
    if args.sample:  # a sample's verdict is the whole record's: only its numbers are compared
        print(f"\n{len(results)} compiles in {time.perf_counter() - started:.0f} s (a sample)")
        return 0
    checked = [job for job, _ in todo] + planned.odd_jobs()
    found = mirror_problems(checked, planned.kernel_fn) + problems(results, groups)
    verdict = f"{len(results)} compiles; {len(found)} problem(s)"
    print(f"\n{len(results)} compiles in {time.perf_counter() - started:.0f} s; "
          f"{len(found)} problem(s)")
    for line in found:
        print(f"  {line}")
    if args.record:
        if not args.kept_only:
            sys.exit("triton_targets: --record stores the kept set: give --kept-only too")
        record.write([asdict(r) for r in results], verdict + "".join(f"\n  {x}" for x in found))
        print(f"recorded: {record.RECORD}")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
