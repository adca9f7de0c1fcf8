"""What a history may name as the cause of a change: only what can move a time per call.

An allow-list, not a deny-list: env.json and the stored config gain keys with every version of
fusebench (the wait for another run's lock, a probe's error, the Triton counters' step), and a
key that differs between any two runs would otherwise be named as the cause of every change
it happens to sit beside. A key is a cause once someone says here why it moves a time; until
then it is bookkeeping (when and where the run was made, how long it waited or took, what it
measured about itself) and never named.

The kinds, in the order explain.py ranks them: a version of the software under the rows, the
clocks, the machine, the threads, the timing settings, the fusebench commit, another setting of
the config. Each key has a label the pages say ("torch", "CPU capability", "timing preset").
"""
from __future__ import annotations

# env.json's top-level keys that move a time: key -> (kind, label).
ENV = {
    # The software under every row.
    "torch": ("version", "torch"), "triton": ("version", "triton"),
    "cuda": ("version", "CUDA"), "driver": ("version", "driver"),
    "driver_version": ("version", "driver"), "nvidia_driver": ("version", "driver"),
    "cudnn": ("version", "cuDNN"), "python": ("version", "python"),
    # The clocks a GPU ran at (where a run records them).
    "sm_clock_mhz": ("clocks", "SM clock MHz"), "memory_clock_mhz": ("clocks", "memory clock MHz"),
    "gpu_clock_mhz": ("clocks", "GPU clock MHz"), "power_limit_w": ("clocks", "power limit W"),
    # The machine: its model, its size, the kernel build torch dispatches to on it
    # (cpu_capability: ATEN_CPU_CAPABILITY or the CPU's own), its operating system.
    "gpu": ("machine", "GPU"), "cpu": ("machine", "CPU"),
    "capability": ("machine", "compute capability"),
    "cpu_capability": ("machine", "CPU capability"), "sm_count": ("machine", "SMs"),
    "gpu_memory_gib": ("machine", "GPU memory GiB"), "cpu_count": ("machine", "cores"),
    "platform": ("machine", "platform"),
    # The threads the timing used (its rule: how the count was chosen).
    "threads": ("threads", "threads"), "threads_rule": ("threads", "thread rule"),
    # Set to 0, CUPTI stays attached after a profile and adds launch overhead to every later
    # timing of the process (suites/harness/environment.py).
    "TEARDOWN_CUPTI": ("settings", "TEARDOWN_CUPTI"),
    "fusebench_commit": ("commit", "fusebench commit"),
}
# env.json `timing` keys that move a time: the preset, the warm-up a call gets before it is
# timed, the L2 flush (cold or hot cache), and how many samples and rounds the headline mean
# is made of (a cost paid by a few calls weighs by their number). Not the threads (said above),
# nor the case timeout, nor the A/A control (a copy of the baseline, timed apart).
TIMING = ("preset", "warmup_calls", "compile_warmup_calls", "l2_flush", "budget_s",
          "min_samples", "max_samples", "rounds")
# env.json `peaks`: the machine's measured peaks. Measured, so they scatter a little from run to
# run; a move past PEAK_MOVE (either way) is the machine itself changing (clocks, a neighbour
# that stays): said, below anything set.
PEAKS = "peaks"
PEAK_MOVE = 1.5
# The stored config's keys that move a time, besides timing (said as env.json resolved it):
# a profiled case before this one leaves the profiler's hooks in the process (CUPTI), which
# adds to the launches of every later timing. The sweep's grid, the output folder, progress,
# resume, the Triton counters' step (after every row) and the history block move none.
CONFIG = {"profile.enabled": "profiling"}


def env_kind(key: str) -> str | None:
    """The kind of an env.json top-level key as a cause; None: not a cause."""
    return ENV[key][0] if key in ENV else None


def env_label(key: str) -> str:
    return ENV[key][1]


def timing_kind(key: str) -> str | None:
    return "settings" if key in TIMING else None


def config_kind(key: str) -> str | None:
    """The kind of a stored config's dotted key as a cause; None: not a cause."""
    return "config" if key in CONFIG else None


def key_kind(key: str) -> str | None:
    """The kind of an explanation's cause key (`torch`, `timing.preset`, `peaks.copy_gbps`,
    `config.profile.enabled`); None where the key is not on these lists: what the audit asks of
    every cause a history names."""
    if key.startswith("timing."):
        return timing_kind(key[len("timing."):])
    if key.startswith(PEAKS + "."):
        return "machine"
    if key.startswith("config."):
        return config_kind(key[len("config."):])
    return env_kind(key)


def peak_moved(before, after) -> bool:
    """A measured peak that moved past PEAK_MOVE either way."""
    if isinstance(before, bool) or isinstance(after, bool):
        return False
    if not isinstance(before, (int, float)) or not isinstance(after, (int, float)):
        return False
    if before <= 0 or after <= 0:
        return False
    return max(before / after, after / before) >= PEAK_MOVE


def flat_peaks(peaks) -> dict[str, float]:
    """env.json `peaks` as `peaks.<name>` -> value (`peaks.matmul_tflops.float32`)."""
    out: dict[str, float] = {}

    def walk(value, prefix):
        if isinstance(value, dict):
            for key, inner in value.items():
                walk(inner, f"{prefix}.{key}")
        elif isinstance(value, (int, float)) and not isinstance(value, bool):
            out[prefix] = value
    walk(peaks if isinstance(peaks, dict) else {}, PEAKS)
    return out


def value_at(env: dict, config: dict, key: str):
    """The value a cause key names in a run's env.json (or its config, `config.`): the one
    reading of a key, for the explanation and the audit alike; None where absent."""
    if key.startswith("config."):
        value = config
        parts = key[len("config."):].split(".")
    else:
        value, parts = env, key.split(".")
    for part in parts:
        if not isinstance(value, dict):
            return None
        value = value.get(part)
    return value
