"""gpu_check's summary: a short text for the end of stdout (the lease returns its last 12,000
characters) and summary.txt, which adds every row; both made from the recorded rows alone, so
the summary of a run killed half-way says what it had."""
from __future__ import annotations

from collections import Counter
from pathlib import Path

from suites.tools.gpu_check_record import BAD, STATUSES, Recorder, fit, table
from suites.common.numbers import span
from suites.common.text import cut

MAX_PROBLEMS = 20  # failed/deadline rows listed in the short text; summary.txt lists all


def _counts(counter: Counter) -> str:
    return ", ".join(f"{counter[s]} {s}" for s in STATUSES if counter.get(s)) or "no rows"


def _head(rec: Recorder, deadlines: dict) -> list[str]:
    env = {r["item"]: r for r in rec.rows if r["section"] == "environment"}
    versions, gpu = env.get("versions", {}), env.get("gpu", {})
    lines = [f"gpu_check: {gpu.get('gpu', 'no GPU')} (sm {gpu.get('capability', '-')}, "
             f"{gpu.get('sm_count', '-')} SMs, {gpu.get('free_gib', '-')} GiB free) | torch "
             f"{versions.get('torch', '?')} triton {versions.get('triton', '?')} cuda "
             f"{versions.get('cuda', '-')} | event clock step "
             f"{gpu.get('event_resolution_us', '-')} us",
             f"rows: {_counts(rec.counts())} | exit {rec.exit_code()}"]
    for section in deadlines:
        rows = [r for r in rec.rows if r["section"] == section]
        if rows:
            took = rec.section_s.get(section)
            lines.append(f"  {section:<11} {_counts(rec.counts(section))}; "
                         + (f"{took:.0f} s, " if took is not None else "")
                         + f"budget {deadlines[section]:.0f} s")
    run = next((r for r in rec.rows if r["item"] == "run"), {})
    if "total" in rec.section_s and run.get("deadline_s") is not None:
        lines.append(f"  whole check {rec.section_s['total']:.0f} s of its deadline "
                     f"{run['deadline_s']:.0f} s")
    for r in rec.rows:
        if r["section"] == "archive":
            lines.append(_archive(r))
    return lines


def _archive(row: dict) -> str:
    if row["status"] != "ok":
        return f"  archive: {row['status']}: {row.get('error', '')}"
    kb = row.get("bytes", 0) / 1024
    return (f"  archive: {row.get('archive')} ({kb:.0f} KB, {row.get('files')} files of "
            f"{len(row.get('run_folders') or [])} run folders)"
            + (f"; {row['note']}" if row.get("note") else ""))


def _configs(rows: list[dict]) -> list[str]:
    """Per kernel and key: how many configs passed, failed, were pruned or not reached."""
    groups: dict[str, Counter] = {}
    for r in rows:
        group = ("variants, the autotuner's pick" if r["item"].endswith(" autotuned")
                 else r["item"].split(" [")[0])
        groups.setdefault(group, Counter())[r["status"]] += 1
    return [fit(f"  {_counts(c):<34} {group}") for group, c in groups.items()]


def _kernels(rows: list[dict]) -> list[str]:
    shown = [dict(r, bench=r["item"].rsplit(" ", 1)[0], variant=r["item"].rsplit(" ", 1)[-1],
                  diff=r.get("diff_vs_library"), ratio=_with_interval(r)) for r in rows]
    return table(shown, ["bench", "variant", "status", "kernel_us", "tflops", "ratio", "target",
                         "diff"])


def _with_interval(row: dict):
    """A paired ratio with its 95% interval (`1.02 (0.98-1.05)`), or the value as recorded."""
    ratio, low, high = row.get("ratio"), row.get("ratio_low"), row.get("ratio_high")
    if not isinstance(ratio, float) or not isinstance(low, float) or low != low:
        return ratio
    return f"{ratio:.3f} ({span(low, high)})"


