"""The counters of a series: what a row counts rather than times, tracked exactly.

A counter needs no GPU and no quiet machine: kernels and ops per call, graphs built, graph
breaks and recompiles, Inductor's kernels, what autograd saves, the SDPA backend, the set of
kernels a call launches, a Triton kernel's registers, spills and shared memory. They are
deterministic for a given code path, so there is no noise to judge against: any change is a
change (suites/reports/history/gate.py `counter_changes`), listed as a change of its own kind
("n_kernels 2 -> 3 at run #5") whether or not the time moved, and explained like any other
(suites/reports/history/explain.py).

Which counters: every one of COLUMNS a run's measurements.csv holds (a column another version
adds, e.g. `graph_breaks`, is tracked from the first run that has it; a run without it is
skipped, not a change), the row's status where it becomes one that did not run (`failed`,
`incorrect`, `skipped`: `noisy` is the machine's state, not the row's, and counts as ran), the
row's kernel set from kernels.csv, and triton_counters.csv where runs write one: per kernel
and config (and architecture), its numeric columns (registers, spills, shared_bytes, ...). A
triton_counters.csv with the row key (suite, case_id, variant) is tracked per row; one without
it, per kernel on its own, as a series of the run's suite.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

from suites.reports.history.gate import counter_changes
from suites.results.columns import KEY, Status

# measurements.csv's counters, in the order the page lists them.
COLUMNS = ("n_kernels", "n_cpu_ops", "compile_graphs", "graph_breaks", "recompiles",
           "inductor_kernels", "bwd_graphs", "bwd_graph_ops", "saved_tensors",
           "partition_saved", "recomputed_ops", "backend")
STATUS = "status"
KERNEL_SET = "kernels"
NOT_RUN = (Status.FAILED, Status.INCORRECT, Status.SKIPPED)
# triton_counters.csv: the columns naming a kernel's build (the rest, numeric, are counters).
TRITON_IDENTITY = ("kernel", "specialisation", "config", "arch")
TRITON_BUILDS = "triton builds"  # the counter holding a row's set of Triton builds, per target


@dataclass(frozen=True)
class CounterEvent:
    name: str          # the counter: a column, `status`, `kernels`, `registers (kernel)`
    run: int           # the run (its index in the history) whose value differs
    before_run: int    # the last run before it with a value
    before: object
    after: object

    def text(self) -> str:
        if self.name == KERNEL_SET:
            return kernel_set_change(self.before, self.after)
        if self.name.startswith(TRITON_BUILDS):
            old, new = (set(str(v).split("; ")) for v in (self.before, self.after))
            diff = [f"+{b}" for b in sorted(new - old)] + [f"-{b}" for b in sorted(old - new)]
            return f"{self.name}: {', '.join(diff)}"
        return f"{self.name} {_show(self.before)} -> {_show(self.after)}"


def weight(name: str) -> int:
    """How much a Triton counter's change says, to order them: a spill first (every spill a
    round trip through L1/L2), then the set of builds (a config retuned or dropped), then
    shared memory (occupancy), then registers."""
    for i, what in enumerate(("spill", TRITON_BUILDS, "shared")):
        if name.startswith(what):
            return 3 - i
    return 0


def _show(value) -> str:
    if isinstance(value, float) and value == int(value):
        return str(int(value))
    return str(value)


def _split(kernel_set: str) -> dict[str, str]:
    """`name x2; other x1` -> {name: x2, other: x1}."""
    out = {}
    for item in filter(None, (s.strip() for s in str(kernel_set).split("; "))):
        name, _, calls = item.rpartition(" x")
        out[name or item] = calls if name else ""
    return out


def kernel_set_change(before, after) -> str:
    """The difference of two kernel sets in words: kernels that appeared, vanished, or are
    launched a different number of times a call."""
    old, new = _split(before), _split(after)
    parts = []
    gone = [k for k in old if k not in new]
    came = [k for k in new if k not in old]
    if len(gone) == 1 and len(came) == 1:
        parts.append(f"`{came[0]}` instead of `{gone[0]}`")
    else:
        parts += [f"+`{k}`" for k in came] + [f"-`{k}`" for k in gone]
    parts += [f"`{k}` x{old[k]} -> x{new[k]}" for k in old if k in new and old[k] != new[k]]
    return "kernels: " + ", ".join(parts)


def _value(row: dict, name: str):
    if name == STATUS:
        status = row.get("status")
        return status if status in NOT_RUN else "ran"
    value = row.get(name)
    if value is None or value == "" or (isinstance(value, float) and math.isnan(value)):
        return None
    return value


def row_counters(runs, keys) -> dict[str, list]:
    """counter -> its value in each run of a series (None where the run has none); `runs` and
    `keys`: the series' runs and its row key in each (loading.Run, loading.Key)."""
    values: dict[str, list] = {}
    rows = [run.rows.get(key, {}) for run, key in zip(runs, keys)]
    for name in (STATUS, *COLUMNS):
        column = [_value(row, name) for row in rows]
        if any(v is not None for v in column):
            values[name] = column
    sets = [None if run.kernel_sets is None else run.kernel_sets.get(key)
            for run, key in zip(runs, keys)]
    # A row not ok has no profile: its missing kernel set is not a change.
    sets = [s if rows[i].get("status") == Status.OK else None for i, s in enumerate(sets)]
    if any(s is not None for s in sets):
        values[KERNEL_SET] = sets
    for name, column in triton_row_counters(runs, keys).items():
        values[name] = column
    return values


