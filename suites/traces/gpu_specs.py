"""A GPU's per-SM limits, for occupancy: from the trace's `deviceProperties` (Kineto writes the
device's cudaDeviceProp / hipDeviceProp fields there), else from a table of known GPUs.

The trace decides where it has the field; the table fills what it lacks (Kineto writes no
`maxBlocksPerMultiProcessor`, and ROCm traces name shared memory differently and have no
register figures) and stands in for a trace without properties.
"""
from __future__ import annotations

from dataclasses import dataclass, replace


@dataclass(frozen=True)
class DeviceSpec:
    name: str
    vendor: str  # nvidia | amd
    compute: tuple[int, int] | None  # compute capability (NVIDIA), gfx major/minor (AMD)
    sms: int | None  # SMs (NVIDIA) or compute units (AMD)
    warp_size: int
    max_threads_per_sm: int
    regs_per_sm: int | None
    regs_per_block: int | None
    smem_per_sm: int | None  # the largest shared-memory carveout of an SM
    smem_per_block: int | None  # the per-block limit without opting in (48 KB on NVIDIA)
    smem_per_block_optin: int | None
    max_blocks_per_sm: int | None
    source: str  # "trace", "trace + table (<entry>)" or "table (<entry>)"

    @property
    def reserved_smem_per_block(self) -> int:
        """Shared memory the driver keeps per block (sm80 and later: 1 KB), the gap between an
        SM's carveout and the opt-in per-block maximum."""
        if self.smem_per_sm and self.smem_per_block_optin:
            return max(0, self.smem_per_sm - self.smem_per_block_optin)
        return 1024 if self.compute and self.compute >= (8, 0) else 0


# Resident blocks per SM by compute capability: the CUDA C++ Programming Guide, "Technical
# Specifications per Compute Capability" (Kineto's deviceProperties do not carry it).
MAX_BLOCKS_PER_SM = {(7, 0): 32, (7, 2): 32, (7, 5): 16, (8, 0): 32, (8, 6): 16, (8, 7): 16,
                     (8, 9): 24, (9, 0): 32, (10, 0): 32, (10, 3): 32, (12, 0): 32}

# Known GPUs, matched by a substring of the device name (the first match wins, so the longer
# names come first). Sources: per-SM limits of NVIDIA's parts from the CUDA C++ Programming
# Guide's compute-capability table (cc 8.0: 64K registers, 2048 threads, 32 blocks and 164 KB
# of shared memory per SM, 163 KB per block opted in; cc 9.0 and 10.0: the same with 228 KB and
# 227 KB); SM counts from NVIDIA's A100 (108 SMs) and H100 (SXM5: 132) architecture white papers
# and the H200 product brief (the same GH100: 132); B200's 148 SMs and every per-SM figure above
# are also what the deviceProperties of the fixture traces say (tests/fixtures: a100_*, h100_*,
# b200_eager). AMD: MI300X's 304 CUs and MI210's 104 CUs, 64 KB of LDS per CU, wavefronts of 64
# and 2048 work-items per CU, from AMD's CDNA 3 and CDNA 2 white papers and the MI300X / MI210
# data sheets, as the deviceProperties of mi300_* and mi210_gpu_only say too.
_K, _NV_REGS = 1024, 65536
KNOWN_GPUS: tuple[DeviceSpec, ...] = (
    DeviceSpec("A100", "nvidia", (8, 0), 108, 32, 2048, _NV_REGS, _NV_REGS, 164 * _K, 48 * _K,
               163 * _K, 32, "table (A100)"),
    DeviceSpec("H100 PCIe", "nvidia", (9, 0), 114, 32, 2048, _NV_REGS, _NV_REGS, 228 * _K,
               48 * _K, 227 * _K, 32, "table (H100 PCIe)"),
    DeviceSpec("H100", "nvidia", (9, 0), 132, 32, 2048, _NV_REGS, _NV_REGS, 228 * _K, 48 * _K,
               227 * _K, 32, "table (H100 SXM)"),
    DeviceSpec("H200", "nvidia", (9, 0), 132, 32, 2048, _NV_REGS, _NV_REGS, 228 * _K, 48 * _K,
               227 * _K, 32, "table (H200)"),
    DeviceSpec("B200", "nvidia", (10, 0), 148, 32, 2048, _NV_REGS, _NV_REGS, 228 * _K, 48 * _K,
               227 * _K, 32, "table (B200)"),
    DeviceSpec("MI300X", "amd", (9, 4), 304, 64, 2048, None, None, 64 * _K, 64 * _K, 64 * _K,
               None, "table (MI300X)"),
    DeviceSpec("MI210", "amd", (9, 0), 104, 64, 2048, None, None, 64 * _K, 64 * _K, 64 * _K,
               None, "table (MI210)"),
)

