"""The docs generator: every table in exactly one file, a marker naming nothing is an error, and
a sample whose command prints something else now (or that names another command) is caught.
The README opens with a quick start a newcomer reads: the two commands, what a run gives, the
commands to use next and the user's own block, before any reference material."""
from pathlib import Path

import pytest

from suites.tools import doc_samples, docs


def _files(**texts) -> dict[Path, str]:
    return {Path(f"{name}.md"): text for name, text in texts.items()}


def _all_tables() -> str:
    return "".join(f"<!-- generated: {n} -->\n<!-- end: {n} -->\n" for n in docs.TABLES)


def test_every_table_is_made_once_and_unknown_markers_are_errors():
    made = docs.render_tables(_files(a=_all_tables()))
    assert docs.TABLES["ladder"]() in made[Path("a.md")]
    with pytest.raises(ValueError, match="no generated table 'nope'"):
        docs.render_tables(_files(a=_all_tables() + "<!-- generated: nope -->\n"))
    with pytest.raises(ValueError, match="is in a.md and b.md"):
        docs.render_tables(_files(a=_all_tables(), b="<!-- generated: ladder -->\n"
                                                      "<!-- end: ladder -->\n"))
    with pytest.raises(ValueError, match="no file holds the generated table"):
        docs.render_tables(_files(a="nothing here\n"))


def _stamped(sample, body: str) -> str:
    return f"```\n{doc_samples.stamp_prefix(sample)}commit 0000000\n{body}```\n"


def _with_samples(bodies: dict[str, str]) -> dict[Path, str]:
    text = "".join(f"<!-- sample: {n} -->\n{_stamped(doc_samples.SAMPLES[n], b)}"
                   f"<!-- end: {n} -->\n" for n, b in bodies.items())
    return _files(a=text)


def test_a_stale_or_unstamped_sample_is_named():
    fresh = doc_samples.analyze_output()
    bodies = {name: "output\n" for name in doc_samples.SAMPLES}
    assert docs.sample_problems(_with_samples({**bodies, "analyze": fresh})) == []
    stale = docs.sample_problems(_with_samples({**bodies, "analyze": fresh + "one more\n"}))
    assert stale == ["sample 'analyze': its command prints something else now"]
    files = _with_samples(bodies)
    files[Path("a.md")] = files[Path("a.md")].replace("suites.analyze", "suites.other")
    assert any("'analyze': not stamped with its command" in p
               for p in docs.sample_problems(files))
    del bodies["compare"]
    assert "sample 'compare': in no file" in docs.sample_problems(_with_samples(bodies))


def test_the_readme_opens_with_a_short_quick_start():
    text = docs.README.read_text()
    quick = text.split("## Quick start", 1)[1].split("\n## ", 1)[0]
    lines = [line for line in quick.splitlines() if line.strip()]
    assert len(lines) <= 80, len(lines)  # about 60 lines of prose, plus the two short samples
    for must in ("make run", "make test", "report.html", "python -m suites.report",
                 "python -m suites.compare", "python -m suites.collect",
                 "python -m suites.analyze", "kernels/api.py"):
        assert must in quick, must
    assert text.index("## Quick start") < text.index("## Your own block, worked") \
        < text.index("## Layout")