def _number_or_text(text):
    try:
        value = float(text)
    except (TypeError, ValueError):
        return text if text not in (None, "") else None
    return None if math.isnan(value) else value


def _triton_rows(run, key=None) -> list[dict]:
    rows = run.triton or []
    if key is None:
        return rows
    return [r for r in rows if tuple(r.get(c) for c in KEY) == key]


def _triton_name(row: dict, field: str) -> str:
    build = ", ".join(str(row[c]) for c in TRITON_IDENTITY[1:] if row.get(c))
    return f"{field} ({row.get('kernel')}{' ' + build if build else ''})"


def _triton_values(rows: list[dict]) -> dict[str, object]:
    """Each build's counters by name; and per target, two that survive a change of the builds
    themselves (a config added, retuned or dropped leaves the old build's counters behind, and
    a counter a run lacks is no change): the set of builds, and per kernel its worst config's
    value of each counter ("spill_bytes (gemm, sm_90, worst config) 0 -> 1024")."""
    out: dict[str, object] = {}
    builds: dict[str, list[str]] = {}
    worst: dict[str, float] = {}
    for row in rows:
        arch = row.get("arch") or ""
        if row.get("kernel"):
            builds.setdefault(arch, []).append(f"{row['kernel']} [{row.get('config', '')}]")
        for field, text in row.items():
            if field in TRITON_IDENTITY or field in KEY:
                continue
            value = _number_or_text(text)
            if value is None:
                continue
            out[_triton_name(row, field)] = value
            if isinstance(value, float) and row.get("kernel"):
                name = f"{field} ({row['kernel']}{', ' + arch if arch else ''}, worst config)"
                worst[name] = max(worst.get(name, value), value)
    for arch, names in builds.items():
        out[f"{TRITON_BUILDS}{' (' + arch + ')' if arch else ''}"] = "; ".join(
            sorted(set(names)))
    return {**out, **worst}


def triton_row_counters(runs, keys) -> dict[str, list]:
    """triton_counters.csv per row (a file with the row key), as counters of the series."""
    per_run = []
    for run, key in zip(runs, keys):
        rows = run.triton
        if rows is None or not rows or not all(c in rows[0] for c in KEY):
            per_run.append(None)
        else:
            per_run.append(_triton_values(_triton_rows(run, key)))
    names = dict.fromkeys(n for values in per_run if values for n in values)
    return {n: [None if values is None else values.get(n) for values in per_run]
            for n in names}


def run_level_triton(runs) -> dict[tuple[str, str], dict[str, list]]:
    """triton_counters.csv without the row key: (suite, machine) -> counter -> per run of that
    suite and machine, its value (None where a run has none)."""
    groups: dict[tuple[str, str], list] = {}
    for run in runs:
        if run.triton and not all(c in run.triton[0] for c in KEY):
            groups.setdefault((run.suite, run.machine), []).append(run)
    out = {}
    for group, members in groups.items():
        per_run = [_triton_values(run.triton) for run in members]
        names = dict.fromkeys(n for values in per_run for n in values)
        out[group] = {"runs": members,
                      "values": {n: [values.get(n) for values in per_run] for n in names}}
    return out


def events(values: dict[str, list], run_indices: list[int]) -> list[CounterEvent]:
    """Every exact change of every counter, in run order; `run_indices`: each position's run."""
    found = []
    for name, column in values.items():
        last = {}
        for i, value in enumerate(column):
            if value is not None:
                last[i] = value
        known = sorted(last)
        for change in counter_changes(column):
            before_at = max(i for i in known if i < change.index)
            found.append(CounterEvent(name, run_indices[change.index], run_indices[before_at],
                                      change.before, change.after))
    return sorted(found, key=lambda e: (e.run, e.name))
