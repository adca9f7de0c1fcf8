"""Every column of a run's tables, once: name, unit, type, table header and a one-line meaning.

The writers order and type their tables by these lists, the readers check and convert with
them, the report and the README's metric table print their meanings. A meaning may name a
fact the code holds elsewhere in braces ({launch_apis}); suites/reports/run/conventions.py fills it
in from that code, so the text cannot drift from what the code does.
"""
from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum


class Status(StrEnum):
    """What happened to a (case, variant). Every one is a row; only ok rows carry timings."""

    OK = "ok"
    SKIPPED = "skipped"
    FAILED = "failed"
    INCORRECT = "incorrect"
    NOISY = "noisy"


STATUS_MEANING = {
    Status.OK: "checked, timed and profiled",
    Status.SKIPPED: "the variant cannot run here, or may not be timed here (the reason says which)",
    Status.FAILED: "it raised (a compile error, out of memory...): the reason holds the error",
    Status.INCORRECT: "it ran but failed the correctness check, so it was not timed",
    Status.NOISY: ("checked and timed, but too few timing rounds were clean (the machine was "
                   "contended): the reason says how many and why; its figures, from every round, "
                   "stay in the table but are never shown as a result"),
}


# A profile judged like a timing round (suites/harness/profile_guard.py): its figures are fact
# only when it was clean, or when there was none (no trace, profile=off: nothing to mark).
PROFILE_CLEAN = "clean"


def profile_unclean(state) -> bool:
    """Whether a row's profile_state (a ResultRow's, or a cell read back from a CSV: None, NaN
    or "" when the row had no profile) says its profile figures are not the call's. Every page
    that marks, trusts or drops a row's profile asks this, so none decides it differently."""
    return isinstance(state, str) and state not in ("", PROFILE_CLEAN)


TEXT, NUMBER = "text", "number"
# The run's own A/A control (timing.aa_control=true): a second copy of the baseline, timed as a
# variant of its own in every round. Its speedup over the baseline is 1 by construction, so what
# it shows is the noise of the run itself; compare reads it as the run's drift.
AA_CONTROL = "aa_control"


@dataclass(frozen=True)
class Column:
    name: str
    unit: str  # "" when the value has none
    kind: str  # TEXT | NUMBER
    meaning: str
    label: str = ""  # table header; the name when empty
    part: str = ""  # the ResultRow part holding it (timing, check, profile, roofline); "" = the row

    @property
    def header(self) -> str:
        return self.label or self.name


# The row's identity; the op's parameters follow these, one column each, in the op's order.
LEADING = (
    Column("suite", "", TEXT, "the suite: its op's name, configured by conf/suite/<suite>.yaml"),
    Column("op", "", TEXT, "the block measured (kernels/<op>.py)"),
    Column("case_id", "", TEXT, "the case's parameters and dtype, e.g. M1024-N1024-K1024-bf16",
       "case"),
    Column("variant", "", TEXT, "the implementation measured", "variant"),
    Column("family", "", TEXT, "eager, library, compile or triton"),
    Column("dtype", "", TEXT, "float32, bfloat16 or float16"),
    Column("device", "", TEXT, "cpu or cuda"),
)

