"""`python -m suites.report RUN`, `fusebench-report`: rebuild a run's report
(suites/reports/run/command.py). `python -m suites.report --check FOLDER...`: audit any folder
fusebench writes (a run, a ladder from collect, a compare, a history, an analyze --suggest):
every statement its pages make, tested against the others and against the numbers it rests on;
each contradiction printed with both sources, exit 1 on any, 2 on a folder that is none of
these. A folder holding such folders (a multirun sweep: its jobs and its ladder; a results/
tree) has each of them audited. Each room audits its own pages (an audit.py beside the code
that writes them); this entry point only tells the kinds apart, since no room below it may know
them all."""
import sys
from pathlib import Path

from suites.common.audit import Audit, audit_safely
from suites.common.cli import EXIT_BAD_INPUT
from suites.common.errors import InputError
from suites.reports.run.command import main as report_main

CHECK = "--check"


def _history(folder: Path) -> bool:
    return (folder / "regressions.json").is_file() and (folder / "history.md").is_file()


def _audit_of(folder: Path):
    """(kind, audit) of a folder fusebench writes, told by a file only that kind writes; None
    for any other folder."""
    from suites.reports.compare import audit as compare
    from suites.reports.history import audit as history
    from suites.reports.ladder import audit as ladder
    from suites.reports.run import audit as run
    from suites.suggest import audit as suggest

    if (folder / "measurements.csv").is_file():
        return "run", run.audit
    for kind, looks_like, audit in (("ladder", ladder.looks_like, ladder.audit),
                                    ("compare", compare.looks_like, compare.audit),
                                    ("history", _history, history.audit),
                                    ("suggest", suggest.looks_like, suggest.audit)):
        if looks_like(folder):
            return kind, audit
    return None


def audit_folder(folder: Path) -> Audit:
    """The audit of one folder, by its kind."""
    folder = Path(folder)
    if not folder.is_dir():
        raise InputError(f"{folder}: no such folder")
    found = _audit_of(folder)
    if found is None:
        raise InputError(f"{folder}: not a folder fusebench writes (a run, ladder, compare, "
                         "history or suggest folder): nothing to audit")
    return audit_safely(found[1], folder, found[0])


def audits_under(folder: Path, seen: set | None = None) -> list[Audit]:
    """The folder's audit, and that of every folder fusebench wrote under it (a multirun sweep's
    jobs and ladder, a run's own `collect` or `history` folder, a results/ tree). Links to
    folders are not followed (a `latest` link would audit a run twice, a loop forever)."""
    folder = Path(folder)
    if not folder.is_dir():
        raise InputError(f"{folder}: no such folder")
    seen = set() if seen is None else seen
    if folder.resolve() in seen:
        return []
    seen.add(folder.resolve())
    audits = [audit_folder(folder)] if _audit_of(folder) is not None else []
    try:
        subs = sorted(p for p in folder.iterdir()
                      if p.is_dir() and not p.is_symlink() and not p.name.startswith("."))
    except OSError as exc:
        if not audits:
            raise InputError(f"{folder}: cannot be read ({exc.strerror or exc})") from exc
        subs = []
    for sub in subs:
        audits += _below(sub, seen)
    if not audits:
        raise InputError(f"{folder}: not a folder fusebench writes (a run, ladder, compare, "
                         "history or suggest folder), nor one holding any: nothing to audit")
    return audits


def _below(folder: Path, seen: set) -> list[Audit]:
    """A subfolder holding nothing fusebench wrote is no error inside a larger one (a folder
    fusebench wrote never raises here: its audit's own failure is a finding, audit_failed)."""
    try:
        return audits_under(folder, seen)
    except InputError:
        return []


def check_main(folders: list[str]) -> int:
    """0: every statement holds; 1: a contradiction (or an audit that could not read a page);
    2: a folder that is no fusebench folder (the others are audited all the same)."""
    if not folders:
        print(f"fusebench: error: {CHECK} needs at least one folder", file=sys.stderr)
        return EXIT_BAD_INPUT
    found, bad = 0, False
    for name in folders:
        try:
            audits = audits_under(Path(name))
        except InputError as exc:
            print(f"fusebench: error: {exc}", file=sys.stderr)
            bad = True
            continue
        for result in audits:
            print("\n".join(result.lines()))
            found += len(result.found)
    return EXIT_BAD_INPUT if bad else 1 if found else 0


def main(argv=None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if CHECK in args:
        return check_main([a for a in args if a != CHECK])
    return report_main(args)


if __name__ == "__main__":
    sys.exit(main())
