"""`python -m suites.report RUN`, `fusebench-report`: rebuild a run's report
(suites/reports/run/command.py). `python -m suites.report --check FOLDER...`: audit any folder
fusebench writes (a run, a ladder from collect, a compare, a history, an analyze --suggest):
every statement its pages make, tested against the others and against the numbers it rests on;
each contradiction printed with both sources, exit 1 on any, 2 on a folder that is none of
these. Each room audits its own pages (an audit.py beside the code that writes them); this entry
point only tells the kinds apart, since no room below it may know them all."""
import sys
from pathlib import Path

from suites.common.audit import Audit
from suites.common.cli import EXIT_BAD_INPUT
from suites.common.errors import InputError
from suites.reports.run.command import main as report_main

CHECK = "--check"


def _history(folder: Path) -> bool:
    return (folder / "regressions.json").is_file() and (folder / "history.md").is_file()


def audit_folder(folder: Path) -> Audit:
    """The audit of one folder, by its kind (told by a file only that kind writes)."""
    from suites.reports.compare import audit as compare
    from suites.reports.history import audit as history
    from suites.reports.ladder import audit as ladder
    from suites.reports.run import audit as run
    from suites.suggest import audit as suggest

    folder = Path(folder)
    if not folder.is_dir():
        raise InputError(f"{folder}: no such folder")
    if (folder / "measurements.csv").is_file():
        return run.audit(folder)
    for looks_like, audit in ((ladder.looks_like, ladder.audit),
                              (compare.looks_like, compare.audit),
                              (_history, history.audit), (suggest.looks_like, suggest.audit)):
        if looks_like(folder):
            return audit(folder)
    raise InputError(f"{folder}: not a folder fusebench writes (a run, ladder, compare, history "
                     "or suggest folder): nothing to audit")


def check_main(folders: list[str]) -> int:
    if not folders:
        print(f"fusebench: error: {CHECK} needs at least one folder", file=sys.stderr)
        return EXIT_BAD_INPUT
    found = 0
    for name in folders:
        try:
            result = audit_folder(Path(name))
        except InputError as exc:
            print(f"fusebench: error: {exc}", file=sys.stderr)
            return EXIT_BAD_INPUT
        print("\n".join(result.lines()))
        found += len(result.found)
    return 1 if found else 0


def main(argv=None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if CHECK in args:
        return check_main([a for a in args if a != CHECK])
    return report_main(args)


if __name__ == "__main__":
    sys.exit(main())