METRICS = (
    Column("status", "", TEXT, "{statuses}"),
    Column("reason", "", TEXT, "why the row is not ok, or why its profile columns are empty"),
    Column("threads", "", NUMBER, "CPU threads the run set (torch.set_num_threads)"),
    Column("cache", "", TEXT, "cold: L2 flushed before every timed call (CUDA); hot; n/a on a CPU",
       part="timing"),
    Column("n_samples", "", NUMBER, "timed calls in the clean rounds (a noisy row: in every round)",
           part="timing"),
    Column("rounds", "", NUMBER,
       "clean timing rounds the row's figures come from: the case's variants are timed in "
       "interleaved rounds (ABC BCA CAB ...), each with an equal share of the budget",
       part="timing"),
    Column("rounds_dropped", "", NUMBER,
       "rounds timed but not used: contended, stalled, far off the others or implausibly slow "
       "({round_checks}); rounds.csv says why", part="timing"),
    Column("mean_us", "us", NUMBER,
       "time per call, what a caller pays: each clean round's mean over its calls (a cost paid "
       "by 1% of calls moves it by 1% of that cost), averaged over the clean rounds (a noisy "
       "row: every round); the figure the speedup divides. Never under the profiler. CUDA: the "
       "latency of one call started on an idle GPU (queue drained, host work included), CUDA "
       "events around it. CPU: perf_counter_ns around each call, the thread count set and "
       "recorded", "us/call", "timing"),
    Column("mean_low_us", "us", NUMBER, "95% interval of us/call over the clean rounds: low end "
           "(Student's t on the rounds' figures)", "us/call low", "timing"),
    Column("mean_high_us", "us", NUMBER, "95% interval of us/call: high end", "us/call high",
           "timing"),
    Column("median_us", "us", NUMBER,
       "median time per call over the same calls, beside the mean: well under it, a share of the "
       "calls pays a cost of its own (slow_calls)", "median us", "timing"),
    Column("slow_calls", "", NUMBER,
       "share of the timed calls that took over twice the median call (a recompile, a guard "
       "miss, an allocator flush, a GC pass...)", "slow calls", "timing"),
    Column("faults_per_call", "", NUMBER,
       "page faults per call (minor and major, getrusage) while the row was timed, each share's "
       "warm-up call included", "faults/call", "timing"),
    Column("kernel_us", "us", NUMBER,
       "CUDA: device time per call with the calls queued back to back (L2 flushed between "
       "them, no host sync in between: triton.testing.do_bench's method), so the host path is "
       "hidden behind the device work; the mean of the clean rounds' kernel figures, each "
       "timed in the round's share beside the latency; near us/call, the host path was the "
       "longer. Empty on a CPU, which has no separate device", "kernel us"),
    Column("kernel_low_us", "us", NUMBER, "95% interval of kernel us over the rounds: low end",
       "kernel low"),
    Column("kernel_high_us", "us", NUMBER, "95% interval of kernel us: high end", "kernel high"),
    Column("slow_state_rounds", "", NUMBER,
       "clean rounds in which the variant ran in a slow state of its own (its round figures "
       "in two groups far apart: two_states finding); empty when they form one",
       "slow-state rounds", "timing"),
    Column("slow_state_factor", "x", NUMBER,
       "the slow state's mean round figure over the fast state's", "slow-state factor",
       "timing"),
    Column("calls_per_sample", "", NUMBER,
       "calls each timing sample covers: 1 on a CPU; on CUDA enough for a sample to span "
       "{span_steps} steps of the event clock (env.json: event_resolution_us), so a sample's "
       "figures (median, p10, p90, slow calls) are per call, averaged over a block",
       "calls/sample", "timing"),
    Column("p10_us", "us", NUMBER, "10th percentile of the timed calls", "p10", "timing"),
    Column("p90_us", "us", NUMBER, "90th percentile of the timed calls", "p90", "timing"),
    Column("min_us", "us", NUMBER, "the fastest timed call", part="timing"),
    Column("iqr_rel", "", NUMBER, "(p75 - p25) / median: the spread of the timed calls",
       part="timing"),
    Column("first_call_ms", "ms", NUMBER,
       "wall time of the first call: compilation, autotuning, JIT and cold caches",
       "1st call ms"),
    Column("compile_ms", "ms", NUMBER, "compile variants: the first call minus one warm call",
           "compile ms"),
    Column("compile_graphs", "", NUMBER,
       "compile variants: graphs dynamo built for the case (first call to the checked call; "
       "one per shape, as a fresh dynamo compiles each case: static-shape specialisation)",
       "graphs"),
    Column("compile_cache", "", TEXT,
       "compile variants: whether the first call compiled (miss) or loaded Inductor's cached "
       "graph (hit), or neither (none)"),
    Column("speedup", "x", NUMBER,
       "baseline us/call / this row's us/call over the rounds both were clean in (both timed "
       "in each of them: paired), so the ratio of the two rows' us/call where both have the "
       "same clean rounds", "speedup"),
    Column("speedup_low", "x", NUMBER, "95% interval of the speedup, from the rounds: low end "
       "(the ratio estimator's delta method, in logs, Student's t)", "speedup low"),
    Column("speedup_high", "x", NUMBER, "95% interval of the speedup: high end", "speedup high"),
    Column("kernel_speedup_low", "x", NUMBER,
       "95% interval of the kernel speedup, paired per round as the speedup is: low end",
       "kernel speedup low"),
    Column("kernel_speedup_high", "x", NUMBER, "95% interval of the kernel speedup: high end",
       "kernel speedup high"),
    Column("device_ratio", "x", NUMBER,
       "baseline device us / this row's device us: a ratio from the profile pass, not a "
       "speedup; a finding says when it and the speedup disagree", "device ratio (profile)"),
    Column("kernel_speedup", "x", NUMBER,
       "CUDA: baseline kernel us / this row's kernel us: what the kernels alone gain, the "
       "measure for a hand-written kernel against the library kernel it replaces (the speedup "
       "also counts each call's host path)", "kernel speedup"),
    Column("peak_mem_mb", "MiB", NUMBER,
       "memory one call allocates at its peak beyond what existed before it (intermediates and "
       "output, not the inputs). CUDA: max_memory_allocated around one call after a reset. CPU: "
       "the running sum of the profiler's memory events inside the call's range (the profiling "
       "pass records them), median over the profiled calls. Empty for a CUDA-graph replay "
       "(its memory is the pool its capture took)", "peak MiB"),
    Column("mode", "", TEXT,
       "what a call runs: fwd_nograd (the forward under no_grad, inference), fwd (the forward "
       "recording autograd's graph), bwd (the backward of a stored forward, gradients reset "
       "between calls outside the timed span) or fwd_bwd (one training step)"),
    Column("grad_max_err", "", NUMBER,
       "training modes: the largest of the inputs' gradient errors, each measured as "
       "scaled_err is, against the float64 reference's gradient", "grad err"),
    Column("grad_errors", "", TEXT,
       "training modes: each input's gradient error (x 1.2e-06, weight 3.1e-06); each is held "
       "to 2x the baseline's for that tensor plus the dtype's floor (the baseline: a fixed "
       "bound), and the first over it makes the row incorrect, named in the reason"),
    Column("activation_mb", "MiB", NUMBER,
       "training modes: what autograd keeps for backward during one forward (the distinct "
       "storages it saves, inputs left out: saved_tensors_hooks), the activation memory a "
       "fused variant can save", "activations MiB"),
    Column("saved_tensors", "", NUMBER,
       "training modes: how many tensors (distinct storages, inputs left out) autograd keeps "
       "for backward", "saved tensors"),
    Column("partition_saved", "", NUMBER,
       "compile variants in a training mode: tensors the compiled forward keeps for backward, "
       "as AOTAutograd's partition of the joint graph (Inductor's min-cut partitioner) decided "
       "it: the forward graph's outputs past the user's, read from a second compile with a "
       "recording backend (suites/harness/compile_partition.py), the graph's inputs and views "
       "of them left out. saved_tensors counts the same on the real call, but for a tensor "
       "the variant's set-up made that the graph takes as an input (attention's causal mask), "
       "which saved_tensors counts", "partition saved"),
    Column("partition_saved_mb", "MiB", NUMBER,
       "compile variants in a training mode: the bytes of those tensors, from the graph's "
       "fake values", "partition saved MiB"),
    Column("recomputed_ops", "", NUMBER,
       "compile variants in a training mode: forward ops the compiled backward computes again "
       "from what the forward saved, instead of saving their outputs (a node of the forward "
       "graph the backward graph holds too, as the partitioner's own debug log counts them; "
       "views, such as a weight's permute, included)", "recomputed ops"),
    Column("recomputed", "", TEXT,
       "compile variants in a training mode: those ops by aten op, most frequent first "
       "(aten.mul x6, aten.add x2, aten.tanh)"),
    Column("bwd_graphs", "", NUMBER,
       "compile variants in a training mode: backward graphs the partition made, one per "
       "graph dynamo built that has a gradient to compute (compile_graphs counts the "
       "forward's)", "bwd graphs"),
    Column("bwd_graph_ops", "", NUMBER,
       "compile variants in a training mode: aten ops in the backward graph(s) as partitioned, "
       "before Inductor fuses them into kernels", "bwd graph ops"),
    Column("graph_breaks", "", NUMBER,
       "compile variants: graph breaks dynamo hit while the variant was prepared (every reason "
       "summed): each splits the function into graphs with Python between them",
       "graph breaks"),
    Column("recompiles", "", NUMBER,
       "compile variants: compiled entries past the first on the function's code object (a "
       "guard failed on a later call) by the end of the correctness check", "recompiles"),
    Column("inductor_kernels", "", NUMBER,
       "compile variants: kernels Inductor generated for the case (its generated_kernel_count): "
       "a fusion lost shows here on any machine, before any time moves", "Inductor kernels"),
    Column("host_us", "us", NUMBER,
       "CPU span of the call's record_function range in the profiled pass", "host us",
       "profile"),
    Column("device_us", "us", NUMBER,
       "CUDA: union of the kernel, memcpy and memset intervals the call launched (matched by "
       "correlation id). CPU: self time of the ops that compute (aten ops that are neither "
       "metadata-only nor dispatch wrappers, and Inductor's cpp_fused kernels)",
       "device us", "profile"),
    Column("exposed_overhead_us", "us", NUMBER,
       "time per call in which the device does no work for the call (Python, dispatch, "
       "launches). CUDA: max(0, median - device us). CPU: median x (1 - device us / host us): "
       "the profiler adds a microsecond or two to every op, so the profiled share of compute "
       "is applied to the unprofiled median", "exposed overhead us"),
    Column("idle_frac", "", NUMBER,
       "1 - busy fraction: the share of the call's device window (from its start until its "
       "host code and device work are both done, for a call synchronised before it) with no "
       "device work (on a CPU: the share of the call's span in no compute op)",
       part="profile"),
    Column("n_kernels", "", NUMBER,
       "device activities per call (kernels + memcpy + memset), not launch calls; on a CPU, "
       "compute ops per call", "kernels", "profile"),
    Column("launch_api_us", "us", NUMBER,
       "sum of launch-call durations per call ({launch_apis}); a copy call that returned only "
       "after its copy had finished waited, and is not counted", "launch us", "profile"),
    Column("launch_delay_us", "us", NUMBER,
       "median over the call's launches of kernel start - (launch start + duration), clipped "
       "at 0 (HTA's definition)", part="profile"),
    Column("n_cpu_ops", "", NUMBER, "CPU ops inside the call's range, per call", part="profile"),
    Column("backend", "", TEXT, "the scaled_dot_product_attention backend that ran, from the profile",
       "SDPA backend", "profile"),
    Column("flops", "FLOP", NUMBER, "FLOPs per call by the op's model ({flop_models})",
       part="roofline"),
    Column("bytes", "B", NUMBER,
       "bytes per call if every input is read once and every output written once "
       "({byte_models})", part="roofline"),
    Column("bytes_unfused", "B", NUMBER,
       "bytes the unfused baseline form moves, intermediates written and read back, where "
       "the op models it", part="roofline"),
    Column("bytes_moved", "B", NUMBER,
       "bytes this variant's form moves by the op's model, intermediates included, where "
       "modelled", "bytes (model)", "roofline"),
    Column("intensity", "FLOP/B", NUMBER,
       "flops / bytes: the op's ideal intensity, each operand moved once. A row's bound and the "
       "ladder's roofline use its variant's own, flops / bytes_moved (an unfused form moves more)",
       part="roofline"),
    Column("tflops", "TFLOP/s", NUMBER,
       "flops / kernel us on CUDA (the device's work rate), flops / us/call on a CPU",
       "TFLOP/s", "roofline"),
    Column("gbps", "GB/s", NUMBER, "bytes / kernel us on CUDA, bytes / us/call on a CPU", "GB/s",
       "roofline"),
    Column("pct_peak", "%", NUMBER,
       "achieved FLOP/s over min(peak FLOP/s, the variant's own intensity (its modelled bytes) "
       "x the bandwidth of the memory level those bytes fit in: on a CPU a cache level, probed), "
       "all measured on this machine (the best of a probe at the start and one at the end of "
       "the run, env.json); above 100 is flagged", "% roofline", "roofline"),
    Column("roofline_bound", "", TEXT,
       "the row's bound, decided once (suites/common/roofline.py) and read by every page: "
       "overhead where the exposed overhead is half the call or more; else compute or memory: "
       "the roof the variant's intensity (FLOPs over the bytes it moves) meets on this machine "
       "(ridge, at the memory level its bytes fit in); empty where the profile was not clean",
       part="roofline"),
    Column("ridge", "FLOP/B", NUMBER,
       "the ridge point the row's bound is judged against: the dtype's measured peak FLOP/s "
       "over roof_gbps (env.json)", part="roofline"),
    Column("roof_gbps", "GB/s", NUMBER,
       "the measured copy bandwidth of the memory level the variant's bytes fit in (a CPU "
       "cache level, or DRAM; env.json's peaks)", part="roofline"),
    Column("max_abs_err", "", NUMBER,
       "max |out - ref| against the float64 reference, on fresh random inputs", part="check"),
    Column("rel_err", "", NUMBER, "||out - ref|| / ||ref||", part="check"),
    Column("scaled_err", "", NUMBER,
       "per output row, max |out - ref| / max |ref| of the row; the worst row counts: what the "
       "pass rule compares", "error", "check"),
    Column("tolerance", "", NUMBER,
       "the bound scaled_err had to meet: 2x the baseline's error in the same dtype plus a "
       "dtype floor ({error_floors}); the baseline itself a fixed bound ({baseline_bounds})",
       part="check"),
    Column("trace", "", TEXT,
       "the profiled calls' Chrome trace, traces/<case>__<variant>.json.gz (opens in Perfetto)",
       "trace", "profile"),
    Column("table", "", TEXT, "the key_averages table of the same calls, tables/<case>__<variant>.txt",
       part="profile"),
    Column("profile_state", "", TEXT,
       "the profiled calls judged like a timing round: clean; contended (other processes took "
       "the cores, or the threads waited for one); or out_of_step (the profiled call ran far "
       "longer than the timed one, more than the profiler's own cost explains). A profile "
       "neither clean after its takes keeps its figures, marked, and states no bound",
       "profile", "profile"),
    Column("profile_reason", "", TEXT, "why the profile is not clean, with its numbers",
       part="profile"),
    Column("profile_takes", "", NUMBER,
       "times the profile was taken: a profile that is not clean is taken again, up to a limit",
       part="profile"),
)

