"""Imports point one way: run_suite.py -> suites -> kernels. Read from the source (ast), so a
lazy import inside a function counts too. The trace library (suites/profiling) stands alone,
the kernels know nothing of the suites, and only run_suite.py and suites/hydra_sweep.py (the
Hydra side of a sweep: its jobs, and the callback that writes sweep.json) touch Hydra."""
from __future__ import annotations

import ast
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
CONFIG_LAYER = ("hydra", "omegaconf", "suites.spec", "suites.suite_table", "suites.shape_config",
                "suites.cli_checks", "suites.hydra_sweep", "run_suite")
HYDRA_FILES = ("suites/hydra_sweep.py",)  # besides run_suite.py
# (folder, forbidden module prefixes, allowed exceptions among them)
RULES = [
    ("kernels", ("suites", "hydra", "omegaconf", "pandas", "matplotlib", "run_suite"), ()),
    ("suites/profiling", ("suites", "hydra", "omegaconf"), ("suites.profiling",)),
    ("suites/results", CONFIG_LAYER + ("suites.harness", "suites.report", "suites.findings"), ()),
    ("suites/findings", CONFIG_LAYER, ()),
    ("suites/harness", ("hydra", "omegaconf", "suites.suite_table", "suites.shape_config",
                        "suites.cli_checks", "run_suite"), ()),
    ("suites", ("hydra", "omegaconf", "run_suite"), ()),
]


def imported_modules(path: Path) -> list[str]:
    """Every module a file imports, absolute, wherever the import statement is."""
    tree = ast.parse(path.read_text(), filename=str(path))
    package = ".".join(path.relative_to(ROOT).with_suffix("").parts[:-1])
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:  # relative: resolve against this file's package
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                module = ".".join(base + ([node.module] if node.module else []))
            else:
                module = node.module or ""
            found += [module] + [f"{module}.{alias.name}" for alias in node.names]
    return found


def _matches(module: str, prefix: str) -> bool:
    return module == prefix or module.startswith(prefix + ".")


def violations(folder: str, forbidden, allowed, exempt=()) -> list[str]:
    out = []
    for path in sorted((ROOT / folder).rglob("*.py")):
        if str(path.relative_to(ROOT)) in exempt:
            continue
        for module in imported_modules(path):
            if any(_matches(module, f) for f in forbidden) and \
                    not any(_matches(module, a) for a in allowed):
                out.append(f"{path.relative_to(ROOT)} imports {module}")
    return out


@pytest.mark.parametrize("folder, forbidden, allowed", RULES, ids=[r[0] for r in RULES])
def test_imports_point_one_way(folder, forbidden, allowed):
    assert violations(folder, forbidden, allowed, HYDRA_FILES if folder == "suites" else ()) == []


def test_the_hydra_side_of_a_sweep_measures_nothing():
    """suites/hydra_sweep.py may touch Hydra, so it stays out of everything that measures."""
    measuring = ("torch", "kernels", "suites.harness", "suites.profiling", "suites.findings",
                 "suites.report")
    modules = imported_modules(ROOT / HYDRA_FILES[0])
    assert [m for m in modules if any(_matches(m, p) for p in measuring)] == []


def test_the_check_sees_lazy_and_relative_imports(tmp_path, monkeypatch):
    fake = tmp_path / "kernels" / "sub"
    fake.mkdir(parents=True)
    (fake / "m.py").write_text("def f():\n    from suites.spec import RunSpec\n"
                               "from ..spec import TimingSpec\n")
    monkeypatch.setattr(sys.modules[__name__], "ROOT", tmp_path)
    found = violations("kernels", ("suites", "kernels.spec"), ())
    where = "kernels/sub/m.py imports "
    assert sorted(found) == [where + "kernels.spec", where + "kernels.spec.TimingSpec",
                             where + "suites.spec", where + "suites.spec.RunSpec"]