# deviceProperties key -> DeviceSpec field (ROCm's traces spell shared memory per CU otherwise).
_FIELDS = {"numSms": "sms", "warpSize": "warp_size",
           "maxThreadsPerMultiprocessor": "max_threads_per_sm",
           "regsPerMultiprocessor": "regs_per_sm", "regsPerBlock": "regs_per_block",
           "sharedMemPerMultiprocessor": "smem_per_sm",
           "maxSharedMemoryPerMultiProcessor": "smem_per_sm",
           "sharedMemPerBlock": "smem_per_block", "sharedMemPerBlockOptin": "smem_per_block_optin"}


def known_gpu(name: str) -> DeviceSpec | None:
    for spec in KNOWN_GPUS:
        if spec.name.lower() in name.lower():
            return spec
    return None


def unnamed_device(props: dict) -> str:
    """A device whose properties carry no name (ROCm traces of some versions write ""), said by
    its version and size, with the known GPU those match: "an AMD GPU of compute version 9.4,
    304 CUs (MI300X?)"."""
    major, minor = _int(props.get("computeMajor")), _int(props.get("computeMinor"))
    units = _int(props.get("numSms"))
    if major is None or minor is None:
        return ""
    amd = _int(props.get("warpSize")) == 64
    arch = (f"an AMD GPU of compute version {major}.{minor}" if amd else
            f"an NVIDIA GPU of compute capability {major}.{minor}")
    size = f", {units} {'CUs' if amd else 'SMs'}" if units else ""
    match = next((spec.name for spec in KNOWN_GPUS
                  if spec.vendor == ("amd" if amd else "nvidia")
                  and spec.compute == (major, minor) and spec.sms == units), "")
    return f"{arch}{size}" + (f" ({match}?)" if match else "")


def _properties(meta: dict, device: int | None) -> dict | None:
    props = meta.get("deviceProperties")
    if isinstance(props, dict):
        props = [props]
    if not isinstance(props, list):
        return None
    props = [p for p in props if isinstance(p, dict)]
    for p in props:
        if device is not None and p.get("id") == device:
            return p
    return props[0] if props else None


def _int(value) -> int | None:
    return int(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def device_spec(meta: dict, device: int | None = None) -> DeviceSpec | None:
    """The device `device` of a trace (its first when that id is not listed); None when neither
    the trace nor the table knows it."""
    props = _properties(meta, device)
    name = str(props.get("name", "")) if props else ""
    table = known_gpu(name) if name else None
    if not props:
        return table
    amd = _int(props.get("warpSize")) == 64 or "maxSharedMemoryPerMultiProcessor" in props
    major, minor = _int(props.get("computeMajor")), _int(props.get("computeMinor"))
    compute = (major, minor) if major is not None and minor is not None else None
    base = table or DeviceSpec(name, "amd" if amd else "nvidia", compute, None, 64 if amd else 32,
                               2048, None, None, None, None, None, None, "trace")
    found = {field: _int(props[key]) for key, field in _FIELDS.items()
             if _int(props.get(key)) is not None}
    spec = replace(base, name=name or base.name, compute=compute or base.compute, **found)
    if spec.vendor == "nvidia" and spec.compute in MAX_BLOCKS_PER_SM:
        spec = replace(spec, max_blocks_per_sm=MAX_BLOCKS_PER_SM[spec.compute])
    source = "trace" if table is None else f"trace + {table.source}"
    return replace(spec, source=source)
