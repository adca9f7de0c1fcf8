"""Keep README.md and docs/*.md in step with the code and with what the commands print:

    python -m suites.tools.docs             # rewrite every generated table
    python -m suites.tools.docs --samples   # and run the sample commands at this commit,
                                            # rewriting their outputs (a few minutes)
    python -m suites.tools.docs --check     # exit 1 if a table is out of date or a sample is
                                            # not what its command gives (a test runs this)

A generated table sits between `<!-- generated: NAME -->` and `<!-- end: NAME -->`, made from
the code that defines it (TABLES). A sample of a command's output sits between
`<!-- sample: NAME -->` and `<!-- end: NAME -->` (suites/tools/doc_samples.py): its first line
says which command printed it, at which commit, on which machine. `--check` regenerates the
samples that do not depend on the machine (a trace analysed) and compares them whole; for the
others it checks that the stamp names the sample's command as doc_samples.py defines it.
"""
from __future__ import annotations

import argparse
import re
import shlex
import sys
from pathlib import Path
from typing import Callable

from suites.reports.run.conventions import (columns_markdown, ladder_markdown, models_markdown,
                                            rules_markdown)
from suites.tools import doc_samples
from suites.traces.findings import catalog

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
DOCS = ROOT / "docs"
TABLES: dict[str, Callable[[], str]] = {
    "columns": columns_markdown, "models": models_markdown, "rules": rules_markdown,
    "ladder": ladder_markdown, "findings": catalog.markdown}


def doc_files() -> list[Path]:
    return [README, *sorted(DOCS.glob("*.md"))]


def _block(kind: str, name: str) -> re.Pattern:
    return re.compile(rf"(<!-- {kind}: {name} -->\n)(.*?)(<!-- end: {name} -->)", re.S)


def _names(text: str, kind: str) -> list[str]:
    return re.findall(rf"<!-- {kind}: (\S+) -->", text)


def render_tables(files: dict[Path, str]) -> dict[Path, str]:
    """Every file with its generated tables as the code says now. Each table stands in exactly
    one file; a marker naming no table is an error."""
    seen: dict[str, Path] = {}
    out = {}
    for path, text in files.items():
        for name in _names(text, "generated"):
            if name not in TABLES:
                raise ValueError(f"{path.name}: no generated table {name!r}; known: "
                                 f"{', '.join(TABLES)}")
            if name in seen:
                raise ValueError(f"generated table {name!r} is in {seen[name].name} and "
                                 f"{path.name}: one place each")
            seen[name] = path
            made = TABLES[name]() + "\n"
            text = _block("generated", name).sub(lambda m: m.group(1) + made + m.group(3), text)
        out[path] = text
    missing = [n for n in TABLES if n not in seen]
    if missing:
        raise ValueError(f"no file holds the generated table(s) {', '.join(missing)}")
    return out


def render_samples(files: dict[Path, str], made: dict[str, str]) -> dict[Path, str]:
    """Every file with the samples in `made` (name -> stamped text) put in place."""
    out = {}
    for path, text in files.items():
        for name in _names(text, "sample"):
            if name in made:
                fenced = f"```\n{made[name]}```\n"
                text = _block("sample", name).sub(lambda m: m.group(1) + fenced + m.group(3),
                                                  text)
        out[path] = text
    return out


def sample_problems(files: dict[Path, str]) -> list[str]:
    """What is wrong with the samples as they stand: unknown, missing, unstamped, a stamp for
    another command, or a machine-independent sample that its command no longer prints."""
    found: dict[str, str] = {}
    for path, text in files.items():
        for name in _names(text, "sample"):
            match = _block("sample", name).search(text)
            found[name] = match.group(2) if match else ""
    problems = [f"sample {n!r}: no such sample; known: {', '.join(doc_samples.SAMPLES)}"
                for n in found if n not in doc_samples.SAMPLES]
    for name, sample in doc_samples.SAMPLES.items():
        body = found.get(name)
        if body is None:
            problems.append(f"sample {name!r}: in no file")
            continue
        text = body.removeprefix("```\n").removesuffix("```\n")
        if not text.startswith(doc_samples.stamp_prefix(sample)):
            problems.append(f"sample {name!r}: not stamped with its command "
                            f"({sample.command}): regenerate it with --samples")
        elif sample.machine_free:
            now = doc_samples.normalised(sample.produce(None))
            output = text[len(doc_samples.stamp_prefix(sample)):].split("\n", 1)[1]
            if doc_samples.normalised(output) != now:
                problems.append(f"sample {name!r}: its command prints something else now")
    return problems


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m suites.tools.docs", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--check", action="store_true", help="only say whether they are current")
    parser.add_argument("--samples", action="store_true",
                        help="also run the sample commands and rewrite their outputs")
    args = parser.parse_args(argv)
    current = {path: path.read_text(encoding="utf-8") for path in doc_files()}
    wanted = render_tables(current)
    if args.check:
        stale = [p.relative_to(ROOT) for p in current if wanted[p] != current[p]]
        problems = [f"{p}: generated tables out of date" for p in stale]
        problems += sample_problems(current)
        for line in problems:
            # This interpreter, as every printed command: a bare `python` may lack the project.
            print(f"docs: {line} ({shlex.quote(sys.executable)} -m suites.tools.docs "
                  "[--samples])", file=sys.stderr)
        return 1 if problems else 0
    if args.samples:
        wanted = render_samples(wanted, doc_samples.make_all())
    for path, text in wanted.items():
        if text != current[path]:
            path.write_text(text, encoding="utf-8")
            print(f"rewrote {path.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
