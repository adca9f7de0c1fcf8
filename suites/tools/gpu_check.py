"""Everything to check when a GPU machine is lent, in one command that fits the lease:

    PYTHONUNBUFFERED=1 python -m suites.tools.gpu_check [--out DIR] [--runs-dir DIR]
        [--deadline-s 450 | --deadline-s suites=300 configs=90] [--sections configs kernels]
        [--allow-cpu]

Sections, in order, each with its own deadline (a section past it records the items it did not
start as `deadline` rows, and the next section goes on; time a section leaves unused goes to
the ones after it): `environment`; `configs`, every Triton kernel and autotune config against
the float64 reference on odd shapes (gpu_check_configs.py); `kernels`, kernel time of each
Triton kernel against its library counterpart at the issue's target shapes
(gpu_check_kernels.py); `suites`, the harness end to end at the series' shapes with the
series' kernel counts beside ours (gpu_check_suites.py).

Run specs are composed in-process, with Hydra's compose API as run_suite.py composes them
(suites/config/compose.py); a machine without hydra-core installs it from the three pure-Python
wheels of requirements.txt's pins (docs/tools.md says how). Every result is a JSON line in
DIR/results.jsonl as soon as it is known; DIR/summary.txt is rewritten after every section; the last lines printed are a short
table. Exit status 0 when no row is `failed` or `deadline`, else 1; 2 for bad arguments.
DIR: --out, else $OUT, else results/gpu_check; the run folders go to DIR/runs/<time>/.
Without CUDA it refuses (exit 2), unless --allow-cpu: then it runs the plumbing (sections
needing CUDA are `skipped` rows; every run spec is built, one small suite runs).
"""
from __future__ import annotations

import argparse
import gc
import os
import platform
import subprocess
import sys
import time
from pathlib import Path

import torch

from suites.harness.event_clock import event_resolution_us

from suites.tools import gpu_check_summary as summary
from suites.tools.gpu_check_record import Clock, Recorder, run_items

SECTIONS = ("environment", "configs", "kernels", "suites")
# Seconds per section, about 7.5 minutes in all: a cold H100/H200 spends most of `configs` and
# `kernels` compiling Triton configs, and most of `suites` in torch.compile and profiling.
BUDGET_S = {"environment": 10.0, "configs": 150.0, "kernels": 65.0, "suites": 225.0}
# What the lease's nvidia-smi says about clocks and memory, if it is there (cheap).
SMI_FIELDS = "clocks.sm,clocks.max.sm,clocks.mem,power.draw,temperature.gpu,driver_version"


def budgets(given: list[str] | None) -> dict[str, float]:
    """`450` (the whole, shared out as the defaults are) or `section=seconds` entries."""
    out = dict(BUDGET_S)
    for entry in given or []:
        name, sep, value = entry.rpartition("=")
        try:
            seconds = float(value)
        except ValueError:
            raise SystemExit(f"gpu_check: --deadline-s {entry}: not a number of seconds")
        if not sep:
            total = sum(BUDGET_S.values())
            out = {k: v * seconds / total for k, v in BUDGET_S.items()}
        elif name in SECTIONS:
            out[name] = seconds
        else:
            raise SystemExit(f"gpu_check: --deadline-s {entry}: no section {name!r}; "
                             f"sections: {', '.join(SECTIONS)}")
    return out


def series_overrides(suite) -> list[str]:
    """run_suite.py's overrides for a suite (or its name) at its YAML's reference shape, in
    bf16: the first run of section `suites` (tests/test_suite_table.py checks them)."""
    from suites.tools.gpu_check_suites import reference_values
    from suites.config.compose import override_args

    return override_args(reference_values(getattr(suite, "name", suite)))


def _smi() -> dict:
    try:
        done = subprocess.run(["nvidia-smi", f"--query-gpu={SMI_FIELDS}",
                               "--format=csv,noheader,nounits"], capture_output=True,
                              text=True, timeout=10)
    except (OSError, subprocess.SubprocessError):
        return {}
    values = done.stdout.strip().splitlines()[:1]
    return dict(zip(SMI_FIELDS.split(","), values[0].split(", "))) if values else {}


