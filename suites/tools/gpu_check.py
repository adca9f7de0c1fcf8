"""Everything to check when a GPU machine is lent, in one command that fits the lease:

    PYTHONUNBUFFERED=1 python -m suites.tools.gpu_check [--out DIR] [--runs-dir DIR]
        [--deadline-s 560 | --deadline-s suites=300 configs=90] [--sections kernels configs]
        [--allow-cpu]

Sections, in order, each in a process of its own with a window that holds by construction
(gpu_check_schedule.py: killed at its end wherever it is, every stack dumped first; the time a
section leaves unused goes to the ones after it, an overrun is taken back from them):
`environment`, versions, the GPU and the first-contact probes (event clock step, CUPTI's cost,
SM clocks, L2 flush kinds: gpu_check_probes.py); `kernels`, kernel time of each Triton kernel
against its library counterpart at the issue's target shapes (gpu_check_kernels.py);
`suites`, the harness end to end at the series' shapes with the series' kernel counts beside
ours (gpu_check_suites.py); `configs`, every Triton kernel and autotune config against the
float64 reference on odd shapes (gpu_check_configs.py), last: the newest code, first contact
with the hardware at odd shapes. The whole check ends by --deadline-s (default DEADLINE_S,
fitted to a 590 s command).

Run specs are composed in-process, with Hydra's compose API as run_suite.py composes them
(suites/config/compose.py); a machine without hydra-core installs it from the three pure-Python
wheels of requirements.txt's pins (docs/tools.md says how). Every result is a JSON line in
DIR/results.jsonl as soon as it is known; DIR/summary.txt is rewritten after every section; the
last lines printed are a short table. The suites' run folders are written outside DIR
(--runs-dir) and packed into DIR/runs.tar.gz at the end (gpu_check_archive.py): a lease brings
back a few files of $OUT, two folders down at most. Exit status 0 when no row is `failed`,
`noisy` or `deadline`, else 1; 2 for bad arguments. DIR: --out, else $OUT, else
results/gpu_check. Without CUDA it refuses (exit 2), unless --allow-cpu: then it runs the
plumbing (sections needing CUDA are `skipped` rows; every run spec is built, one small suite
runs).
"""
from __future__ import annotations

import argparse
import os
import platform
import subprocess
import sys
import time
from pathlib import Path

import torch

from suites.harness.event_clock import event_resolution_us

from suites.harness.variant_passes import short_error
from suites.tools import gpu_check_summary as summary
from suites.tools.gpu_check_archive import ARCHIVE, pack
from suites.tools.gpu_check_record import Clock, Recorder, run_items
from suites.tools.gpu_check_schedule import (MIN_START_S, ended_row, grace, run_section,
                                             watch_stacks, window)

# The section with the newest code and the first hardware contact at odd shapes (`configs`)
# runs last: each section is a process of its own, so a fault there costs only its own window.
SECTIONS = ("environment", "kernels", "suites", "configs")
# Seconds per section: a cold H200 spends most of `kernels` and `configs` compiling Triton
# configs, and most of `suites` in torch.compile and profiling; each pays ~10 s of imports.
BUDGET_S = {"environment": 30.0, "kernels": 75.0, "suites": 285.0, "configs": 155.0}
# After the sections: the archive and the summary. With BUDGET_S, the whole check ends by
# DEADLINE_S, fitted to a 590 s command (a lease allows 600) with interpreter start-up to spare.
FINISH_S = 15.0
DEADLINE_S = sum(BUDGET_S.values()) + FINISH_S  # 560
# What the lease's nvidia-smi says about clocks and memory, if it is there (cheap).
SMI_FIELDS = "clocks.sm,clocks.max.sm,clocks.mem,power.draw,temperature.gpu,driver_version"