MEASUREMENTS = LEADING + METRICS
BY_NAME = {c.name: c for c in MEASUREMENTS}
KEY = ("suite", "case_id", "variant")  # one row of measurements.csv; the other tables join on it

# The other tables of a run folder: their columns, in order, KEY first.
# A GEMM kernel's identity and achieved rate, each kernel's launch configuration and occupancy
# (suites/traces/kernel_details.py); empty where a kernel has none, absent from older runs.
KERNEL_DETAIL_COLUMNS = (
    "gemm_library", "gemm_arch", "gemm_layout", "gemm_dtype", "gemm_tile", "gemm_stages",
    "gemm_tensor_core", "gemm_shapes", "gemm_tflops", "gemm_flop_per_byte", "gemm_gbps",
    "registers_per_thread", "shared_mem_bytes",
    "grid", "block", "blocks_per_sm", "warps_per_sm", "est_occupancy_pct",
    "theoretical_occupancy_pct", "occupancy_limit", "launch_configs")
KERNEL_COLUMNS = KEY + ("dtype", "kernel", "kind", "calls_per_call", "total_us_per_call",
                        "mean_us") + KERNEL_DETAIL_COLUMNS
SAMPLE_COLUMNS = KEY + ("round", "sample", "time_us")
# One row per variant per timing round: what the round measured and whether it was clean.
ROUND_COLUMNS = KEY + ("round", "position", "n_samples", "calls_per_sample", "mean_us",
                       "median_us", "kernel_mean_us", "faults_per_call", "wait_frac",
                       "others_cores", "gpu_other_processes", "sm_clock_ratio", "sm_clock_mhz",
                       "clock_limits", "state", "reason")
