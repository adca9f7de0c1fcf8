"""Imports point one way, down the rooms (suites/__init__.py draws them), read from the source
(ast), so a lazy import inside a function counts too:

    run_suite.py and the entry points in suites/ (analyze, compare, collect, report)
    suites/tools      self-checks: may use any room below
    suites/config     suites/reports     suites/suggest      siblings: none imports another
    suites/harness
    suites/traces     imports nothing of suites but the results schema and suites/common
    suites/results
    suites/common
    kernels           knows nothing of suites, Hydra, pandas or matplotlib

No module imports a room above its own or a sibling, no two modules import each other (no
circles at all), nothing loose lies directly in suites/ but its entry points, and only
run_suite.py and suites/config/ touch Hydra."""
from __future__ import annotations

import ast
import sys
from pathlib import Path


ROOT = Path(__file__).resolve().parents[1]
ENTRY_POINTS = ("run_suite", "suites", "suites.analyze", "suites.compare", "suites.collect",
                "suites.history", "suites.report")
# Top to bottom; rooms in one tuple are siblings.
LAYERS = [("suites.tools",), ("suites.config", "suites.reports", "suites.suggest"),
          ("suites.harness",),
          ("suites.traces",), ("suites.results",), ("suites.common",), ("kernels",)]
# Within a room: its sub-rooms, top to bottom, in the same way.
SUB_LAYERS = {"suites.reports": [("suites.reports.ab",),
                                 ("suites.reports.run", "suites.reports.ladder",
                                  "suites.reports.compare", "suites.reports.history"),
                                 ("suites.reports.kit",)]}
# What trace analysis may use of the rest of suites: it stands alone.
TRACES_MAY_USE = ("suites.results.columns", "suites.common")
HYDRA = ("hydra", "omegaconf")
HYDRA_ALLOWED = ("run_suite", "suites.config")
KERNELS_NEVER = ("pandas", "matplotlib") + HYDRA


def module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def source_files() -> list[Path]:
    return sorted([ROOT / "run_suite.py", *(ROOT / "suites").rglob("*.py"),
                   *(ROOT / "kernels").rglob("*.py")])


def imported_modules(path: Path) -> list[str]:
    """Every module a file imports, absolute, wherever the import statement is; `from pkg import
    name` counts as pkg.name where that is a module, else as pkg."""
    tree = ast.parse(path.read_text(), filename=str(path))
    package = module_name(path) if path.name == "__init__.py" else \
        ".".join(module_name(path).split(".")[:-1])
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


def _room(module: str, layers) -> tuple[int, str] | None:
    for level, rooms in enumerate(layers):
        for room in rooms:
            if _matches(module, room):
                return level, room
    return None


def layer_violations(files: list[Path]) -> list[str]:
    out = []
    for path in files:
        me = module_name(path)
        for layers in [LAYERS, *SUB_LAYERS.values()]:
            mine = _room(me, layers)
            if mine is None:
                continue
            for module in imported_modules(path):
                theirs = _room(module, layers)
                if theirs is not None and theirs[1] != mine[1] and theirs[0] <= mine[0]:
                    out.append(f"{me} imports {module} ({theirs[1]} is not below {mine[1]})")
    return out


def rule_violations(files: list[Path]) -> list[str]:
    out = []
    for path in files:
        me = module_name(path)
        for module in imported_modules(path):
            if _matches(me, "suites.traces") and _matches(module, "suites") and not any(
                    _matches(module, ok) for ok in ("suites.traces", *TRACES_MAY_USE)):
                out.append(f"{me} imports {module}: trace analysis must stand alone")
            if any(_matches(module, h) for h in HYDRA) and not any(
                    _matches(me, ok) for ok in HYDRA_ALLOWED):
                out.append(f"{me} imports {module}: only run_suite.py and suites/config use Hydra")
            if _matches(me, "kernels") and any(_matches(module, k) for k in
                                                KERNELS_NEVER + ("suites", "run_suite")):
                out.append(f"{me} imports {module}: the kernels know nothing of the suites")
    return out


def import_graph(files: list[Path]) -> dict[str, set[str]]:
    """module -> the project modules it imports (a package's submodule where it names one)."""
    known = {module_name(p) for p in files}
    graph = {}
    for path in files:
        edges = set()
        for module in imported_modules(path):
            while module and module not in known:
                module = module.rpartition(".")[0]
            if module:
                edges.add(module)
        me = module_name(path)
        # `from pkg import sub` also lists pkg: keep the submodule only.
        graph[me] = {m for m in edges if m != me and not any(
            o != m and o.startswith(m + ".") for o in edges)}
    return graph


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan)."""
    index, low, stack, on, found = {}, {}, [], set(), []

    def visit(node):
        index[node] = low[node] = len(index)
        stack.append(node)
        on.add(node)
        for nxt in graph.get(node, ()):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                top = stack.pop()
                on.discard(top)
                component.append(top)
                if top == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    sys.setrecursionlimit(max(sys.getrecursionlimit(), 10_000))
    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def test_imports_point_down_the_rooms():
    assert layer_violations(source_files()) == []


def test_traces_stand_alone_hydra_stays_in_config_kernels_know_nothing_of_suites():
    assert rule_violations(source_files()) == []


def test_no_circles():
    assert circles(import_graph(source_files())) == []


def test_nothing_loose_in_suites_but_its_entry_points():
    loose = {module_name(p) for p in (ROOT / "suites").glob("*.py")}
    assert loose <= set(ENTRY_POINTS), sorted(loose - set(ENTRY_POINTS))


def test_every_room_says_what_it_is_for():
    for init in (ROOT / "suites").rglob("__init__.py"):
        doc = ast.get_docstring(ast.parse(init.read_text()))
        assert doc, f"{init.relative_to(ROOT)} has no docstring saying what the room is for"


def test_the_checks_see_what_they_must(tmp_path, monkeypatch):
    """Lazy and relative imports count; a room importing its sibling or a room above fails; two
    modules importing each other are a circle; trace analysis importing the harness fails."""
    for name, text in {
        "kernels/sub/m.py": "def f():\n    from suites.config.run_spec import RunSpec\n",
        "suites/harness/a.py": "from ..config import run_spec\n",
        "suites/reports/kit/k.py": "from suites.reports.run import build\n",
        "suites/traces/t.py": "from suites.harness import timing\n",
        "suites/results/x.py": "import suites.results.y\n",
        "suites/results/y.py": "from suites.results import x\n",
    }.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    monkeypatch.setattr(sys.modules[__name__], "ROOT", tmp_path)
    files = sorted(tmp_path.rglob("*.py"))
    layers = "\n".join(layer_violations(files))
    assert "suites.harness.a imports suites.config.run_spec" in layers
    assert "suites.reports.kit.k imports suites.reports.run.build" in layers
    assert "suites.traces.t imports suites.harness.timing" in layers
    rules = "\n".join(rule_violations(files))
    assert "kernels.sub.m imports suites.config.run_spec" in rules
    assert "suites.traces.t imports suites.harness" in rules
    assert circles(import_graph(files)) == [["suites.results.x", "suites.results.y"]]
