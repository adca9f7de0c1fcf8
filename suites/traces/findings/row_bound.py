"""A suite row's bound in words: the bound suites/common/roofline.py decided for the row
(measurements.csv's roofline_bound, ridge and roof_gbps), stated with the very numbers that
decided it, so the sentence, its evidence and the row's columns cannot disagree. A row whose
profile was not clean has no bound: that is said, with why (suites/harness/profile_guard.py).
"""
from __future__ import annotations

from dataclasses import replace

from suites.common.roofline import COMPUTE, MEMORY, MODEL_SHARE, OVERHEAD, moved_bytes
from suites.results.columns import profile_unclean
from suites.traces.findings.codes import Code, Severity
from suites.traces.findings.core import Finding, FindingContext
from suites.traces.device_time import on_gpu

CODES = {OVERHEAD: Code.OVERHEAD_BOUND, COMPUTE: Code.COMPUTE_BOUND, MEMORY: Code.MEMORY_BOUND}
# Ends every finding of a row whose profile was not clean (profile_guard.py) that rests on
# that profile: its times are not the call's (the row's no_verdict finding says why).
NOT_CLEAN_MARK = "[from a profile that was not clean: its times are not the call's]"
# A row's findings that rest on its timing rounds (or its check) alone: never marked.
FROM_TIMING = (Code.NO_VERDICT, Code.SLOW_CALLS, Code.ROUNDS_DROPPED, Code.TWO_STATES,
               Code.PAGE_FAULTS_DIFFER, Code.ABOVE_PEAK, Code.KERNEL_SPEEDUP_DIFFERS,
               Code.BACKWARD_SHARE, Code.FUSION_PAYS_WHERE, Code.ACTIVATIONS_SAVED,
               Code.COMPILE_PARTITION, Code.STEP_FAILED)


def profile_marked(ctx: FindingContext) -> str:
    """`contended: <why>` for a row whose profile was not clean after its takes, else ""."""
    state = ctx.value("profile_state")
    if not profile_unclean(state):
        return ""
    return f"{state}: {ctx.value('profile_reason') or '?'}"


def marked(findings: list[Finding], row) -> list[Finding]:
    """The findings of a row, those resting on a profile that was not clean marked so."""
    if not profile_marked(FindingContext(profile=None, row=row)):
        return findings
    return [f if f.code in FROM_TIMING else replace(f, statement=f"{f.statement} {NOT_CLEAN_MARK}")
            for f in findings]


def _numbers(ctx: FindingContext) -> dict:
    flops, moved = ctx.value("flops"), moved_bytes(ctx.value("bytes"), ctx.value("bytes_moved"))
    ridge, roof = ctx.value("ridge"), ctx.value("roof_gbps")
    mean, overhead = ctx.value("mean_us"), ctx.value("exposed_overhead_us")
    return {"bound": ctx.value("roofline_bound"), "intensity": flops / moved if moved else
            float("nan"), "ridge": ridge, "roof_gbps": roof, "peak_tflops": ridge * roof / 1e3,
            "moved_bytes": moved, "flops": flops, "mean_us": mean, "exposed_overhead_us": overhead,
            "overhead_share": overhead / mean if mean else float("nan"),
            "device_us": ctx.value("device_us"), "host_us": ctx.value("host_us")}


def _roof_words(n: dict) -> str:
    side = "at or above" if n["intensity"] >= n["ridge"] else "under"
    return (f"{n['intensity']:.3g} FLOP per byte it moves ({n['moved_bytes'] / 1e6:.3g} MB), "
            f"{side} the ridge of {n['ridge']:.3g} FLOP/B ({n['peak_tflops']:.3g} TFLOP/s over "
            f"{n['roof_gbps']:.3g} GB/s, the measured bandwidth where those bytes fit)")


def _statement(n: dict, on_gpu: bool) -> str:
    work = "device time" if on_gpu else "compute (CPU ops that compute)"
    profiled = (f"; the profile's {work}: {n['device_us']:.3g} us a call"
                + ("" if on_gpu else f" of a {n['host_us']:.3g} us profiled call"))
    overhead = (f"the exposed overhead (host and launch work the device waits on) is "
                f"{n['exposed_overhead_us']:.3g} us of a {n['mean_us']:.3g} us call "
                f"({n['overhead_share']:.0%})")
    if n["bound"] == OVERHEAD and n["overhead_share"] != n["overhead_share"]:
        # No exposed overhead measured (no clean profile figure): the model's share decided.
        model_us = max(n["flops"] / (n["peak_tflops"] * 1e6),
                       n["moved_bytes"] / (n["roof_gbps"] * 1e3))
        return (f"overhead-bound: the work at the roofs ({model_us:.3g} us of FLOPs or bytes) is "
                f"under {MODEL_SHARE:.0%} of the {n['mean_us']:.3g} us call; no profile figure "
                "measured its exposed overhead")
    if n["bound"] == OVERHEAD:
        return f"overhead-bound: {overhead}{profiled}"
    said = f"{n['bound']}-bound: {_roof_words(n)}"
    if n["overhead_share"] == n["overhead_share"]:
        said += f"; {overhead}"
    return said


def row_bound_finding(ctx: FindingContext):
    """The row's bound finding, or why it has none (a profile that was not clean)."""
    unclean = profile_marked(ctx)
    if unclean:
        yield Finding(Code.NO_VERDICT, Severity.WARNING,
                      f"no bound stated: the profile was not clean after "
                      f"{ctx.value('profile_takes'):g} take(s) ({unclean}); its figures are kept, "
                      "marked, and read as no fact",
                      {"profile_state": ctx.value("profile_state"),
                       "profile_takes": ctx.value("profile_takes")})
        return
    n = _numbers(ctx)
    if n["bound"] not in CODES:
        return
    gpu = on_gpu(str(ctx.value("device") or "")) or ctx.on_gpu  # the row's device says
    yield Finding(CODES[n["bound"]], Severity.INFO if n["bound"] != OVERHEAD else
                  Severity.NOTICE, _statement(n, gpu), n)


def row_paced_by_host(ctx: FindingContext) -> bool:
    """Whether a suite row's one bound is overhead: the host paces its calls."""
    return ctx.value("roofline_bound") == OVERHEAD


BOUND_CODES_OF_ROWS = (*CODES.values(), Code.NO_VERDICT)


def kept_row_bounds(kept: list[dict], records: list[dict]) -> list[dict]:
    """A resumed run's kept findings with each kept row's bound stated again from the row as
    this run derived it (the bound is the row's, never a finding of its own): its earlier bound
    finding goes, and the row's one bound comes, wherever the row was profiled."""
    keys = {(r["case_id"], r["variant"]) for r in records}
    out = [f for f in kept if (f["case_id"], f["variant"]) not in keys
           or f["code"] not in BOUND_CODES_OF_ROWS]
    for record in records:
        if record.get("status") != "ok" or not isinstance(record.get("trace"), str):
            continue
        for found in row_bound_finding(FindingContext(profile=None, row=record)):
            out.append({"suite": record["suite"], "case_id": record["case_id"],
                        "variant": record["variant"], **found.as_row()})
    return out
