"""Which autotune configs each GPU target can run well, decided before any is timed.

The autotuner times every config it is given, and keeps one that spills registers if that one
happens to win on a quiet machine; a config over the target's shared memory fails to launch.
So each kernel prunes its configs per call (`early_config_prune`) by the rules here, which
`suites/tools/triton_targets.py` checks against the compiler for sm_80 and sm_90 (Triton's
own ptxas, no GPU needed): every config kept on a target compiles within its shared memory
and without spills, and none is dropped that compiles clean. It compiles each kernel as the
suites launch it, specialised as Triton's runtime specialises the arguments (unit strides
as constants, 16-divisible sizes, strides and addresses): at such shapes the loads are
vectorised and multi-buffered in shared memory. At a shape with sizes that are not multiples
of 16 the compiled kernel differs (less shared memory, more registers: big 16-bit tiles
spill there); the table does not model those launches. A target not in the tables (a newer
GPU) keeps every config that fits its shared memory.
"""
from __future__ import annotations

# Shared memory per block with the opt-in carve-out, bytes (CUDA's sharedMemPerBlockOptin).
SMEM_LIMIT = {80: 166_912, 86: 101_376, 89: 101_376, 90: 232_448}
DEFAULT_SMEM = 99 * 1024

# The targets and flash head dims (BLOCK_D) the table below was made for; elsewhere the
# kernels fall back on estimates.
CHECKED_ARCHS = (80, 90)
CHECKED_HEAD_DIMS = (64, 128)
# Configs that do not fit a target, as the compiler says for this project's kernels (with the
# epilogues, layouts and run-time specialisation of their launches at the suites' shapes, the
# training steps' too: the backward's dx and dw GEMMs, the flash forward that keeps the lse):
# over its shared memory, or spilling registers (a 16-bit config always; an fp32 one where
# another fp32 config of the kernel runs clean). No bf16 config of gemm.py's kernel is unfit.
# (kernel, dtype, arch, variant) -> config keys; the variant is what changes the registers a
# config needs: the head dim for flash (`D128`), and for a GEMM whether K is a multiple of the
# block depth (`even`, or `masked` loads) and whether the epilogue adds a residual. Printed by
# `python -m suites.tools.triton_targets --table`, which fails when it is out of date.
UNFIT: dict[tuple[str, str, int, str], frozenset] = {
    ('flash', 'bfloat16', 80, 'D128'): frozenset({
        (128, 64, 4, 3), (128, 64, 4, 4),
    }),
    ('flash', 'bfloat16', 90, 'D128'): frozenset({
        (128, 64, 4, 3), (128, 64, 4, 4),
    }),
    ('flash', 'float32', 90, 'D64'): frozenset({
        (64, 64, 8, 2), (128, 64, 4, 3), (128, 64, 4, 4), (128, 64, 8, 3),
    }),
    ('geglu', 'bfloat16', 80, 'even'): frozenset({
        (128, 64, 64, 4, 4), (128, 128, 32, 8, 4), (128, 128, 64, 8, 3), (128, 128, 64, 8, 4),
    }),
    ('geglu', 'bfloat16', 80, 'masked'): frozenset({
        (128, 64, 64, 4, 4), (128, 128, 32, 8, 4), (128, 128, 64, 8, 3), (128, 128, 64, 8, 4),
    }),
    ('geglu', 'float32', 80, 'even'): frozenset({
        (64, 64, 32, 4, 4), (64, 128, 64, 4, 4), (128, 64, 64, 4, 4), (128, 128, 64, 8, 3),
        (128, 128, 64, 8, 4),
    }),
    ('geglu', 'float32', 80, 'masked'): frozenset({
        (64, 128, 64, 4, 4), (128, 64, 64, 4, 4), (128, 128, 64, 8, 3), (128, 128, 64, 8, 4),
    }),
    ('geglu', 'float32', 90, 'even'): frozenset({
        (64, 128, 64, 4, 4), (128, 64, 64, 4, 4), (128, 128, 64, 8, 3), (128, 128, 64, 8, 4),
    }),
    ('geglu', 'float32', 90, 'masked'): frozenset({
        (64, 128, 64, 4, 4), (128, 64, 64, 4, 4), (128, 128, 64, 8, 3), (128, 128, 64, 8, 4),
    }),
    ('gemm', 'float32', 80, 'even'): frozenset({
        (128, 128, 32, 4, 4), (128, 128, 64, 4, 4), (128, 128, 64, 8, 4), (128, 256, 64, 8, 3),
        (256, 128, 64, 8, 3),
    }),
    ('gemm', 'float32', 80, 'even+residual'): frozenset({
        (128, 128, 32, 4, 4), (128, 128, 64, 4, 4), (128, 128, 64, 8, 4), (128, 256, 64, 8, 3),
        (256, 128, 64, 8, 3),
    }),
    ('gemm', 'float32', 80, 'masked'): frozenset({
        (128, 128, 32, 4, 4), (128, 128, 64, 4, 4), (128, 128, 64, 8, 4), (128, 256, 64, 8, 3),
        (256, 128, 64, 8, 3),
    }),
    ('gemm', 'float32', 80, 'masked+residual'): frozenset({
        (128, 128, 32, 4, 4), (128, 128, 64, 4, 4), (128, 128, 64, 8, 4), (128, 256, 64, 8, 3),
        (256, 128, 64, 8, 3),
    }),
    ('gemm', 'float32', 90, 'even'): frozenset({
        (64, 64, 32, 4, 4), (128, 128, 32, 4, 4), (128, 128, 64, 4, 4), (128, 256, 64, 8, 3),
        (256, 128, 64, 8, 3),
    }),
    ('gemm', 'float32', 90, 'even+residual'): frozenset({
        (128, 128, 32, 4, 4), (128, 128, 64, 4, 4), (128, 256, 64, 8, 3), (256, 128, 64, 8, 3),
    }),
    ('gemm', 'float32', 90, 'masked'): frozenset({
        (64, 64, 32, 4, 4), (128, 128, 32, 4, 4), (128, 128, 64, 4, 4), (128, 256, 64, 8, 3),
        (256, 128, 64, 8, 3),
    }),
    ('gemm', 'float32', 90, 'masked+residual'): frozenset({
        (128, 128, 32, 4, 4), (128, 128, 64, 4, 4), (128, 256, 64, 8, 3), (256, 128, 64, 8, 3),
    }),
    ('gemm_tma', 'float32', 90, 'b-kmajor'): frozenset({
        (128, 64, 64, 4, 4), (128, 128, 64, 4, 4), (128, 128, 64, 4, 5), (128, 128, 64, 8, 4),
        (128, 256, 64, 8, 3),
    }),
    ('gemm_tma', 'float32', 90, 'b-rowmajor'): frozenset({
        (128, 64, 64, 4, 4), (128, 128, 64, 4, 4), (128, 128, 64, 4, 5), (128, 128, 64, 8, 4),
        (128, 256, 64, 8, 3),
    }),
}


