"""The audit of a run folder's rows: each row's bound against the ridge its own env.json peaks
give, its bound finding against its columns, its profile against its timed call, the machine's
cores against what the pages say of them, and every number finite. (The answer's pages are
audit.py's.)"""
from __future__ import annotations

import math
import re

import pandas as pd

from suites.common.audit import Tally, finite
from suites.common.roofline import row_bound
from suites.harness.profile_guard import allowed_us, profiler_op_us
from suites.traces.device_time import on_gpu
from suites.traces.findings.codes import BOUND_CODES
from suites.traces.findings.row_bound import FROM_TIMING, NOT_CLEAN_MARK
from suites.results.columns import Status, profile_unclean

BOUND_OF_CODE = {"overhead_bound": "overhead", "compute_bound": "compute",
                 "memory_bound": "memory"}
REL = 1e-6  # a number written to a CSV and read back, against the same number recomputed


def _close(a: float, b: float) -> bool:
    return (math.isnan(a) and math.isnan(b)) or math.isclose(a, b, rel_tol=REL, abs_tol=1e-12)


def _text(value) -> str:
    return value if isinstance(value, str) else ""


def _where(row) -> str:
    return f"{row['case_id']} {row['variant']}"


def _clean(row) -> bool:
    return not profile_unclean(row.get("profile_state"))


def bounds(tally: Tally, ok: pd.DataFrame, env: dict) -> None:
    """Each row's bound is the one rule's on its own numbers and env.json's peaks; the ridge
    it states is the ridge those peaks give; one intensity, one roof."""
    peaks = env.get("peaks")
    if not peaks:
        return
    for _, row in ok.iterrows():
        if not _clean(row):
            tally.test(not _text(row["roofline_bound"]), "bound_unclean_profile", _where(row),
                       f"measurements.csv: roofline_bound {row['roofline_bound']!r}",
                       f"profile_state {row['profile_state']!r}: no bound is stated from it")
            continue
        work = row["kernel_us"] if on_gpu(str(row["device"])) else row["mean_us"]
        overhead = row["exposed_overhead_us"]
        found = row_bound(row["flops"], row["bytes"], row["bytes_moved"],
                          (peaks.get("matmul_tflops") or {}).get(row["dtype"], math.nan), peaks,
                          work, row["mean_us"], overhead)
        if not found.bound:
            continue
        stated = _text(row["roofline_bound"])
        tally.test(stated == found.bound, "bound_rule", _where(row),
                   f"measurements.csv: roofline_bound {stated or 'empty'}",
                   f"the rule on its numbers and env.json's peaks: {found.bound} (intensity "
                   f"{found.intensity:.4g} against ridge {found.ridge:.4g} FLOP/B, exposed "
                   f"overhead {found.overhead_share:.3g} of the call)")
        if row["ridge"] != row["ridge"]:
            continue  # an older run stated no ridge: nothing to hold against its peaks
        tally.test(_close(row["ridge"], found.ridge), "bound_ridge", _where(row),
                   f"measurements.csv: ridge {row['ridge']:.6g} FLOP/B",
                   f"env.json's peaks: {found.peak_tflops:.6g} TFLOP/s over "
                   f"{found.roof_gbps:.6g} GB/s = {found.ridge:.6g} FLOP/B")
    _one_roof_per_intensity(tally, ok)


def _one_roof_per_intensity(tally: Tally, ok: pd.DataFrame) -> None:
    """Rows of one case at one intensity (FLOPs over the bytes each moves) meet one roof."""
    judged = ok[ok["roofline_bound"].isin(["compute", "memory"])]
    moved = judged["bytes_moved"].where(judged["bytes_moved"] > 0, judged["bytes"])
    keyed = judged.assign(_i=(judged["flops"] / moved).round(9))
    for (case, _), group in keyed.groupby(["case_id", "_i"]):
        roofs = sorted(set(group["roofline_bound"]))
        tally.test(len(roofs) == 1, "one_roof_per_intensity", case,
                   f"measurements.csv: {', '.join(group['variant'])} at one intensity",
                   f"bounds {', '.join(roofs)}")


INTENSITY_SAID = re.compile(r"([\d.]+) FLOP per byte")
RIDGE_SAID = re.compile(r"ridge of ([\d.]+) FLOP/B")