def environment_items(cuda: bool):
    from kernels.triton.runtime import kernels_interpreted

    def versions():
        import triton
        return {"python": platform.python_version(), "torch": torch.__version__,
                "triton": triton.__version__, "cuda": torch.version.cuda,
                "cudnn": torch.backends.cudnn.version() if cuda else None,
                "TRITON_INTERPRET": os.environ.get("TRITON_INTERPRET")}

    def gpu():
        if not cuda:
            return {"status": "skipped", "error": "no CUDA"}
        props = torch.cuda.get_device_properties(0)
        free, total = torch.cuda.mem_get_info()
        return {"gpu": props.name, "capability": f"{props.major}.{props.minor}",
                "sm_count": props.multi_processor_count,
                "l2_mib": getattr(props, "L2_cache_size", 0) / 2**20,
                "memory_gib": round(total / 2**30, 1), "free_gib": round(free / 2**30, 1),
                "event_resolution_us": event_resolution_us(0), **_smi()}

    def interpreter():
        # On a GPU the kernels must be compiled: interpreted, the harness refuses to time them.
        if cuda and kernels_interpreted():
            return {"status": "failed", "error": "TRITON_INTERPRET=1 is set: unset it"}
        return {"interpreted": kernels_interpreted()}

    return [("versions", versions), ("gpu", gpu), ("triton kernels", interpreter)]


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    default_out = os.environ.get("OUT") or "results/gpu_check"
    parser.add_argument("--out", type=Path, default=Path(default_out),
                        help=f"results folder (default: $OUT, else results/gpu_check; now "
                             f"{default_out})")
    parser.add_argument("--runs-dir", type=Path,
                        help="the suites' run folders (default: OUT/runs/<time>, three folders "
                             "down: a lease fetches 8 files of $OUT, at most two down)")
    parser.add_argument("--deadline-s", nargs="+", metavar="S|SECTION=S",
                        help=f"seconds: the whole (shared as the defaults are) or per section "
                             f"(defaults: {' '.join(f'{k}={v:.0f}' for k, v in BUDGET_S.items())})")
    parser.add_argument("--sections", nargs="+", choices=SECTIONS, default=list(SECTIONS))
    parser.add_argument("--allow-cpu", action="store_true",
                        help="without CUDA: run the plumbing instead of refusing")
    args = parser.parse_args(argv)
    deadlines = budgets(args.deadline_s)
    cuda = torch.cuda.is_available()
    if not cuda and not args.allow_cpu:
        print("gpu_check: no CUDA GPU here; --allow-cpu runs the plumbing", file=sys.stderr)
        return 2
    out = args.out
    # Three folders down, the run folders' files never take the place of results.jsonl and
    # summary.txt among the 8 files a lease brings back; one folder per gpu_check run.
    runs_dir = args.runs_dir or out / "runs" / time.strftime("%Y%m%d-%H%M%S")
    rec = Recorder(out / "results.jsonl")
    with open(out / "log.txt", "w") as log:  # the harness's progress lines
        try:
            rec.add("environment", "run", "ok", cuda=cuda, sections=args.sections,
                    deadlines_s=deadlines, out=str(out), runs_dir=str(runs_dir),
                    argv=sys.argv[1:] if argv is None else list(argv))
            _sections(args.sections, deadlines, cuda, rec, out, runs_dir, log)
        finally:
            rec.close()
            text = summary.write(rec, out, deadlines)
    print(text)
    return rec.exit_code()


def _sections(names, deadlines, cuda, rec, out, runs_dir, log) -> None:
    slack = 0.0
    for name in SECTIONS:
        if name not in names:
            continue
        clock, started = Clock(deadlines[name], slack), time.monotonic()
        try:
            # The harness stops its own runs at the deadline, after the case in flight; a
            # config or kernel item is stopped where it is (gpu_check_record.item_alarm).
            run_items(rec, name, clock, _plan(name, cuda, runs_dir, clock, rec, log),
                      hard=name in ("configs", "kernels"))
        finally:
            rec.section_s[name] = time.monotonic() - started
            summary.write(rec, out, deadlines)  # a run killed later still leaves a summary
        slack = max(0.0, clock.left())  # unused time goes to the sections after this one
        gc.collect()
        if cuda:
            torch.cuda.empty_cache()


def _plan(name, cuda, runs_dir, clock, rec, log):
    """A section's items, made lazily: a failure to plan them is a row, not a crash."""
    from suites.tools import gpu_check_configs, gpu_check_kernels, gpu_check_suites
    from suites.config.compose import compose, resolved
    from suites.config.run_spec import timing_spec

    device = "cuda" if cuda else None
    if name == "environment":
        yield from environment_items(cuda)
    elif name == "configs":
        yield from gpu_check_configs.items(device)
    elif name == "kernels":  # with the L2 flush the harness's default timing sets
        yield from gpu_check_kernels.items(device, timing_spec(resolved(compose())["timing"]))
    else:
        yield from gpu_check_suites.items(cuda, runs_dir, clock, rec, log)


if __name__ == "__main__":
    sys.exit(main())
