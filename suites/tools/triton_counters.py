"""A run's Triton counters: for each Triton row, every kernel it launches, compiled ahead of time
for sm_80 and sm_90 with each config the kernel's pruning keeps there, and the compiler's
registers, spills and shared memory: the run folder's triton_counters.csv.

    python -m suites.tools.triton_counters RUN_DIR [--jobs N]

Why per run: they need no GPU and no quiet machine, and they are exact, so the history
(suites/reports/history/counters.py) tracks them as counters: any change is a change. A CPU-only
CI then sees "this commit made the fused GEMM spill on sm_90" the run it happens, before anyone
times it on a GPU.

What is compiled is what the run's rows would launch on those GPUs: each Triton variant's own
prepare, at each case and mode of the run (triton_suite_launches.case_launches, on meta
tensors), with each config the pruning keeps on the target (kernels/triton/targets.py; an
autotuner picks among them at run time) or the one config a fixed kernel's launcher picks. The
compile is triton_targets.compile_one's. Compiles are cached on disk by everything that makes
them (Triton's version, the kernel's source hash with its callees, target, specialisation,
config, warps and stages; FUSEBENCH_CACHE, default ~/.cache/fusebench), so a sweep pays for a
kernel once and a changed kernel is compiled again; launches that compile to the same kernel are
compiled once. A compile that fails is a row with its error, never a failed run.

Run in a process of its own (the runner starts one): the kernel modules must be imported without
TRITON_INTERPRET to carry their GPU configs, and a run on a CPU has set it.
"""
from __future__ import annotations

import argparse
import csv
import hashlib
import json
import os
import sys
import time
from dataclasses import asdict
from pathlib import Path

from suites.harness.triton_counters_step import CASES_JSON
from suites.tools import triton_launches as planned
from suites.tools.triton_specialisation import specialisation_key
from suites.tools.triton_suite_launches import case_launches, unsupported
from suites.tools.triton_targets import Result, compile_one, kept, variant_text

CSV = "triton_counters.csv"
# The row key, the kernel's build (history's counters.TRITON_IDENTITY), then its counters.
COLUMNS = ("suite", "case_id", "variant", "kernel", "specialisation", "config", "arch",
           "registers", "spill_bytes", "shared_bytes", "error")


def cache_dir() -> Path:
    root = os.environ.get("FUSEBENCH_CACHE") or Path.home() / ".cache" / "fusebench"
    return Path(root) / "triton_counters"


def compile_key(job) -> str:
    """Everything the compile's result depends on, hashed: Triton's version, the kernel's
    source with its callees (the JIT's own cache_key), target, warps, stages and the
    specialisation (constexprs, types, divisibility)."""
    import triton
    fn = planned.kernel_fn(job.kernel)
    what = (triton.__version__, fn.cache_key, job.kernel, job.arch, job.num_warps,
            job.num_stages, repr(specialisation_key(fn, job.named)))
    return hashlib.sha256(repr(what).encode()).hexdigest()[:32]


def planned_rows(cases: list[dict]) -> list[tuple[dict, object, str]]:
    """(the row's key fields, its job, the job's specialisation text) for every kernel each
    Triton row launches on each target, with each config kept there."""
    from kernels import registry

    out = []
    for row in cases:
        variant = registry.get_variant(row["suite"], row["variant"])
        key = {k: row[k] for k in ("suite", "case_id", "variant")}
        for arch in planned.ARCHS:
            if unsupported(variant, row["suite"], row["values"], row["dtype"], arch):
                continue
            launches = case_launches(row["suite"], variant, row["values"], row["dtype"],
                                     row["mode"], arch)
            for launch in launches:
                for config in planned.configs(launch):
                    job = planned.job(launch, row["dtype"], arch, config)
                    if kept(job, config):
                        out.append((key, job, variant_text(job)))
    return out


def _cached(path: Path) -> Result | None:
    try:
        return Result(**json.loads(path.read_text()))
    except (OSError, ValueError, TypeError):  # absent, or written by another version
        return None


def compile_all(jobs: dict, workers: int) -> tuple[dict[str, Result], int]:
    """compile key -> Result for every job (key -> job), from the cache where it holds one;
    the number compiled now."""
    from concurrent.futures import ProcessPoolExecutor

    folder = cache_dir()
    done = {key: r for key in jobs if (r := _cached(folder / f"{key}.json")) is not None}
    todo = [key for key in jobs if key not in done]
    if todo:
        with ProcessPoolExecutor(max_workers=max(1, workers)) as pool:
            for key, result in zip(todo, pool.map(compile_one, [jobs[k] for k in todo])):
                done[key] = result
                if not result.error:  # an error may be the machine's (no disk): not kept
                    folder.mkdir(parents=True, exist_ok=True)
                    tmp = folder / f"{key}.{os.getpid()}.tmp"
                    tmp.write_text(json.dumps(asdict(result)))
                    tmp.replace(folder / f"{key}.json")
    return done, len(todo)


def counter_rows(cases: list[dict], workers: int) -> tuple[list[dict], int, int]:
    """triton_counters.csv's rows, the number of distinct compiles, and how many ran now."""
    plan = planned_rows(cases)
    keys = [compile_key(job) for _, job, _ in plan]
    results, compiled = compile_all(dict(zip(keys, (job for _, job, _ in plan))), workers)
    rows, seen, texts = [], set(), {}
    for (row_key, job, specialisation), key in zip(plan, keys):
        if (*row_key.values(), key) in seen:  # a call launching one build twice (fwd, dx)
            continue
        seen.add((*row_key.values(), key))
        # Two builds the constexprs do not tell apart (a stride of 1, divisibility by 16)
        # are numbered in launch order, so each is a counter of its own.
        text_key = (*row_key.values(), job.kernel, specialisation, job.config, job.arch)
        texts[text_key] = texts.get(text_key, 0) + 1
        if texts[text_key] > 1:
            specialisation += f" (build {texts[text_key]})"
        r = results[key]
        rows.append({**row_key, "kernel": job.kernel, "specialisation": specialisation,
                     "config": " ".join(map(str, job.config)), "arch": f"sm_{job.arch}",
                     "registers": r.registers, "spill_bytes": r.spill_bytes,
                     "shared_bytes": r.shared, "error": r.error})
    return rows, len(results), compiled


def write(run_dir: Path, rows: list[dict]) -> Path:
    path = run_dir / CSV
    tmp = path.with_suffix(".csv.tmp")
    with open(tmp, "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=COLUMNS)
        writer.writeheader()
        writer.writerows({c: ("" if row.get(c) is None else row[c]) for c in COLUMNS}
                         for row in rows)
    tmp.replace(path)
    return path


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("run_dir", type=Path)
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    args = parser.parse_args(argv)
    if os.environ.get("TRITON_INTERPRET") == "1":
        sys.exit("triton_counters: unset TRITON_INTERPRET: the kernels must carry their GPU "
                 "configs")
    started = time.perf_counter()
    cases = json.loads((args.run_dir / CASES_JSON).read_text())
    rows, distinct, compiled = counter_rows(cases, args.jobs)
    write(args.run_dir, rows)
    print(json.dumps({"rows": len(rows), "compiles": distinct, "compiled_now": compiled,
                      "seconds": round(time.perf_counter() - started, 1)}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
