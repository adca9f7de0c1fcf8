"""Keep the README's generated tables in step with the code that defines them:

    python -m suites.tools.docs            # rewrite the generated sections of README.md
    python -m suites.tools.docs --check    # exit 1 if they are out of date (a test runs this)

A generated section sits between `<!-- generated: NAME -->` and `<!-- end: NAME -->`.
"""
from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

from suites.traces.findings import catalog
from suites.reports.run.conventions import (columns_markdown, ladder_markdown, models_markdown,
                                            rules_markdown)

README = Path(__file__).resolve().parents[2] / "README.md"
SECTIONS = {"columns": columns_markdown, "models": models_markdown, "rules": rules_markdown,
            "ladder": ladder_markdown, "findings": catalog.markdown}


def render(text: str) -> str:
    """`text` with every generated section replaced by what the code says now."""
    for name, make in SECTIONS.items():
        pattern = re.compile(rf"(<!-- generated: {name} -->\n)(?:.*?\n)?(<!-- end: {name} -->)", re.S)
        if not pattern.search(text):
            raise ValueError(f"README has no generated section {name!r}")
        text = pattern.sub(lambda m: m.group(1) + make() + "\n" + m.group(2), text)
    return text


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m suites.tools.docs", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--check", action="store_true", help="only say whether it is current")
    args = parser.parse_args(argv)
    current = README.read_text(encoding="utf-8")
    wanted = render(current)
    if args.check:
        if wanted != current:
            print("README.md's generated sections are out of date: run "
                  "python -m suites.tools.docs", file=sys.stderr)
            return 1
        return 0
    README.write_text(wanted, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
