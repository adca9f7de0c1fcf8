"""Which CPU-side events do work. On a GPU the device activities are the kernels; on a CPU the
"kernels" are the aten ops (and Inductor's C++ kernels) that compute, so the ones that only
reshape metadata or dispatch to other ops must be told apart by name."""
from __future__ import annotations

import functools
import re

from suites.traces.events import Event

STEP_PREFIX = "ProfilerStep#"  # torch.profiler's step ranges
# Launch calls: what `launch_api_us` sums and launch delays are measured from, CUDA's and ROCm's
# (HIP names its runtime calls hip*, in the same cuda_runtime category). Kineto may add a
# per-thread-stream suffix (_ptsz, _ptds) or a version (_v7000); is_launch_api strips them.
LAUNCH_APIS = frozenset({
    "cudaLaunchKernel", "cudaLaunchKernelExC", "cuLaunchKernel", "cuLaunchKernelEx",
    "cudaLaunchCooperativeKernel", "cudaGraphLaunch", "cudaMemcpyAsync", "cudaMemsetAsync",
    "hipLaunchKernel", "hipExtLaunchKernel", "hipExtModuleLaunchKernel", "hipModuleLaunchKernel",
    "hipLaunchCooperativeKernel", "hipGraphLaunch", "hipMemcpyAsync", "hipMemsetAsync",
    "runFunction - job_prep_and_submit_for_execution",  # MTIA's (in mtia_runtime)
})

# Kernels Inductor generates: pointwise, reduction, persistent reduction and template kernels on
# a GPU, C++ kernels on a CPU.
FUSED_KERNEL = re.compile(r"(triton_(poi|red|per|tem)_fused\w*|cpp_fused\w*)")

# Ops that only make a new view or allocate: no data is read or written.
METADATA_OPS = frozenset({
    "aten::view", "aten::_unsafe_view", "aten::view_as", "aten::_reshape_alias", "aten::t",
    "aten::transpose", "aten::permute", "aten::expand", "aten::expand_as", "aten::as_strided",
    "aten::unsqueeze", "aten::squeeze", "aten::slice", "aten::select", "aten::narrow",
    "aten::split", "aten::split_with_sizes", "aten::chunk", "aten::unbind", "aten::alias",
    "aten::detach", "aten::detach_", "aten::resolve_conj", "aten::resolve_neg",
    "aten::lift_fresh", "aten::empty", "aten::empty_like", "aten::empty_strided",
    "aten::result_type", "aten::size", "aten::stride", "aten::numel", "aten::dim",
    "aten::unflatten", "aten::is_same_size", "aten::set_", "aten::_local_scalar_dense_meta",
})

# Ops that only carry a copy out: the op a copy came from is the one around them.
COPY_WRAPPERS = frozenset({"aten::copy_", "aten::_to_copy", "aten::to", "aten::_copy_from",
                           "aten::_copy_from_and_resize", "aten::copy"})

# Ops whose own time is dispatch: the work happens in the ops they call.
COMPOSITE_OPS = frozenset({
    "aten::matmul", "aten::linear", "aten::einsum", "aten::scaled_dot_product_attention",
    "aten::_scaled_dot_product_attention_math", "aten::to", "aten::_to_copy", "aten::contiguous",
    "aten::clone", "aten::reshape", "aten::flatten", "aten::softmax", "aten::log_softmax",
    "aten::dropout", "aten::layer_norm", "aten::group_norm", "aten::rms_norm",
    "aten::masked_fill", "aten::zeros", "aten::ones", "aten::full", "aten::zeros_like",
    "aten::ones_like", "aten::full_like", "aten::new_zeros", "aten::zero_", "aten::repeat",
    "aten::convolution", "aten::_convolution", "aten::conv2d", "aten::batch_norm",
    "aten::_batch_norm_impl_index", "aten::max_pool2d", "aten::adaptive_avg_pool2d",
    "aten::gelu_", "aten::type_as", "aten::mT", "aten::square",
})


