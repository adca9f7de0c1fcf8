"""How far two runs of one commit land apart beyond what their rounds show: the drift of a run,
per suite compared (a multirun's jobs pair by suite), and the differences between the two runs'
settings that compare warns of, or refuses on.

Drift: from the A/A control where both runs carry one (`timing.aa_control=true`: a second copy
of the baseline timed as its own variant, so any gap between the two copies is the machine's),
else the constant DRIFT_SD, or what --drift-sd gives. The control is read two ways and the
larger drift kept: its two copies within each run (what moves one row and not the next), and
the control itself between the two runs (what moved the whole run; a change to the baseline's
own code reads as drift there too, which makes compare more careful, never wrong the other way).
"""
from __future__ import annotations

import math
from dataclasses import dataclass

from suites.common.errors import InputError
from suites.reports.compare.loading import AA_CONTROL, RunFacts, Side, shared_figure
from suites.results.columns import KEY
from suites.results.intervals import MIN_AA_CASES, aa_drift_sd, aa_shift_sd

# The drift of one run (sd of its offset, in logs: about a fraction) when no A/A control says.
# Measured on the A/A runs of this 2-core shared machine (/tmp/aa: matmul_add fp32, default
# timing, 5 rounds; 3 runs each of two commits and of two input flows; equal code for timing),
# all 12 pairs of runs of one group, 138 rows ok on both sides:
#   rms log ratio 0.122 against a round-noise se of 0.041: mean(d^2 - round var) = 0.0133, a
#   drift of 8.2% a run by moments; heavy-tailed (median excess 0.0011, i.e. 2.4%), largest at
#   M64 (19%) and M128 (10%), 4-5% at M512-M2048; part of it run-wide (the pairs' mean log ratios
#   spread 6.4%, n1-n2 +11.7% on every row), part per row (10% around that).
#   A/A false faster/slower at 99%, per 60 rows: drift 0: 9.6, 0.03: 7.4, 0.05: 4.8, 0.08: 2.6,
#   0.10: 1.7, 0.11: 0.43, 0.12: 0 (with the six flow runs as one group, 206 rows: 0.87 at 0.12).
# So 0.12, the smallest (in steps of 0.01) that keeps A/A at or under 1 false call per 60 rows:
# a row must then move by 50-80% to be called (the median mde). An A/A control, or --drift-sd
# on a quieter machine, is what lets compare see a 15% change.
DRIFT_SD = 0.12


@dataclass(frozen=True)
class Drift:
    sd: float
    reason: str  # said in the outputs: "from the A/A control, 12 cases: 1.8%"
    from_aa_control: bool = False
    # The degrees of freedom of `sd` (run_ratio's drift_dof): the cases an A/A control read it
    # from. With 6 cases the estimate is loose (an A/A pair here read 7.3% from 6 cases while
    # one of them moved 16%), and the interval widens by Student's t as for a few rounds.
    dof: float = math.inf


def _aa_cases(facts: list[RunFacts]) -> list | None:
    """The A/A control's cases of these runs; None where a run has none."""
    if not facts or any(f.aa_logs is None for f in facts):
        return None
    return [case for f in facts for case in f.aa_logs]


def suite_drift(a: list[RunFacts], b: list[RunFacts], given: float | None,
                shift: tuple[float | None, int] | None = None) -> Drift:
    """The drift for one suite's rows: given, else from both sides' A/A control (within each run,
    and `shift`: between the runs (its drift and the cases it was read from), the larger), else
    DRIFT_SD."""
    if given is not None:
        return Drift(given, f"given: {given:.1%}")
    cases_a, cases_b = _aa_cases(a), _aa_cases(b)
    if cases_a is None or cases_b is None:
        lacking = [label for label, cases in (("A", cases_a), ("B", cases_b)) if cases is None]
        return Drift(DRIFT_SD, f"default {DRIFT_SD:.0%}: no A/A control ({AA_CONTROL}) in "
                               f"{' or '.join(lacking)}")
    within = aa_drift_sd(cases_a + cases_b)
    usable = sum(len(c) >= 2 for c in cases_a + cases_b)
    between, between_cases = shift if shift is not None else (None, 0)
    if within is None or between is None:
        return Drift(DRIFT_SD, f"default {DRIFT_SD:.0%}: the A/A control has too few cases of 2 "
                               f"clean rounds or more ({usable} within the runs; "
                               f"{MIN_AA_CASES} needed, between the runs too)")
    sd, dof = max((within, usable), (between, between_cases))
    return Drift(sd, f"from the A/A control, {usable} cases: {sd:.1%} (between the runs "
                     f"{between:.1%}, within each {within:.1%}; read from {dof} cases, so "
                     f"intervals use Student's t with {dof} degrees of freedom for it)",
                 from_aa_control=True, dof=dof)


