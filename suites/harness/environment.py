"""What a result depends on, written to env.json: versions, device, threads, measured peaks."""
from __future__ import annotations

import datetime
import os
import platform
import statistics
import subprocess
import time
from pathlib import Path

import torch

from suites.harness.contention import cpu_times
from suites.harness.event_clock import event_resolution_us


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def _git_commit() -> str | None:
    here = Path(__file__).resolve().parents[2]
    try:
        out = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=here, capture_output=True,
                             text=True, timeout=5)
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip() or None


def _triton_version() -> str | None:
    try:
        import triton
    except ImportError:
        return None
    return triton.__version__


def load_average() -> float | None:
    try:
        return round(os.getloadavg()[0], 2)
    except OSError:  # not available on every platform
        return None


def cores_used_by_others(interval_s: float = 0.25) -> float | None:
    """Cores other processes keep busy, sampled while this one sleeps. The load average would
    count this process itself (in a multirun the previous job just ran), so it is not used."""
    first = cpu_times()
    if first is None:
        return None
    time.sleep(interval_s)
    second = cpu_times()
    total = second[1] - first[1]
    cores = os.cpu_count() or 1
    # /proc/stat counts in ticks: over a short sample a tick more reads as more cores than
    # there are; no machine keeps more cores busy than it has.
    return min(cores, (second[0] - first[0]) / total * cores) if total > 0 else None


def busy_machine_warning(threads: int, device_type: str, others: float | None) -> str | None:
    """A warning when other processes compete for the cores the CPU timing uses: with every
    core in one OpenMP team, a descheduled thread stalls the whole op for a scheduler tick
    (milliseconds), and a 10 us matmul is timed at 4 to 16 ms."""
    cores = os.cpu_count() or 1
    if device_type != "cpu" or others is None or others + threads <= cores + 0.25:
        return None
    remedy = ("Use a quiet machine (the timing already uses one thread)." if threads == 1 else
              "Use a quiet machine, or fewer threads (timing.threads=1).")
    return (f"warning: other processes keep {min(others, cores):.1f} of this machine's {cores} "
            f"cores busy and the timing uses {threads} thread{'s' * (threads != 1)}: CPU timings "
            f"will include scheduler stalls. {remedy}")


def describe(device: str, threads: int) -> dict:
    info = {
        "created": datetime.datetime.now().isoformat(timespec="seconds"),
        "fusebench_commit": _git_commit(),
        "python": platform.python_version(),
        "platform": platform.platform(),
        "torch": torch.__version__,
        "triton": _triton_version(),
        "device": device,
        "cpu": _cpu_model(),
        "cpu_count": os.cpu_count(),
        "threads": threads,
        "load_average": load_average(),
        "cores_used_by_others": cores_used_by_others(),
        "cpu_capability": torch.backends.cpu.get_cpu_capability(),
        # Set to 0, CUPTI stays attached after a profile and adds launch overhead to every
        # later timing of the same process (torch does this for CUDA graphs on old CUDA).
        "TEARDOWN_CUPTI": os.environ.get("TEARDOWN_CUPTI"),
    }
    if torch.device(device).type == "cuda":
        props = torch.cuda.get_device_properties(device)
        info.update({
            "gpu": props.name, "gpu_memory_gib": round(props.total_memory / 2**30, 1),
            "sm_count": props.multi_processor_count, "cuda": torch.version.cuda,
            "capability": f"{props.major}.{props.minor}",
            # The event clock's step: each sample covers enough calls to span SPAN_STEPS of it.
            "event_resolution_us": event_resolution_us(torch.device(device).index or 0),
        })
    return info


def rounds_summary(rounds: list[dict], outcomes) -> dict:
    """For env.json and the report's banner: how many timing rounds were clean, how many were
    not and why, which cases were re-measured, and how many rows ended noisy."""
    states: dict[str, int] = {}
    for r in rounds:
        states[r["state"]] = states.get(r["state"], 0) + 1
    others = [r["others_cores"] for r in rounds if r.get("others_cores") is not None]
    return {
        "shares": len(rounds),  # one per variant per round
        "states": states,
        "remeasured_cases": [o.case.id for o in outcomes if o.remeasured],
        "noisy_rows": sum(1 for o in outcomes for row in o.rows if row.status == "noisy"),
        # Cores other processes kept busy while the rounds ran, on average over the shares: a
        # neighbour on the core the timing leaves free is not contention by the rounds' rule,
        # yet it slowed a 20 us call 2x here (two A/A runs of suite=linear).
        "others_cores_mean": round(statistics.fmean(others), 2) if others else None,
    }
