"""Imports point one way: run_suite.py -> suites -> kernels. Read from the source (ast), so a
lazy import inside a function counts too. The trace library (suites/profiling) stands alone,
the kernels know nothing of the suites, and only run_suite.py touches Hydra."""
from __future__ import annotations

import ast
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
CONFIG_LAYER = ("hydra", "omegaconf", "suites.spec", "suites.suite_table", "suites.shape_config",
                "suites.cli_checks", "run_suite")
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


def violations(folder: str, forbidden, allowed) -> list[str]:
    out = []
    for path in sorted((ROOT / folder).rglob("*.py")):
        for module in imported_modules(path):
            if any(_matches(module, f) for f in forbidden) and \
                    not any(_matches(module, a) for a in allowed):
                out.append(f"{path.relative_to(ROOT)} imports {module}")
    return out


@pytest.mark.parametrize("folder, forbidden, allowed", RULES, ids=[r[0] for r in RULES])
def test_imports_point_one_way(folder, forbidden, allowed):
    assert violations(folder, forbidden, allowed) == []


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