def _shifts(a: Side, b: Side) -> dict[str, tuple[float | None, int]]:
    """suite -> the drift the A/A control shows between the two runs (aa_shift_sd), and the
    number of cases it was read from."""
    figure = shared_figure(a, b)
    ra, rb = a.rounds(figure), b.rounds(figure)
    pairs: dict[str, list] = {}
    for key, rounds in ra.items():
        row = dict(zip(KEY, key))
        if row["variant"] == AA_CONTROL and key in rb:
            pairs.setdefault(row["suite"], []).append((rounds, rb[key]))
    return {suite: (aa_shift_sd(p), sum(len(ra) >= 2 and len(rb) >= 2 for ra, rb in p))
            for suite, p in pairs.items()}


def _by_suite(side: Side) -> dict[str, list[RunFacts]]:
    out: dict[str, list[RunFacts]] = {}
    for facts in side.facts:
        out.setdefault(facts.suite, []).append(facts)
    return out


def drifts(a: Side, b: Side, given: float | None = None) -> dict[str, Drift]:
    """suite -> its drift, for every suite either side has."""
    fa, fb = _by_suite(a), _by_suite(b)
    shifts = _shifts(a, b)
    return {suite: suite_drift(fa.get(suite, []), fb.get(suite, []), given, shifts.get(suite))
            for suite in dict.fromkeys([*fa, *fb])}


def _values(facts: list[RunFacts], name: str) -> str:
    return ", ".join(dict.fromkeys(f.settings.get(name, "-") for f in facts))


def _device_kinds(values: str) -> set[str]:
    """The kinds of device named in a joined `_values` string: cuda:0 is cuda; `-` (a run
    whose env.json cannot say) names none."""
    return {v.split(":")[0].split(" ")[0] for v in values.split(", ") if v != "-"}


def differences(a: Side, b: Side) -> list[str]:
    """A line per setting the two sides' runs of one suite do not share ("timing preset: A
    quick, B default"), the suite named where the sides hold more than one; an InputError when
    one suite ran on different kinds of device (a CPU's row and a GPU's do not mean the same)."""
    fa, fb = _by_suite(a), _by_suite(b)
    shared = [s for s in fa if s in fb]
    lines = []
    for suite in shared:
        names = dict.fromkeys(n for f in fa[suite] + fb[suite] for n in f.settings)
        presets_differ = _values(fa[suite], "timing preset") != _values(fb[suite], "timing preset")
        for name in names:
            va, vb = _values(fa[suite], name), _values(fb[suite], name)
            # Another preset sets every timing.* value anew: the preset names them all.
            # A setting one side cannot say (its env.json missing or corrupt) is unknown, not
            # different: the reader's line, among compare's lines to read with care, says so.
            if va == vb or "-" in (va, vb) or (presets_differ and name.startswith("timing.")):
                continue
            where = f"{suite}: " if len(shared) > 1 else ""
            kinds = (_device_kinds(va), _device_kinds(vb))
            if name == "device" and all(kinds) and kinds[0] != kinds[1]:
                raise InputError(f"{where}device: A {va}, B {vb}: rows timed on different kinds "
                                 "of device do not measure the same thing; compare runs of one "
                                 "device")
            lines.append(f"{where}{name}: A {va}, B {vb}")
    return lines