def flash_variant(block_d: int) -> str:
    return f"D{block_d}"


def gemm_variant(even_k: bool, residual: bool = False) -> str:
    return ("even" if even_k else "masked") + ("+residual" if residual else "")


def config_key(config) -> tuple:
    """(BM, BN, BK, warps, stages) of a GEMM config, (BM, BN, warps, stages) of a flash one."""
    kw = config.kwargs
    if "BLOCK_SIZE_M" in kw:
        return (kw["BLOCK_SIZE_M"], kw["BLOCK_SIZE_N"], kw["BLOCK_SIZE_K"], config.num_warps,
                config.num_stages)
    return (kw["BLOCK_M"], kw["BLOCK_N"], config.num_warps, config.num_stages)


def arch_of(capability: tuple[int, int]) -> int:
    return capability[0] * 10 + capability[1]


def _itemsize(dtype: str) -> int:
    return 4 if dtype == "float32" else 2


def gemm_keeps(kernel: str, config, dtype: str, arch: int, even_k: bool,
               residual: bool = False) -> bool:
    """Whether `kernel` (gemm or geglu) runs `config` for `dtype` on `arch`, with or without
    masked K loads and a residual epilogue: not unfit there. On a target not checked, the
    autotuner drops what is out of resources itself."""
    key = (kernel, dtype, arch, gemm_variant(even_k, residual))
    return config_key(config) not in UNFIT.get(key, frozenset())