def budgets(given: list[str] | None) -> dict[str, float]:
    """`560` (the whole check: the sections share all but FINISH_S as the defaults do) or
    `section=seconds` entries."""
    out = dict(BUDGET_S)
    for entry in given or []:
        name, sep, value = entry.rpartition("=")
        try:
            seconds = float(value)
        except ValueError:
            raise SystemExit(f"gpu_check: --deadline-s {entry}: not a number of seconds")
        if seconds < 0 or seconds != seconds:
            raise SystemExit(f"gpu_check: --deadline-s {entry}: seconds must be 0 or more")
        if not sep:
            total, share = sum(BUDGET_S.values()), max(0.0, seconds - FINISH_S)
            out = {k: v * share / total for k, v in BUDGET_S.items()}
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


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    default_out = os.environ.get("OUT") or "results/gpu_check"
    parser.add_argument("--out", type=Path, default=Path(default_out),
                        help=f"results folder (default: $OUT, else results/gpu_check; now "
                             f"{default_out})")
    parser.add_argument("--runs-dir", type=Path,
                        help="the suites' run folders (default: results/gpu_check-runs/<time>, "
                             "outside OUT: they come back packed in OUT/runs.tar.gz, as a "
                             "lease fetches a few files of $OUT)")
    parser.add_argument("--deadline-s", nargs="+", metavar="S|SECTION=S",
                        help=f"seconds: the whole check (default {DEADLINE_S:.0f}, the sections "
                             f"sharing all but {FINISH_S:.0f} s as the defaults do) or per "
                             f"section (defaults: "
                             f"{' '.join(f'{k}={v:.0f}' for k, v in BUDGET_S.items())})")
    parser.add_argument("--sections", nargs="+", choices=SECTIONS, default=list(SECTIONS))
    parser.add_argument("--allow-cpu", action="store_true",
                        help="without CUDA: run the plumbing instead of refusing")
    # A section's own process (run by the check itself, never by hand): its name, the check's
    # start and the end of its window, both as epoch seconds.
    parser.add_argument("--child", choices=SECTIONS, help=argparse.SUPPRESS)
    parser.add_argument("--started", type=float, help=argparse.SUPPRESS)
    parser.add_argument("--until", type=float, help=argparse.SUPPRESS)
    parser.add_argument("--stop-at", type=float, help=argparse.SUPPRESS)  # its own clock's end
    return parser


def main(argv=None) -> int:
    args = _parser().parse_args(argv)
    deadlines = budgets(args.deadline_s)
    if args.child:
        return _child(args)
    cuda = torch.cuda.is_available()
    if not cuda and not args.allow_cpu:
        print("gpu_check: no CUDA GPU here; --allow-cpu runs the plumbing", file=sys.stderr)
        return 2
    out = args.out
    runs_dir = args.runs_dir or Path("results") / "gpu_check-runs" / time.strftime(
        "%Y%m%d-%H%M%S")
    out.mkdir(parents=True, exist_ok=True)
    rec = Recorder(out / "results.jsonl")
    chosen = [name for name in SECTIONS if name in args.sections]
    whole = sum(deadlines[name] for name in chosen) + FINISH_S
    (out / "log.txt").write_text("")  # this check's lines only; the sections append theirs
    try:
        rec.add("environment", "run", "ok", cuda=cuda, sections=chosen,
                deadlines_s=deadlines, deadline_s=round(whole, 1), out=str(out),
                runs_dir=str(runs_dir), argv=sys.argv[1:] if argv is None else list(argv))
        _sections(chosen, deadlines, args, rec, out, runs_dir)
        rec.add("archive", ARCHIVE, **_packed(runs_dir, out))
    finally:
        rec.close()
        rec.reload()
        rec.section_s["total"] = time.time() - rec.started
        text = summary.write(rec, out, deadlines)
    print(text)
    return rec.exit_code()


def _packed(runs_dir: Path, out: Path) -> dict:
    try:
        fields = pack(runs_dir, out)
    except Exception as exc:  # a full disk, say: the rows are already in results.jsonl
        return {"status": "failed", "error": short_error(exc)}
    return {"status": "ok", **fields} if "status" not in fields else fields


