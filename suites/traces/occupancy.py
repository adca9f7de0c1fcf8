"""Occupancy: what a kernel's launches say (Kineto's kernel args) and what the device allows.

Theoretical occupancy is the resident warps per SM that a kernel's registers, threads and
shared memory leave room for, over the SM's maximum: the arithmetic of CUDA's occupancy
calculator (cuda_occupancy.h, cudaOccMaxActiveBlocksPerMultiprocessor). Registers go to warps
in units of 256 per warp, from four sub-partitions of the register file; shared memory goes to
blocks in units of 128 bytes (sm80 and later) plus the 1 KB the driver reserves per block.

Kineto's "est. achieved occupancy %" is that same calculation capped by the grid (blocks per
SM = grid blocks / SMs), rounded to an integer: an estimate, not a hardware counter. Its
calculator is given no opt-in shared memory limit, so for a kernel with more than the default
48 KB per block (large-tile GEMMs: CUTLASS, cuBLAS sm90_xmma, nvjet, launched by cuLaunchKernel,
cuLaunchKernelEx or cudaLaunchKernelExC after raising the kernel's limit) it finds no block
fits and writes 0. Such a 0 is reported here as unknown (empty), not zero: a 0 is kept only
where Kineto's own formula gives under 0.5% (a grid of a few blocks on a big GPU).

Attention kernels are never ranked by occupancy: a flash kernel runs one or two CTAs per SM by
design (large tiles, many registers, asynchronous copies and instruction-level parallelism
hide the latency), so its low occupancy says nothing about its speed (see ATTENTION_NOTE).
"""
from __future__ import annotations

import re
from collections import defaultdict
from dataclasses import dataclass

from suites.traces.event_args import KernelLaunch
from suites.traces.gpu_specs import DeviceSpec

REG_UNIT = 256  # registers per warp are allocated in multiples of this (cc 3.0 and later)
SUB_PARTITIONS = 4  # the register file's partitions per SM (cc 7.0 and later)
MAX_REGS_PER_THREAD = 256  # cuda_occupancy.h, cc 7.0 and later

ATTENTION_KERNEL = re.compile(r"flash|fmha|attention|attn|sdpa|xformers|mha_|_mha", re.I)
ATTENTION_NOTE = ("attention kernels (flash, fmha) run at low occupancy by design: large tiles, "
                  "many registers and one or two CTAs per SM, with asynchronous copies and "
                  "instruction-level parallelism hiding the latency; their occupancy is shown, "
                  "never ranked or flagged")


# Said under a kernel table that shows a tensor-core GEMM's low occupancy (the occupancy
# finding leaves them out: it would have nothing to advise).
TENSOR_CORE_GEMM_NOTE = ("tensor-core GEMMs run one or a few CTAs per SM by design (large "
                         "tiles, deep pipelines): judge them by their TFLOP/s, not occupancy")


def is_attention(name: str) -> bool:
    return bool(ATTENTION_KERNEL.search(name))


@dataclass(frozen=True)
class Occupancy:
    blocks: int  # resident blocks per SM the resources allow
    pct: float  # theoretical occupancy: blocks x warps per block / max warps per SM, in %
    limit: str  # what bounds it: registers, shared memory, warps, blocks ("+" when several)


def _shared_smem_unit(spec: DeviceSpec) -> int:
    return 128 if spec.compute and spec.compute >= (8, 0) else 256