# Each predicate on a name is computed once per distinct name: a trace repeats a few hundred
# names over millions of events. Bounded, as a malformed trace may hold millions of names.
_per_name = functools.lru_cache(maxsize=1 << 16)

_API_SUFFIX = re.compile(r"(_ptsz|_ptds|_v\d+)+$")


@_per_name
def is_launch_api(name: str) -> bool:
    return name in LAUNCH_APIS or _API_SUFFIX.sub("", name) in LAUNCH_APIS


@_per_name
def is_sync_api(name: str) -> bool:
    """cudaDeviceSynchronize, cudaStreamSynchronize, hipEventSynchronize, another runtime's
    stream or device synchronize...: the host waits. Asked of runtime calls only."""
    return "synchronize" in name.lower()


@_per_name
def is_copy_api(name: str) -> bool:
    """A runtime call that copies or fills memory (async or not): cudaMemcpyAsync, hipMemcpy..."""
    return name.startswith(("cuda", "cu", "hip")) and ("Memcpy" in name or "Memset" in name)


def is_inductor_cpu_kernel(name: str) -> bool:
    return "cpp_fused" in name or name.startswith("cpp_kernel")


# Names that only a GPU job's host side records: a GPU library's calls (cuDNN, NCCL, RCCL, the
# CUDA runtime's), the fused attention kernels' wrappers, stream handling.
_GPU_LIBRARY = re.compile(r"cuda|cudnn|nccl|rccl|_flash_attention|_efficient_attention|"
                          r"record_stream", re.IGNORECASE)
# An op that names its CPU kernel: SDPA's flash backend on a CPU is
# aten::_scaled_dot_product_flash_attention_for_cpu (and its _backward), and the like
# (aten::_weight_int4pack_mm_for_cpu, aten::_grid_sampler_2d_cpu_fallback,
# quantized::int4mm_packed_weight_cpu): the name says where it ran, whatever library name it
# shares with a GPU's op. Not aten::_to_cpu, a GPU job's copy to the host.
_CPU_KERNEL = re.compile(r"_for_cpu(_|$)|_cpu_fallback|(?<!_to)_cpu$", re.IGNORECASE)
# A question any device asks about a GPU library before it computes: aten::cudnn_is_acceptable
# (every CPU convolution and batch norm asks it), aten::_use_cudnn_rnn_flatten_weight.
_LIBRARY_QUESTION = re.compile(r"::_?(use|is|can_use|has)_|_is_acceptable", re.IGNORECASE)


@_per_name
def names_cpu_kernel(name: str) -> bool:
    """An op that computes on the CPU by its name: one that names its CPU kernel (`_for_cpu`),
    or Inductor's C++ kernels. Its self time is computation, on any trace."""
    return bool(_CPU_KERNEL.search(name)) or is_inductor_cpu_kernel(name)


@_per_name
def is_gpu_op_name(name: str) -> bool:
    """Whether a host-side op's name says a GPU ran the job (device_time.gpu_job_hint). Never an
    op any CPU runs: tests/test_trace_analysis.py checks every op with a CPU kernel in torch."""
    return (bool(_GPU_LIBRARY.search(name)) and not names_cpu_kernel(name)
            and not _LIBRARY_QUESTION.search(name))


def is_cpu_kernel(op: Event) -> bool:
    """A CPU op that computes: Inductor's C++ kernels, and namespaced ops (aten::, mkldnn::...)
    that are neither metadata-only nor known composites. Decided by name alone, so the count per
    call does not flip between steps; an unknown wrapper counts, with its (small) self time."""
    return is_inductor_cpu_kernel(op.name) or is_compute_op_name(op.name)


@_per_name
def is_compute_op_name(name: str) -> bool:
    """A namespaced op (aten::, mkldnn::...) that is neither metadata-only nor a known wrapper;
    a collective (c10d::allreduce_) is communication, not compute."""
    return ("::" in name and name not in METADATA_OPS and name not in COMPOSITE_OPS
            and not is_cpu_collective(name))