def _statement_numbers(tally: Tally, row, mine: pd.DataFrame, env: dict) -> None:
    """A compute- or memory-bound statement's intensity sits on its side of the ridge that
    env.json's peaks give at the bytes' memory level, and the ridge it quotes is that one."""
    peaks = env.get("peaks")
    peak = ((peaks or {}).get("matmul_tflops") or {}).get(row["dtype"])
    if not peaks or not peak:
        return
    ridge = row_bound(row["flops"], row["bytes"], row["bytes_moved"], peak, peaks,
                      1.0, 1.0, math.nan).ridge
    for code, text in zip(mine["code"], mine["statement"]):
        if code not in ("compute_bound", "memory_bound"):
            continue
        said = INTENSITY_SAID.search(text)
        if said is not None:
            above = float(said.group(1)) >= ridge * (1 - 1e-3)
            tally.test(above == (code == "compute_bound"), "bound_statement", _where(row),
                       f"findings.csv: {code} at {said.group(0)}",
                       f"env.json's peaks put the ridge at {ridge:.4g} FLOP/B")
        quoted = RIDGE_SAID.search(text)
        if quoted is not None:
            tally.test(math.isclose(float(quoted.group(1)), ridge, rel_tol=5e-3),
                       "bound_statement", _where(row), f"findings.csv: {quoted.group(0)}",
                       f"env.json's peaks: {ridge:.4g} FLOP/B")


def bound_findings(tally: Tally, ok: pd.DataFrame, findings: pd.DataFrame,
                   env: dict) -> None:
    """findings.csv's bound of a row is the row's roofline_bound; a row whose profile was not
    clean states no bound and marks every other finding."""
    by_row = {k: g for k, g in findings.groupby(["case_id", "variant"])} if len(findings) else {}
    for _, row in ok.iterrows():
        mine = by_row.get((row["case_id"], row["variant"]))
        if mine is None:
            continue
        codes = [c for c in mine["code"] if c in BOUND_CODES]
        if not _clean(row):
            tally.test(not codes, "bound_unclean_profile", _where(row),
                       f"findings.csv: {', '.join(codes)}",
                       f"profile_state {row['profile_state']!r}: no bound is stated from it")
            unmarked = [s for c, s in zip(mine["code"], mine["statement"])
                        if c not in FROM_TIMING and NOT_CLEAN_MARK not in s]
            tally.test(not unmarked, "unclean_unmarked", _where(row),
                       f"findings.csv: {len(unmarked)} statement(s) from its profile unmarked",
                       f"profile_state {row['profile_state']!r}")
            continue
        _statement_numbers(tally, row, mine, env)
        stated = _text(row["roofline_bound"])
        said = [BOUND_OF_CODE.get(c, c) for c in codes]
        tally.test(said == ([stated] if stated else []), "bound_finding", _where(row),
                   f"findings.csv: {', '.join(codes) or 'no bound'}",
                   f"measurements.csv: roofline_bound {stated or 'empty'}")


def profiles(tally: Tally, ok: pd.DataFrame, optree: pd.DataFrame, env: dict) -> None:
    """A clean profile's call, and every op inside it, within what the timed call and the
    profiler's own cost allow (the guard's rule: suites/harness/profile_guard.py)."""
    per_op = profiler_op_us((env or {}).get("launch_floors"))
    ops = {k: g for k, g in optree.groupby(["case_id", "variant"])} if len(optree) else {}
    for _, row in ok.iterrows():
        if not _text(row.get("profile_state")) or not _clean(row):
            continue  # unguarded (an older run) or marked: the marks are bound_findings'
        limit = allowed_us(row["mean_us"], row["n_cpu_ops"], per_op)
        tally.test(not row["host_us"] > limit, "host_above_call", _where(row),
                   f"measurements.csv: host_us {row['host_us']:.4g} from a clean profile",
                   f"the timed call {row['mean_us']:.4g} us allows {limit:.4g} us")
        tree = ops.get((row["case_id"], row["variant"]))
        if tree is None:
            continue
        longest = tree.loc[tree["total_us"].idxmax()] if tree["total_us"].notna().any() else None
        if longest is not None:
            tally.test(not longest["total_us"] > limit, "op_longer_than_call", _where(row),
                       f"optree.csv: {longest['path']} {longest['total_us']:.4g} us a call",
                       f"the timed call {row['mean_us']:.4g} us allows {limit:.4g} us")