FINDING_COLUMNS = KEY + ("code", "severity", "statement", "evidence")
# One row per node of a call's op tree, per call (suites/traces/op_tree.py): the path from
# the call down (`aten::linear > aten::addmm`), depth 0 the call itself.
OPTREE_COLUMNS = KEY + ("path", "depth", "name", "kind", "calls_per_call", "self_us", "total_us")
_OTHER_TABLES = (set(KERNEL_COLUMNS + SAMPLE_COLUMNS + ROUND_COLUMNS + FINDING_COLUMNS)
                 - set(BY_NAME))


def column(name: str) -> Column:
    if name not in BY_NAME:
        raise KeyError(f"{name!r} is not a column of measurements.csv")
    return BY_NAME[name]


def empty(name: str):
    """What a column holds where a row has no value: NaN for a number, None for text."""
    return float("nan") if column(name).kind == NUMBER else None


def headers(names) -> dict[str, str]:
    """name -> table header for the columns a view shows, from any table of a run folder (an
    unknown name is an error, so a view cannot show a column that no table has)."""
    return {name: name if name in _OTHER_TABLES else column(name).header for name in names}


def numeric(names=None) -> list[str]:
    return [c.name for c in MEASUREMENTS if c.kind == NUMBER and (names is None or c.name in names)]