def _structure(rows: list[dict]) -> list[str]:
    facts = [dict(r, run=r["item"].split(" ")[0], variant=r["item"].rsplit(" ", 1)[-1],
                  ours=r.get("n_kernels")) for r in rows if "series_kernels" in r]
    if not facts:
        return ["  (no run at the series' shapes finished)"]
    return table(facts, ["run", "variant", "series_kernels", "ours", "agrees", "series_saw",
                         "status"])


def _suites(rows: list[dict]) -> list[str]:
    runs = [r for r in rows if " " not in r["item"]]
    per_run = [f"  {r['item']}: {r['status']}"
               + (f", {r['rows']} of {r['planned']} rows in {r['folder']}" if "rows" in r else "")
               + (f": {r['error']}" if r.get("error") else "") for r in runs]
    return per_run + ["kernels per call, the series' and ours (reference shapes):"] + \
        _structure(rows)


PROBES = ("cupti probe", "sm clock", "l2 flush kinds")
PICKS = "autotune picks"  # a section's row of what each autotuner picked
_NOT_SHOWN = {"section", "item", "status", "t_s", "seconds", "pid"}


def _probe(row: dict) -> str:
    values = ", ".join(f"{k} {v}" for k, v in row.items() if k not in _NOT_SHOWN)
    return fit(f"  {row['item']}: {row['status']}" + (f": {values}" if values else ""))


def short(rec: Recorder, deadlines: dict) -> str:
    lines = _head(rec, deadlines)
    picks = [r for r in rec.rows if r["item"] == PICKS]
    by_section = {s: [r for r in rec.rows if r["section"] == s and r["item"] != PICKS]
                  for s in deadlines}
    probes = [r for r in by_section.get("environment", []) if r["item"] in PROBES]
    if probes:
        lines += ["", "== environment: first-contact probes"] + [_probe(r) for r in probes]
    if by_section.get("configs"):
        lines += ["", "== configs: Triton kernels and autotune configs vs float64 reference"]
        lines += _configs(by_section["configs"])
    if by_section.get("kernels"):
        lines += ["", "== kernels: kernel time (us), ratio = library / Triton"]
        lines += _kernels(by_section["kernels"])
    if by_section.get("suites"):
        lines += ["", "== suites: the harness end to end"] + _suites(by_section["suites"])
    if any(r.get("picks") for r in picks):
        lines += ["", "== autotune picks (results.jsonl has every key)"]
        lines += [fit(f"  {r['section']}: {kernel}: {len(keys)} key(s), e.g. "
                      f"{next(iter(keys.values()))}")
                  for r in picks for kernel, keys in (r.get("picks") or {}).items()]
    problems = [r for r in rec.rows if r["status"] in BAD]
    if problems:
        lines += ["", f"== not ok ({len(problems)})"]
        lines += ["  " + cut(f"{r['section']}: {r['item']}: {r['status']}: {r.get('error') or ''}",
                             98) for r in problems[:MAX_PROBLEMS]]
        if len(problems) > MAX_PROBLEMS:
            lines.append(f"  ... {len(problems) - MAX_PROBLEMS} more in summary.txt")
    return "\n".join(lines)


def write(rec: Recorder, out: Path, deadlines: dict) -> str:
    """summary.txt (the short text, then every row) rewritten whole; returns the short text."""
    text = short(rec, deadlines)
    everything = [text, "", "== every row (results.jsonl has all their fields)"]
    for r in rec.rows:
        detail = r.get("error") or r.get("note") or ""
        everything.append(f"{r['section']:<11} {r['status']:<8} {r['item']}"
                          + (f"  {detail}" if detail else ""))
    path = Path(out) / "summary.txt"
    tmp = path.with_suffix(".tmp")
    tmp.write_text("\n".join(everything) + "\n")
    tmp.replace(path)  # whole or not at all: a kill mid-write leaves the previous one
    return text