CORES_SAID = re.compile(r"kept ([\d.]+) (?:of (\d+) )?cores? busy|keep ([\d.]+) of this "
                        r"machine's (\d+) cores")
WAIT_SAID = re.compile(r"waited for a CPU for (\d+)% of the share's time")
BORROWED = re.compile(r"dropped with its round: (.+?)'s share waited")


def machine(tally: Tally, env: dict, rounds: pd.DataFrame | None, pages: list[str]) -> None:
    """No page says more cores busy than the machine has; each round's share quotes its own
    wait."""
    cores = env.get("cpu_count")
    if not isinstance(cores, int) or cores <= 0:
        return
    others = env.get("cores_used_by_others")
    if isinstance(others, (int, float)):
        tally.test(others <= cores, "cores", "env.json", f"cores_used_by_others {others}",
                   f"cpu_count {cores}")
    if rounds is not None and len(rounds) and "others_cores" in rounds:
        worst = rounds["others_cores"].max()
        tally.test(not worst > cores, "cores", "rounds.csv", f"others_cores up to {worst:.3g}",
                   f"env.json cpu_count {cores}")
    for page in pages:
        for found in CORES_SAID.finditer(page):
            said = float(found.group(1) or found.group(3))
            tally.test(said <= cores, "cores", "a page", found.group(0), f"env.json cpu_count {cores}")
    if rounds is None or not len(rounds) or "wait_frac" not in rounds:
        return
    threads = env.get("threads") or 1
    waits = {(r["case_id"], r["variant"], r["round"]): r["wait_frac"]
             for _, r in rounds.iterrows()}
    for _, r in rounds.iterrows():
        reason = _text(r.get("reason"))
        said = WAIT_SAID.search(reason)
        whose = BORROWED.match(reason)  # a share that did not wait names the share that did
        variant = whose.group(1) if whose else r["variant"]
        wait = waits.get((r["case_id"], variant, r["round"]), math.nan)
        if said is None or wait != wait:
            continue
        own = 100 * wait / max(1, threads)
        tally.test(abs(own - int(said.group(1))) <= 1, "share_wait", f"{r['case_id']} "
                   f"{r['variant']} round {r['round']}", f"rounds.csv: {said.group(0)}"
                   + (f" (named as {variant}'s)" if whose else ""),
                   f"{variant}'s wait_frac {wait:.3g} ({own:.0f}% a thread)")


def numbers(tally: Tally, frame: pd.DataFrame, findings: pd.DataFrame) -> None:
    """Every number a page states is finite and possible: measurements.csv's cells and the
    numbers in findings.csv's statements (`1e+302 s of a inf s step` is neither)."""
    for column in frame.columns:
        values = pd.to_numeric(frame[column], errors="coerce")
        bad = frame.loc[[not finite(v) for v in values], "case_id"].tolist() if len(values) else []
        tally.test(not bad, "finite", f"measurements.csv {column}",
                   f"{len(bad)} value(s) not finite or absurd ({', '.join(map(str, bad[:3]))})",
                   "a time, a rate or a count is a finite number")
    for _, f in findings.iterrows():
        text = _text(f.get("statement"))
        bad = [w for w in re.findall(r"(?<![\w.])(?:-?inf|nan|\d[\d.]*e\+?\d+)(?![\w])", text)
               if w in ("inf", "-inf", "nan") or not finite(w)]
        tally.test(not bad, "finite", f"findings.csv {f['case_id']} {f['variant']} {f['code']}",
                   f"states {', '.join(bad)}", "every number a statement gives is finite")


def rows_audit(frame: pd.DataFrame, findings: pd.DataFrame, optree: pd.DataFrame, env: dict,
               rounds: pd.DataFrame | None, pages: list[str]) -> Tally:
    tally = Tally()
    ok = frame[frame["status"] == Status.OK]
    bounds(tally, ok, env)
    bound_findings(tally, ok, findings, env)
    profiles(tally, ok, optree, env)
    machine(tally, env, rounds, pages)
    numbers(tally, frame, findings)
    return tally