def theoretical(launch: KernelLaunch, spec: DeviceSpec | None) -> Occupancy | None:
    """The occupancy a launch's registers, threads and shared memory allow on `spec`; None
    where the trace or the device does not say enough (ROCm traces carry no registers)."""
    threads = launch.threads
    if (spec is None or spec.vendor != "nvidia" or not threads or launch.registers is None
            or launch.shared_mem is None or not spec.regs_per_sm or not spec.smem_per_sm
            or not spec.max_blocks_per_sm):
        return None
    warp = spec.warp_size
    max_warps = spec.max_threads_per_sm // warp
    warps = -(-threads // warp)
    limits = {"warps": max_warps // warps, "blocks": spec.max_blocks_per_sm}
    regs_per_warp = -(-launch.registers * warp // REG_UNIT) * REG_UNIT
    if regs_per_warp:
        # The hardware checks a block's registers as if its warps filled every partition.
        assumed = regs_per_warp * (-(-warps // SUB_PARTITIONS) * SUB_PARTITIONS)
        if (launch.registers > MAX_REGS_PER_THREAD
                or (spec.regs_per_block and assumed > spec.regs_per_block)):
            limits["registers"] = 0
        else:
            per_partition = spec.regs_per_sm // SUB_PARTITIONS // regs_per_warp
            limits["registers"] = per_partition * SUB_PARTITIONS // warps
    if launch.shared_mem:
        unit = _shared_smem_unit(spec)
        per_block = launch.shared_mem + spec.reserved_smem_per_block
        per_block = -(-per_block // unit) * unit
        limits["shared memory"] = spec.smem_per_sm // per_block
    blocks = min(limits.values())
    bound = "+".join(k for k in ("registers", "shared memory", "warps", "blocks")
                     if limits.get(k) == blocks)
    pct = 100.0 * blocks * warps / max_warps
    # At the SM's maximum nothing holds it back: no limit to name.
    return Occupancy(blocks, pct, bound if pct < 100.0 else "")


def kineto_estimate(launch: KernelLaunch, spec: DeviceSpec, occ: Occupancy) -> float | None:
    """What Kineto's formula gives for a launch: min(launched, resident blocks per SM) x
    threads / max threads per SM, in % (before its rounding)."""
    if launch.blocks_per_sm is None or not launch.threads:
        return None
    return 100.0 * min(launch.blocks_per_sm, occ.blocks) * launch.threads / spec.max_threads_per_sm


def est_occupancy(launch: KernelLaunch, spec: DeviceSpec | None) -> float | None:
    """The trace's "est. achieved occupancy %", None where unknown: absent, negative (Kineto's
    calculator failed), or a 0 that its own formula contradicts (module docstring)."""
    value = launch.est_occupancy_pct
    if value is None or value < 0:
        return None
    if value == 0:
        limit = spec.smem_per_block if spec is not None else None
        if limit and (launch.shared_mem or 0) > limit:
            return None
        occ = theoretical(launch, spec)
        expected = kineto_estimate(launch, spec, occ) if occ is not None else None
        if expected is None or expected >= 0.5:
            return None  # no way to tell a true 0 from a failed calculation, or contradicted
    return float(value)


def _dims(dims) -> str | None:
    return "x".join(str(d) for d in dims) if dims else None


EMPTY_ROW = {"registers_per_thread": float("nan"), "shared_mem_bytes": float("nan"),
             "grid": None, "block": None, "blocks_per_sm": float("nan"),
             "warps_per_sm": float("nan"), "est_occupancy_pct": float("nan"),
             "theoretical_occupancy_pct": float("nan"), "occupancy_limit": None,
             "launch_configs": float("nan")}
COLUMNS = tuple(EMPTY_ROW)


def occupancy_row(kernels, spec_of) -> dict:
    """kernels.csv's occupancy columns for one kernel name's launches (events whose `info` is a
    KernelLaunch). Launches of one name can differ (grid by shape, shared memory by config):
    grid, block, registers, shared memory and the theoretical occupancy are the configuration
    that took the most device time; blocks and warps per SM and the estimate are means over the
    launches weighted by duration (the estimate over those where it is known); launch_configs
    says how many configurations there were. `spec_of(launch)` gives the launch's device."""
    # Launches repeat a few configurations millions of times: summed per distinct launch
    # (shared tuples, event_args.py), each figure is computed once per launch, not per event.
    sums: dict = {}  # launch -> [its launches' total duration, how many]
    for k in kernels:
        info = k.info
        if type(info) is KernelLaunch:
            found = sums.get(info)
            if found is None:
                sums[info] = [k.dur, 1]
            else:
                found[0] += k.dur
                found[1] += 1
    if not sums:
        return dict(EMPTY_ROW)
    by_config: dict = defaultdict(float)
    for launch, (dur, _) in sums.items():
        by_config[launch.config()] += dur
    top_config = max(by_config, key=by_config.get)
    top = next(launch for launch in sums if launch.config() == top_config)
    occ = theoretical(top, spec_of(top))
    row = dict(EMPTY_ROW)
    row.update(registers_per_thread=_nan(top.registers), shared_mem_bytes=_nan(top.shared_mem),
               grid=_dims(top.grid), block=_dims(top.block), launch_configs=len(by_config),
               theoretical_occupancy_pct=occ.pct if occ else float("nan"),
               occupancy_limit=(occ.limit or None) if occ else None)
    row["blocks_per_sm"] = _weighted((l.blocks_per_sm, *sums[l]) for l in sums)
    row["warps_per_sm"] = _weighted((l.warps_per_sm, *sums[l]) for l in sums)
    row["est_occupancy_pct"] = _weighted((est_occupancy(l, spec_of(l)), *sums[l]) for l in sums)
    return row


def _nan(value):
    return float("nan") if value is None else value


def _weighted(sums) -> float:
    """The mean of the values weighted by duration, over (value, total duration, launches) per
    distinct launch; over the launches where no duration is above 0; NaN where none is known."""
    sums = [(v, d, n) for v, d, n in sums if v is not None]
    if not sums:
        return float("nan")
    total = sum(d for _, d, _ in sums)
    if total <= 0:
        return sum(v * n for v, _, n in sums) / sum(n for _, _, n in sums)
    return sum(v * d for v, d, _ in sums) / total
