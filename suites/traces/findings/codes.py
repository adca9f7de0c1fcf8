"""Finding codes and severities: the names detectors emit, the narrative groups and
findings.csv holds. One definition each, so a renamed code cannot leave a reader behind."""
from enum import StrEnum


class Code(StrEnum):
    # what bounds a step: one each (step_bound.py, bounds.py)
    OVERHEAD_BOUND = "overhead_bound"
    COMPUTE_BOUND = "compute_bound"
    MEMORY_BOUND = "memory_bound"
    COMM_BOUND = "comm_bound"
    COPY_BOUND = "copy_bound"
    DEVICE_WAIT = "device_wait"
    SYNC_BOUND = "sync_bound"
    DATA_BOUND = "data_bound"
    INIT_BOUND = "init_bound"
    HOST_CODE_BOUND = "host_code_bound"
    # no bound: a trace without the device's activities, or without the host's
    NO_VERDICT = "no_verdict"
    # what else a step shows (bounds.py)
    STEPS_DIFFER = "steps_differ"
    DOMINANT_KERNEL = "dominant_kernel"
    COMM_SHARE = "comm_share"
    ONE_TIME_SETUP = "one_time_setup"
    IDLE_GAPS = "idle_gaps"
    # what fused against the baseline (fusion.py, copies.py)
    DISPATCHER_FUSION = "dispatcher_fusion"
    NO_DISPATCHER_FUSION = "no_dispatcher_fusion"
    KERNELS_FELL = "kernels_fell"
    KERNELS_ROSE = "kernels_rose"
    HIDDEN_COPY = "hidden_copy"
    MEMORY_SAVED = "memory_saved"
    COPIES = "copies"  # no baseline: what the copies are and where they come from
    # which kernels ran (kernels.py)
    METADATA_OPS = "metadata_ops"
    TENSOR_CORES_UNUSED = "tensor_cores_unused"
    SDPA_BACKEND = "sdpa_backend"
    INDUCTOR_KERNELS = "inductor_kernels"
    KERNEL_MIX = "kernel_mix"  # a compute-bound trace's device time mostly in small kernels
    # GEMM kernels' rates and kernels' occupancy (gemms.py, occupancy.py)
    GEMM_RATES_DIFFER = "gemm_rates_differ"
    OCCUPANCY_LIMITED = "occupancy_limited"
    # torch.compile's own cost (compiled.py)
    COMPILE_HOST_OVERHEAD = "compile_host_overhead"
    RECOMPILE = "recompile"
    # time across steps (timeline.py)
    COLD_START = "cold_start"
    LATE_FIRST_OP = "late_first_op"
    KERNEL_VARIANCE = "kernel_variance"
    QUEUE_FULL = "queue_full"
    # several devices in one trace (devices.py)
    SEVERAL_DEVICES = "several_devices"
    # what the profiler itself put in the trace (artifacts.py)
    PROFILER_FLUSH = "profiler_flush"
    PROFILER_BUFFER_GAPS = "profiler_buffer_gaps"
    # the op tree of a call (tree.py)
    OP_TREE_DIFF = "op_tree_diff"
    FAT_LEAF_OP = "fat_leaf_op"
    # across a row's passes and rounds, after the sweep (measured.py)
    ABOVE_PEAK = "above_peak"
    PASSES_DISAGREE = "passes_disagree"
    KERNEL_SPEEDUP_DIFFERS = "kernel_speedup_differs"
    SLOW_CALLS = "slow_calls"
    ROUNDS_DROPPED = "rounds_dropped"
    PAGE_FAULTS_DIFFER = "page_faults_differ"
    TWO_STATES = "two_states"
    LAUNCH_FLOOR = "launch_floor"  # exposed overhead against the run's launch floors
    # across the modes of a training case (training.py)
    BACKWARD_SHARE = "backward_share"
    FUSION_PAYS_WHERE = "fusion_pays_where"
    ACTIVATIONS_SAVED = "activations_saved"
    COMPILE_PARTITION = "compile_partition"
    # a step after the measurement that raised (core.step_failed): the row stands without it
    STEP_FAILED = "step_failed"


class Severity(StrEnum):
    INFO = "info"  # how it is
    NOTICE = "notice"  # worth knowing
    WARNING = "warning"  # costs time, or a number is not to be trusted


# What bounds a profile's steps (its primary bound): a profile gets exactly one of these.
BOUND_CODES = (Code.OVERHEAD_BOUND, Code.COMPUTE_BOUND, Code.MEMORY_BOUND, Code.COMM_BOUND,
               Code.COPY_BOUND, Code.DEVICE_WAIT, Code.SYNC_BOUND, Code.DATA_BOUND,
               Code.INIT_BOUND, Code.HOST_CODE_BOUND)
# What a variant changed against the baseline, in the order the report states it.
CHANGE_CODES = (Code.DISPATCHER_FUSION, Code.NO_DISPATCHER_FUSION, Code.KERNELS_FELL,
                Code.KERNELS_ROSE, Code.HIDDEN_COPY, Code.MEMORY_SAVED)
