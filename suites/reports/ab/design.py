"""One A/B design, made or resumed, then judged: its runs in the plan's order (runs.py), its
rows by their pairs (pairs.py), its compare folder written and audited as compare's is, and with
--aa the A/A comparison of A's two runs a pair in <out>/aa/.
"""
from __future__ import annotations

from pathlib import Path

from suites.common.audit import audit_safely
from suites.common.errors import ConfigError
from suites.reports.ab import checkouts, plan as plans, runs, sides
from suites.reports.ab.outputs import Design, write_folder
from suites.reports.ab.pairs import judge
from suites.reports.ab.plan import Plan
from suites.reports.compare import audit
from suites.results.ab_folders import A, A2, B

AA_DIR = "aa"


def _described(c: plans.Checkout) -> str:
    commit = c.commit[:12] if c.commit else "no git commit"
    return f"{c.asked} ({commit}{', uncommitted changes' if c.dirty else ''})"


def _settle(plan: Plan, out_dir: Path, say) -> Plan:
    """The plan kept in out_dir when it is this design (resumed, what it lacks said), else
    this one, saved; another design there is refused."""
    kept = plans.load(out_dir)
    if kept is None:
        out_dir.mkdir(parents=True, exist_ok=True)
        plans.save(plan, out_dir)
        return plan
    diffs = plan.same_design(kept)
    if diffs:
        raise ConfigError(f"--out {out_dir}: holds another A/B design ({'; '.join(diffs)}): "
                          "pass another --out, or the same arguments to resume it")
    if plan.pairs > kept.pairs:
        say(f"extending {out_dir} from {kept.pairs} to {plan.pairs} pairs")
        kept.pairs = plan.pairs
        plans.save(kept, out_dir)
    lacking = runs.missing(kept, out_dir)
    say(f"resuming {out_dir}: {len(kept.order()) - len(lacking)} of {len(kept.order())} runs "
        f"done" + (f"; to make: {', '.join(lacking)}" if lacking else ""))
    return kept


def run_design(a: str, b: str, overrides: list[str], pairs: int, aa: bool, floor: float,
               out_dir: Path, root: Path | None = None, say=print) -> Path:
    """One design, made (or resumed) and judged: out_dir as a compare folder. `root`: where
    the worktrees live (a range shares them: one commit is B of one design, A of the next)."""
    if not 0 < floor < 1:
        raise ConfigError(f"--floor {floor}: use a fraction in (0, 1), e.g. 0.05")
    plan = Plan(checkouts.resolve(A, a), checkouts.resolve(B, b), list(overrides),
                plans.check_pairs(pairs), aa)
    plan = _settle(plan, out_dir, say)
    where = root or out_dir
    plan.a, plan.b = checkouts.prepare(plan.a, where), checkouts.prepare(plan.b, where)
    plans.save(plan, out_dir)
    say(f"A: {_described(plan.a)}\nB: {_described(plan.b)}")
    say(f"design: {plan.pairs} pairs, {len(plan.order())} runs of: "
        f"run_suite.py {' '.join(plan.arguments())}")
    try:
        runs.make_all(plan, out_dir, say)
    except KeyboardInterrupt:
        say(f"interrupted: the same command with --out {out_dir} resumes it")
        raise
    lacking = runs.missing(plan, out_dir)
    if root is None and not lacking:
        checkouts.remove_worktrees(out_dir)
    elif root is None and (out_dir / checkouts.CHECKOUTS_DIR).is_dir():
        say(f"{len(lacking)} run(s) not complete ({', '.join(lacking)}): the worktrees stay in "
            f"{out_dir / checkouts.CHECKOUTS_DIR} for a resume (git worktree remove, or a "
            "complete resume, takes them away)")
    return judge_design(plan, out_dir, floor, say)


def _judge_pair(plan: Plan, out_dir: Path, folder: Path, first: str, second: str, floor: float,
                say) -> None:
    frame = judge(sides.cells_of(plan, out_dir, first), sides.cells_of(plan, out_dir, second),
                  floor)
    seconds = sum(r.get("seconds", 0) for r in plan.runs.values())  # every run the design made
    design = Design(plan, floor, frame, seconds, sides.differences(plan, out_dir, first, second))
    side_a, side_b = sides.side(plan, out_dir, first), sides.side(plan, out_dir, second)
    table, summary = write_folder(folder, frame, side_a, side_b, design)
    for line in design.differences:
        say(f"warning: {first} and {second} differ in {line}")
    say(table)
    say("")
    say("\n".join(side_a.incomplete + side_b.incomplete + summary + design.lines()))
    say(f"compare folder: {folder}")
    say("\n".join(audit_safely(audit.audit, folder, audit.KIND).lines()))


def judge_design(plan: Plan, out_dir: Path, floor: float, say=print) -> Path:
    """The compare folder of a design's runs, whatever of them exist (a design cut short is
    judged on the pairs it has, and its pages name the runs it lacks)."""
    _judge_pair(plan, out_dir, out_dir, A, B, floor, say)
    if plan.aa:
        say(f"\nA/A ({plan.a.asked} against itself, the design's own false alarms):")
        _judge_pair(plan, out_dir, out_dir / AA_DIR, A, A2, floor, say)
    return out_dir