# The op each scaled_dot_product_attention backend runs under, as it appears in the profile.
SDPA_BACKEND_OPS = {
    "aten::_scaled_dot_product_flash_attention": "flash",
    "aten::_scaled_dot_product_flash_attention_for_cpu": "flash",
    "aten::_scaled_dot_product_efficient_attention": "efficient",
    "aten::_scaled_dot_product_cudnn_attention": "cudnn",
    "aten::_scaled_dot_product_fused_attention_overrideable": "overrideable",
    "aten::_scaled_dot_product_attention_math": "math",
}


def sdpa_backend(op_names) -> str | None:
    """Which SDPA backend ran, from the op names of a call; None if no SDPA ran."""
    found = sorted({SDPA_BACKEND_OPS[name] for name in op_names if name in SDPA_BACKEND_OPS})
    return "+".join(found) if found else None


# Runtime calls that set a device up once: context creation (cudaFree(0), the first stream
# query), device queries, module loading. Seconds on a cold machine, nothing after.
SETUP_APIS = frozenset({
    "cuInit", "cuDevicePrimaryCtxRetain", "cuCtxCreate", "cuModuleLoad", "cuModuleLoadData",
    "cuModuleLoadDataEx", "cuLibraryLoadData", "cuModuleGetFunction", "cudaFree",
    "cudaGetDeviceCount", "cudaSetDevice", "cudaGetDeviceProperties", "cudaDeviceGetAttribute",
    "cudaDeviceGetStreamPriorityRange", "cudaStreamCreate", "cudaStreamCreateWithFlags",
    "cudaStreamCreateWithPriority", "cudaHostAlloc", "cudaHostRegister", "cudaDriverGetVersion",
    "cudaRuntimeGetVersion", "hipInit", "hipFree", "hipGetDeviceCount", "hipSetDevice",
    "hipGetDeviceProperties", "hipDeviceGetAttribute", "hipDeviceGetStreamPriorityRange",
    "hipStreamCreate", "hipStreamCreateWithFlags", "hipStreamCreateWithPriority",
    "hipHostMalloc", "hipHostRegister", "hipModuleLoad", "hipModuleLoadData",
})
# `enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__`: the loader's own range.
DATA_LOADING = re.compile(r"^enumerate\(DataLoader\)")
# Collectives run by the host: gloo's work ranges, the c10d ops, the param-comms record (on a
# GPU its NCCL kernels are the communication; on a CPU these ranges are).
CPU_COLLECTIVE = re.compile(r"^(gloo:|c10d::|mpi:|ucc:|record_param_comms$)")


# Device and pinned-host memory allocation and release (the caching allocator's own calls to the
# runtime; expandable segments' virtual-memory calls): the host waits in them.
_ALLOC_API = re.compile(r"^(cuda|hip|cu)(Malloc|Free|HostAlloc|HostMalloc|HostFree|MallocHost|"
                        r"FreeHost|MemAlloc|MemFree|MemCreate|MemRelease|MemMap|MemUnmap|"
                        r"MemAddressReserve|MemAddressFree|MemSetAccess)")


@_per_name
def is_stream_wait_api(name: str) -> bool:
    """cudaStreamWaitEvent, hipStreamWaitEvent (torch's wait_stream, wait_event): the work
    queued after it on its stream waits for an event."""
    return "streamwaitevent" in name.lower()


@_per_name
def is_alloc_api(name: str) -> bool:
    return bool(_ALLOC_API.match(name))


@_per_name
def is_setup_api(name: str) -> bool:
    return _API_SUFFIX.sub("", name) in SETUP_APIS or name.startswith(("cuDevicePrimaryCtx",
                                                                        "hipGetDeviceProperties"))


@_per_name
def is_data_loading(name: str) -> bool:
    return bool(DATA_LOADING.match(name))


@_per_name
def is_cpu_collective(name: str) -> bool:
    return bool(CPU_COLLECTIVE.match(name))
