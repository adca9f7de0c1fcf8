"""What each finding says, and where in the Hugging Face "Profiling in PyTorch" series the reading
comes from: the README's table of findings is generated from this (suites/tools/docs.py), and
a test checks that every code has its entry.

SERIES names the posts by what they profile; "fusebench" marks a finding the posts do not make
(the tool's own checks of its numbers).
"""
from __future__ import annotations

from suites.traces.findings.codes import Code

SERIES = {
    "matmul": "part 1: torch.add(torch.matmul(x, w), b), its profiler table and trace",
    "linear": "part 2: nn.Linear and torch.compile",
    "mlp": "part 3: the GeGLU MLP, fused by Inductor",
    "attention": "part 4: attention, naive against the SDPA backends",
    "fusebench": "fusebench's own check (not in the series)",
}

# code -> (what it says, the post the reading comes from: a SERIES key)
CATALOG: dict[str, tuple[str, str]] = {
    Code.OVERHEAD_BOUND: ("the device waits on the host for most of a step: Python, dispatch "
                          "and launches, not kernels, set the time (size 64)", "matmul"),
    Code.COMPUTE_BOUND: ("the device is busy and the work's FLOP per byte is above the ridge "
                         "point: the kernels' arithmetic sets the time (size 4096)", "matmul"),
    Code.MEMORY_BOUND: ("the device is busy on work below the ridge point: bandwidth sets the "
                        "time", "mlp"),
    Code.COMM_BOUND: ("exposed collectives take the largest share of a busy step", "fusebench"),
    Code.COPY_BOUND: ("exposed memory copies take the largest share of a busy step", "matmul"),
    Code.DEVICE_WAIT: ("the device idles with work queued: it waits on an event or another "
                       "stream", "fusebench"),
    Code.SYNC_BOUND: ("the device waits while the host blocks on syncs", "matmul"),
    Code.DATA_BOUND: ("the step waits on its DataLoader", "fusebench"),
    Code.INIT_BOUND: ("one-time set-up calls dominate the step", "matmul"),
    Code.HOST_CODE_BOUND: ("the device waits while the program's own host code runs (named "
                           "ranges that launch nothing: preprocessing)", "fusebench"),
    Code.NO_VERDICT: ("a trace missing one side: the device's activities, or the host's calls "
                      "behind a mostly idle device", "fusebench"),
    Code.STEPS_DIFFER: ("the profiled steps disagree on their verdict", "matmul"),
    Code.DOMINANT_KERNEL: ("one kernel takes most of the device time", "matmul"),
    Code.COMM_SHARE: ("the share of device time in collectives", "fusebench"),
    Code.ONE_TIME_SETUP: ("set-up calls (allocation, initialisation) inside a step", "matmul"),
    Code.IDLE_GAPS: ("the device sits idle between kernels: launch gaps", "matmul"),
    Code.DISPATCHER_FUSION: ("aten::addmm replaced aten::mm + aten::add: the bias add moved into "
                             "the GEMM call", "matmul"),
    Code.NO_DISPATCHER_FUSION: ("the library call did not fuse what it could", "linear"),
    Code.KERNELS_FELL: ("fewer kernels per call than the baseline: fusion removed launches "
                        "and memory round trips", "mlp"),
    Code.KERNELS_ROSE: ("more kernels per call than the baseline", "attention"),
    Code.HIDDEN_COPY: ("a copy the code does not write (addmm's bias broadcast: a "
                       "device-to-device copy under torch.compile)", "matmul"),
    Code.MEMORY_SAVED: ("a fused variant's peak memory at least 25% under the baseline's: the "
                        "intermediates it never writes (the MLP's gelu(g), attention's scores)",
                        "mlp"),
    Code.COPIES: ("what the copies in a call are and where they come from", "matmul"),
    Code.METADATA_OPS: ("ops that only change metadata (views, transposes): host time, no "
                        "kernel", "linear"),
    Code.TENSOR_CORES_UNUSED: ("fp32 GEMMs on SIMT kernels (sgemm): tensor cores unused",
                               "matmul"),
    Code.SDPA_BACKEND: ("which scaled_dot_product_attention backend ran", "attention"),
    Code.KERNEL_MIX: ("a GPU-bound trace whose device time is mostly small kernels "
                      "(elementwise, copies, normalisation), not GEMMs: fusion is the lever",
                      "mlp"),
    Code.INDUCTOR_KERNELS: ("Inductor's own fused kernels (triton_poi_fused_*, cpp_fused_*) "
                            "and what they fused", "mlp"),
    Code.GEMM_RATES_DIFFER: ("GEMMs of equal FLOPs run at different TFLOP/s: the library chose "
                             "different kernels (tiles) for the shapes, named in the profile",
                             "matmul"),
    Code.OCCUPANCY_LIMITED: ("a kernel with a large share of device time whose registers or "
                             "shared memory hold its theoretical occupancy down (never said of "
                             "attention kernels: low occupancy is their design)", "attention"),
    Code.COMPILE_HOST_OVERHEAD: ("torch.compile's guard and wrapper cost per call on the host",
                                 "linear"),
    Code.RECOMPILE: ("torch.compile compiled again inside the profiled calls", "linear"),
    Code.COLD_START: ("the first profiled step is slower than the rest (caches, allocator, "
                      "autotune)", "matmul"),
    Code.LATE_FIRST_OP: ("the step's first op starts late: host work, or a wait for the "
                         "device, before any launch",
                         "matmul"),
    Code.KERNEL_VARIANCE: ("one kernel's time varies across steps", "matmul"),
    Code.QUEUE_FULL: ("the host runs ahead of the device: the launch queue is full",
                      "matmul"),
    Code.SEVERAL_DEVICES: ("one process drives several devices (a model split across GPUs): "
                           "each device's busy share alone, and whether they work at once or "
                           "take turns, each idle while the other works", "fusebench"),
    Code.PROFILER_FLUSH: ("the long cudaDeviceSynchronize at the end of the active window is "
                          "the profiler's flush, not the program's cost", "matmul"),
    Code.PROFILER_BUFFER_GAPS: ("gaps between kernels that overlap an Activity Buffer Request: "
                                "the profiler allocating its buffers", "matmul"),
    Code.OP_TREE_DIFF: ("the ops a variant's call runs against the baseline's, from the op "
                        "tree: added, removed, replaced (aten::linear -> aten::t + "
                        "aten::addmm; compile removed aten::t)", "linear"),
    Code.FAT_LEAF_OP: ("a library call whose own (self) host time is most of the call, with "
                       "children that take little: cuDNN SDPA's per-call plan selection",
                       "attention"),
    Code.SLOW_CALLS: ("a share of the calls pays a cost of its own: us/call (the mean) over "
                      "10% above the median call", "fusebench"),
    Code.ABOVE_PEAK: ("faster than the measured roofline allows: the peak probe or the op's "
                      "model is off", "fusebench"),
    Code.PASSES_DISAGREE: ("the timing rounds' speedup and the profile's device-time ratio "
                           "differ by over 1.5x", "fusebench"),
    Code.KERNEL_SPEEDUP_DIFFERS: ("kernels alone gain more or less than a call's latency: the "
                                  "host path makes the difference", "fusebench"),
    Code.ROUNDS_DROPPED: ("some timing rounds were not clean and were left out", "fusebench"),
    Code.PAGE_FAULTS_DIFFER: ("many more page faults a call than the baseline: the variant "
                              "maps fresh pages every call", "fusebench"),
    Code.TWO_STATES: ("the variant's own clean rounds fall into two groups far apart: a slow "
                      "state of its own, kept in its figures", "fusebench"),
    Code.LAUNCH_FLOOR: ("a call's exposed overhead against the eager dispatch floor its run "
                        "measured at its start (and, for Triton rows, the empty kernel's "
                        "launch): how many ops' worth of dispatch it is", "fusebench"),
    Code.BACKWARD_SHARE: ("how much of one training step (fwd_bwd) the backward takes, from "
                          "the case's bwd row (or fwd_bwd minus fwd)", "fusebench"),
    Code.FUSION_PAYS_WHERE: ("in which half of a training step a variant's speedup over the "
                             "baseline clears 1 by its interval: forward, backward, both or "
                             "neither", "fusebench"),
    Code.ACTIVATIONS_SAVED: ("a variant keeps less (or more) for backward than the baseline: "
                             "the tensors and MiB autograd saves during its forward",
                             "fusebench"),
    Code.COMPILE_PARTITION: ("how torch.compile split a training step: the tensors its "
                             "forward saves for backward and the forward ops its backward "
                             "recomputes instead (AOTAutograd's min-cut partition, read from "
                             "the graphs)", "fusebench"),
    Code.STEP_FAILED: ("a step after the measurement (a trace reader, a detector, the derived "
                       "columns) raised on this row: the row is kept, without what that step "
                       "adds; the statement names the step and the exception", "fusebench"),
}


def markdown() -> str:
    """The README's table of findings: code, what it says, where it comes from."""
    lines = ["| finding | what it says | from |", "| --- | --- | --- |"]
    lines += [f"| `{code}` | {what} | {SERIES[post]} |" for code, (what, post) in CATALOG.items()]
    return "\n".join(lines)