def gemm_prune(kernel: str):
    """An `early_config_prune` for a GEMM kernel (its first pointer argument is the A operand)."""
    def prune(configs, named_args, **kwargs):
        import torch
        a = next(v for k, v in named_args.items() if k.endswith("_ptr"))
        arch = arch_of(torch.cuda.get_device_capability(a.device))
        dtype = str(a.dtype).removeprefix("torch.")
        K, residual = named_args["K"], bool(kwargs.get("HAS_RESIDUAL", False))
        kept = [c for c in configs if gemm_keeps(kernel, c, dtype, arch,
                                                 K % c.kwargs["BLOCK_SIZE_K"] == 0, residual)]
        return kept or configs
    return prune


# --- the Hopper TMA GEMM (gemm_tma.py) ---------------------------------------------------

def tma_variant(b_kmajor: bool) -> str:
    """B's layout (row-major, or a weight.t() view): its descriptor and shared-memory order
    differ; the loads never mask K (the copy engine pads), so K does not matter."""
    return "b-kmajor" if b_kmajor else "b-rowmajor"


def tma_keeps(config, dtype: str, arch: int, b_kmajor: bool) -> bool:
    """Whether the TMA GEMM runs `config` for `dtype` on `arch` with this B layout."""
    key = ("gemm_tma", dtype, arch, tma_variant(b_kmajor))
    return config_key(config) not in UNFIT.get(key, frozenset())


def tma_prune(configs, named_args, **kwargs):
    """The TMA GEMM's `early_config_prune` (B's layout comes as the B_KMAJOR keyword)."""
    import torch
    a = named_args["a_ptr"]
    arch = arch_of(torch.cuda.get_device_capability(a.device))
    dtype = str(a.dtype).removeprefix("torch.")
    b_kmajor = bool(kwargs.get("B_KMAJOR", False))
    return [c for c in configs if tma_keeps(c, dtype, arch, b_kmajor)] or configs


# --- flash attention ----------------------------------------------------------------------

def flash_smem_bytes(config, dtype: str, block_d: int) -> int:
    """The Q tile (twice for fp32: tf32x3 splits it), and num_stages buffers of K and V."""
    elt = _itemsize(dtype)
    tiles = config.kwargs["BLOCK_M"] * (2 if elt == 4 else 1) + \
        2 * config.num_stages * config.kwargs["BLOCK_N"]
    return elt * block_d * tiles


def _live_fp32_per_thread(config, block_d: int) -> float:
    """The accumulator (BLOCK_M, BLOCK_D) and the scores (BLOCK_M, BLOCK_N) per thread."""
    return config.kwargs["BLOCK_M"] * (block_d + config.kwargs["BLOCK_N"]) / (32 * config.num_warps)


def flash_keeps(config, dtype: str, arch: int, block_d: int, seq_len: int,
                smem_limit: int | None = None) -> bool:
    """Whether the flash kernel runs `config` here: its shared-memory estimate (an upper
    bound) within the target's, not taller than the sequence, and, on a checked target, not
    unfit by the compiler's word; elsewhere within a register estimate (about 128 live fp32
    values per thread fit in 255 registers; fp32 inputs need about half as many, since tf32x3
    splits each operand in two)."""
    limit = smem_limit or SMEM_LIMIT.get(arch, DEFAULT_SMEM)
    tall = max(64, 1 << max(0, seq_len - 1).bit_length())
    if flash_smem_bytes(config, dtype, block_d) > limit or config.kwargs["BLOCK_M"] > tall:
        return False
    if arch in CHECKED_ARCHS and block_d in CHECKED_HEAD_DIMS:
        key = ("flash", dtype, arch, flash_variant(block_d))
        return config_key(config) not in UNFIT.get(key, frozenset())
    return _live_fp32_per_thread(config, block_d) <= (64 if dtype == "float32" else 128)


def flash_prune(configs, named_args, **kwargs):
    """The flash kernel's `early_config_prune`: the configs flash_keeps on this GPU, or, if
    none, the one with the smallest shared memory (a launch that works beats none)."""
    import torch
    q = named_args["q_ptr"]
    props = torch.cuda.get_device_properties(q.device)
    arch = arch_of((props.major, props.minor))
    dtype = str(q.dtype).removeprefix("torch.")
    block_d = kwargs.get("BLOCK_D", 64)
    limit = getattr(props, "shared_memory_per_block_optin", None) or SMEM_LIMIT.get(arch,
                                                                                   DEFAULT_SMEM)
    kept = [c for c in configs
            if flash_keeps(c, dtype, arch, block_d, named_args["seq_len"], limit)]
    return kept or [min(configs, key=lambda c: flash_smem_bytes(c, dtype, block_d))]