def _sections(names, deadlines, args, rec, out, runs_dir) -> None:
    """Each section in its own process, in turn, each in its window (gpu_check_schedule)."""
    end = rec.started + sum(deadlines[name] for name in names)
    env = {**os.environ, "PYTHONUNBUFFERED": "1",
           # Autotune picks on disk: a later section's process reuses an earlier one's.
           "TRITON_CACHE_AUTOTUNING": os.environ.get("TRITON_CACHE_AUTOTUNING", "1")}
    for index, name in enumerate(names):
        later = sum(deadlines[n] for n in names[index + 1:])
        given = window(deadlines[name], later, end - time.time())
        # Squeezed by an overrun before it (a tenth of its budget is the clock's reading time).
        if given <= 0 or given < min(MIN_START_S, 0.9 * deadlines[name]):
            rec.add(name, "section", "deadline",
                    error=f"not started: {given:.0f} s of its window left (a section's "
                          f"process needs {MIN_START_S:.0f} s to start and run an item)")
            continue
        command = [sys.executable, "-m", "suites.tools.gpu_check", "--child", name,
                   "--out", str(out), "--runs-dir", str(runs_dir),
                   "--started", repr(rec.started), "--until", repr(time.time() + given),
                   "--stop-at", repr(time.time() + given - grace(given))]
        command += ["--allow-cpu"] if args.allow_cpu else []
        command += ["--deadline-s", *args.deadline_s] if args.deadline_s else []
        with open(out / "log.txt", "a") as log:
            ended = run_section(command, given, log, env)
        rec.reload()  # the section's rows, appended by its process
        rec.section_s[name] = ended.seconds
        extra = ended_row(name, ended, given)
        if extra is not None:
            rec.add(name, "section", **extra)
        summary.write(rec, out, deadlines)  # a check killed later still leaves a summary


def _child(args) -> int:
    """One section, in this process, until args.until (its window's end, epoch seconds)."""
    cuda = torch.cuda.is_available()
    name, out = args.child, args.out
    rec = Recorder(out / "results.jsonl", append=True, started=args.started)
    clock = Clock(max(0.0, args.stop_at - time.time()))
    with open(out / "log.txt", "a") as log:
        watch_stacks(args.until, log)
        if os.environ.get("GPU_CHECK_STALL_SECTION") == name:  # for the tests: a section
            time.sleep(3600)                                    # that never returns
        try:
            run_items(rec, name, clock, _plan(name, cuda, args.runs_dir, clock, rec, log),
                      hard=name in ("kernels", "configs"))
            if name != "environment":
                rec.add(name, summary.PICKS, "ok", picks=autotune_picks())
        finally:
            rec.close()
    return 0


def autotune_picks() -> dict:
    """kernel -> {call key: the config its autotuner picked} for every triton.autotune kernel
    this process called: what ran, beside the rows it gave."""
    from suites.tools.gpu_check_configs import find_autotuners

    tuners, _ = find_autotuners()
    return {name: {str(key): str(config) for key, config in getattr(tuner, "cache", {}).items()}
            for name, tuner in tuners.items() if getattr(tuner, "cache", None)}


def _plan(name, cuda, runs_dir, clock, rec, log):
    """A section's items, made lazily: a failure to plan them is a row, not a crash."""
    from suites.tools import (gpu_check_configs, gpu_check_kernels, gpu_check_probes,
                              gpu_check_suites)
    from suites.config.compose import compose, resolved
    from suites.config.run_spec import timing_spec

    device = "cuda" if cuda else None
    if name == "environment":
        yield from environment_items(cuda)
        yield from gpu_check_probes.items(cuda)
    elif name == "configs":
        yield from gpu_check_configs.items(device)
    elif name == "kernels":  # with the L2 flush the harness's default timing sets
        yield from gpu_check_kernels.items(device, timing_spec(resolved(compose())["timing"]))
    else:
        yield from gpu_check_suites.items(cuda, runs_dir, clock, rec, log)


if __name__ == "__main__":
    sys.exit(main())
