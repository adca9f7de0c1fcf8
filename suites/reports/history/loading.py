"""Every run folder under the paths given, read once and lean, and put in order: the history's
input.

Finding. Each path is a run folder or any folder holding them (a multirun sweep, a results/
tree), found as compare and collect find them (suites/results/run_folders.py `find_runs`: a
path that does not exist, is not a folder or holds no run folder is one line of error). A
folder reached through two paths is read once.

Reading, lean. A history holds hundreds of run folders, and the reader every other command uses
(suites/results/reader.py `read_run`) types each of measurements.csv's ~90 columns with pandas:
about 30 ms a folder here, 6 s for 200 before anything is judged. This module reads only the
columns the history uses (the key, status, the timing figures, the counters and the profile
figures the explanation names) with the csv module, about 2-3 ms a folder, and applies the same
checks as the reader where they decide whether a folder can be read at all: KEY, `status` and
`median_us` present, every status a known one (else the folder goes through `read_run`, whose
error is the one-line error the user sees, exactly as compare and collect say it). Of the
reader's upgrade of older folders the history needs one step: a run from before `mean_us` has
its median as its time per call (suites/results/upgrade.py, version 1 to 2). Values no run
writes (a time of 0 or below, infinite) are read as missing, as the reader does. What the
reader's problems would say of a folder is checked where it is cheap (the run incomplete by
run.json, no run.json or env.json, env.json garbled, measurements.csv cut inside its last row,
numbers that are not numbers in the columns read) and said in the page's banner; the rest
(samples.csv, findings.csv, row counts of the other tables) is the run report's.

rounds.csv: per (suite, case_id, variant), its clean rounds' figures by round number, both
`mean_us` and `median_us` (a series uses one figure for all its runs: the mean where every
run has it). kernels.csv: read for every run as the kernel set of each row (name and calls
per call: a counter, suites/reports/history/counters.py), and whole, through the reader, only
for the runs on either side of a change (suites/reports/history/explain.py).

Order. By env.json `created` (the default; a run without one first, then by path), or by
commit (`--order commit`): env.json `fusebench_commit` placed by `git rev-list --topo-order
--all` of the repository the command runs in, runs of one commit by `created`. When a run's
commit is not in that repository (or it is no repository), the order falls back to time, and
says so.

The machine of a run (`machine`): the device, the GPU model on CUDA (the CPU's elsewhere) and
the cores the process could use; runs of two machines are never one series. The thread count
is a setting of a run, not its machine: a history across `timing.threads=1` and `2` is one
series whose change the explanation names ("threads 1 -> 2"); `--by-threads` keys series by
it too.
"""
from __future__ import annotations

import csv
import datetime as dt
import io
import json
import math
import subprocess
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path

from suites.common.errors import InputError
from suites.reports.history.ab_points import merge_designs
from suites.reports.kit.banner import state_line
from suites.results.columns import KEY, Status
from suites.results.folder_checks import ENV_JSON, env_checked
from suites.results.journal import MEASUREMENTS_CSV, RUN_JSON
from suites.results.reader import RunFolder, read_run
from suites.results.run_folders import find_runs, sweep_problems
from suites.results.tables import KERNELS_CSV, ROUNDS_CSV

ROUND_FIGURES = ("mean_us", "median_us")  # the round's mean over its calls first (compare's)
# measurements.csv's columns the history reads; any may be absent (an older run, a counter
# another version adds): read as missing.
TEXT_COLUMNS = ("op", "family", "dtype", "mode", "status", "reason", "backend", "compile_cache")
NUMBER_COLUMNS = (
    "rounds", "mean_us", "mean_low_us", "mean_high_us", "median_us", "speedup", "speedup_low",
    "speedup_high", "threads", "n_kernels", "n_cpu_ops", "compile_graphs", "bwd_graphs",
    "bwd_graph_ops", "saved_tensors", "partition_saved", "recomputed_ops", "graph_breaks",
    "recompiles", "inductor_kernels", "exposed_overhead_us", "launch_api_us", "host_us",
    "device_us", "kernel_us", "peak_mem_mb", "activation_mb", "max_abs_err", "scaled_err",
    "first_call_ms", "compile_ms")
_POSITIVE = ("mean_us", "mean_low_us", "mean_high_us", "median_us", "speedup", "speedup_low",
             "speedup_high")
_REQUIRED = (*KEY, "status", "median_us")
TRITON_COUNTERS_CSV = "triton_counters.csv"  # per run, where a run wrote one (Triton on CUDA)
HYDRA_CONFIG = Path(".hydra") / "config.yaml"

Key = tuple[str, str, str]  # (suite, case_id, variant)


def machine_of(env: dict, by_threads: bool = False) -> str:
    """`cpu (AMD EPYC, 2 cores)`, `cuda (NVIDIA H100 80GB HBM3, 2 cores)`: the device, its model
    and the cores the process could use (env.json); with `by_threads`, the threads too."""
    model = env.get("gpu") or env.get("cpu") or "?"
    cores = env.get("cpu_count")
    parts = [str(model)] + ([f"{cores} cores"] if cores else [])
    if by_threads:
        parts.append(f"{env.get('threads', '?')} thread(s)")
    return f"{env.get('device', '?')} ({', '.join(parts)})"


def _number(text: str) -> float:
    try:
        value = float(text)
    except (TypeError, ValueError):
        return math.nan
    return value


def _created(env: dict) -> dt.datetime | None:
    try:
        stamp = dt.datetime.fromisoformat(str(env["created"]))
    except (KeyError, ValueError):
        return None
    return stamp.replace(tzinfo=None)


@dataclass
class Run:
    """One run folder, as the history reads it. `rows`: key -> the columns read (numbers as
    floats, NaN where missing); `rounds`: key -> {round: (mean_us, median_us)} of its clean
    rounds; `kernel_sets`: key -> `name x calls; ...` (None: no kernels.csv)."""
    folder: Path
    env: dict
    state: dict | None
    rows: dict[Key, dict]
    rounds: dict[Key, dict[int, tuple[float, float]]]
    kernel_sets: dict[Key, str] | None
    problems: list[str] = field(default_factory=list)
    machine: str = ""
    index: int = -1           # its place in the history's order, set by `load`
    triton: list[dict] | None = None  # triton_counters.csv's rows, where there is one
    # A side of an A/B design read as one point (ab_points.py): what it is, and the run folder
    # its files (kernels.csv, for the explanation) are read from.
    design: str = ""
    files_folder: Path | None = None

    @property
    def created(self) -> dt.datetime | None:
        return _created(self.env)

    @property
    def commit(self) -> str | None:
        value = self.env.get("fusebench_commit")
        return str(value) if value else None

    @property
    def suite(self) -> str:
        suites = {k[0] for k in self.rows}
        return str(self.env.get("suite") or (min(suites) if suites else "?"))

    @cached_property
    def config(self) -> dict:
        """The run's resolved config: run.json's, else .hydra/config.yaml; {} where neither."""
        config = (self.state or {}).get("config")
        if isinstance(config, dict) and config:
            return config
        return self.hydra_config

    @cached_property
    def hydra_config(self) -> dict:
        """.hydra/config.yaml, as Hydra stored it for the run; {} where absent or unreadable."""
        import yaml  # PyYAML (Hydra's own dependency): a plain read, no composing
        try:
            data = yaml.safe_load((self.folder / HYDRA_CONFIG).read_text())
        except (OSError, yaml.YAMLError, UnicodeDecodeError):
            return {}
        return data if isinstance(data, dict) else {}

    @cached_property
    def files(self) -> RunFolder:
        """The folder through the one reader (kernels.csv whole, for the explanation)."""
        return RunFolder(self.files_folder or self.folder)

    def label(self) -> str:
        """`#12 2026-12-02 08:56 (358f9ab)`: a run as the page names it."""
        when = self.created.strftime("%Y-%m-%d %H:%M") if self.created else "no date"
        commit = f" ({self.commit})" if self.commit else ""
        design = f" [{self.design}]" if self.design else ""
        return f"#{self.index + 1} {when}{commit}{design}"


def _header_index(header: list[str]) -> dict[str, int]:
    return {name: i for i, name in enumerate(header)}


def _csv_rows(data: bytes) -> tuple[list[str], list[list[str]]]:
    reader = csv.reader(io.StringIO(data.decode("utf-8")))
    header = next(reader, [])
    return header, list(reader)


def _measurements(folder: Path, data: bytes) -> tuple[dict[Key, dict], int]:
    """key -> the columns read, and how many values in numeric columns were not numbers. Raises
    ValueError where the reader must decide (an odd file: it says why in one line)."""
    header, body = _csv_rows(data)
    at = _header_index(header)
    if any(c not in at for c in _REQUIRED):
        raise ValueError("missing columns")
    statuses = {s.value for s in Status}
    texts = [(c, at.get(c)) for c in TEXT_COLUMNS if c != "status"]
    numbers = [(c, at.get(c), c in _POSITIVE) for c in NUMBER_COLUMNS]
    suite_at, case_at, variant_at, status_at = (at[c] for c in (*KEY, "status"))
    nan, inf = math.nan, math.inf
    rows, garbled = {}, 0
    width = len(header)
    for record in body:
        if not record:
            continue
        if len(record) != width:
            raise ValueError("ragged row")
        status = record[status_at]
        if status not in statuses:
            raise ValueError("unknown status")
        row = {"suite": record[suite_at], "case_id": record[case_at],
               "variant": record[variant_at], "status": status}
        for c, i in texts:
            row[c] = record[i] if i is not None else ""
        for c, i, positive in numbers:
            text = record[i] if i is not None else ""
            if not text:
                row[c] = nan
                continue
            try:
                value = float(text)
            except ValueError:
                garbled += 1
                value = nan
            if value == inf or value == -inf or (positive and value <= 0):
                value = nan
            row[c] = value
        if row["mean_us"] != row["mean_us"]:  # a run from before the mean: its median
            row["mean_us"] = row["median_us"]   # (upgrade.py, version 1 to 2)
        rows[(row["suite"], row["case_id"], row["variant"])] = row
    return rows, garbled


def _from_reader(folder: Path) -> dict[Key, dict]:
    """The rows through read_run: its error where the folder cannot be read, else the same
    columns as the lean path (a file the lean path found odd but the reader reads)."""
    frame = read_run(folder, samples=False).measurements
    rows = {}
    for record in frame.to_dict("records"):
        row = {c: record.get(c) for c in KEY}
        row["status"] = record["status"]
        for c in TEXT_COLUMNS:
            if c != "status":
                value = record.get(c)
                row[c] = "" if value is None or (isinstance(value, float) and math.isnan(value)) \
                    else str(value)
        for c in NUMBER_COLUMNS:
            value = record.get(c, math.nan)
            try:
                value = float(value)
            except (TypeError, ValueError):
                value = math.nan
            row[c] = math.nan if math.isinf(value) or (c in _POSITIVE and value <= 0) else value
        rows[(row["suite"], row["case_id"], row["variant"])] = row
    return rows


def _positive(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        return math.nan
    return value if 0 < value < math.inf else math.nan


def _rounds(data: bytes | None) -> dict[Key, dict[int, tuple[float, float]]]:
    """Clean rounds per key; {} where there is no rounds.csv or it cannot be read."""
    if data is None:
        return {}
    try:
        header, body = _csv_rows(data)
    except (UnicodeDecodeError, csv.Error):
        return {}
    at = _header_index(header)
    if not all(c in at for c in (*KEY, "round", "state")):
        return {}
    mean_at, median_at = at.get("mean_us"), at.get("median_us")
    suite_at, case_at, variant_at, round_at, state_at = (
        at[c] for c in (*KEY, "round", "state"))
    width = len(header)
    out: dict[Key, dict[int, tuple[float, float]]] = {}
    for record in body:
        if len(record) != width or record[state_at] != "clean":
            continue
        try:
            number = int(float(record[round_at]))
        except ValueError:
            continue
        figures = (_positive(record[mean_at]) if mean_at is not None else math.nan,
                   _positive(record[median_at]) if median_at is not None else math.nan)
        key = (record[suite_at], record[case_at], record[variant_at])
        out.setdefault(key, {})[number] = figures
    return out


def _kernel_sets(data: bytes | None) -> dict[Key, str] | None:
    """key -> its kernels and calls per call, sorted (`aten::add x1; aten::mm x1`); None where
    the run has no readable kernels.csv."""
    if data is None:
        return None
    try:
        header, body = _csv_rows(data)
    except (UnicodeDecodeError, csv.Error):
        return None
    at = _header_index(header)
    if not all(c in at for c in (*KEY, "kernel")):
        return None
    calls_at = at.get("calls_per_call")
    width = len(header)
    found: dict[Key, list[str]] = {}
    for record in body:
        if len(record) != width:
            continue
        calls = _number(record[calls_at]) if calls_at is not None else math.nan
        name = record[at["kernel"]] + ("" if math.isnan(calls) else f" x{calls:g}")
        found.setdefault((record[at["suite"]], record[at["case_id"]], record[at["variant"]]),
                         []).append(name)
    return {key: "; ".join(sorted(names)) for key, names in found.items()}


def _triton_counters(data: bytes | None) -> list[dict] | None:
    if data is None:
        return None
    try:
        header, body = _csv_rows(data)
    except (UnicodeDecodeError, csv.Error):
        return None
    if "kernel" not in header:
        return None
    return [dict(zip(header, record)) for record in body if len(record) == len(header)]


def _read(path: Path) -> bytes | None:
    try:
        return path.read_bytes()
    except (FileNotFoundError, IsADirectoryError, NotADirectoryError):
        return None


def _json(data: bytes | None) -> dict | None:
    if data is None:
        return None
    try:
        value = json.loads(data.decode())
    except (ValueError, UnicodeDecodeError):
        return None
    return value if isinstance(value, dict) else None


def read_one(folder: Path, by_threads: bool = False) -> Run:
    """One run folder, lean (see the module's docstring); an InputError, in the reader's words,
    where its measurements.csv cannot be read."""
    data = _read(folder / MEASUREMENTS_CSV)
    if data is None:
        raise InputError(f"{folder}: no {MEASUREMENTS_CSV}: not a run folder")
    problems = []
    try:
        rows, garbled = _measurements(folder, data)
    except (ValueError, UnicodeDecodeError, csv.Error):
        rows, garbled = _from_reader(folder), 0  # the reader's error, or its reading
    run_bytes = _read(folder / RUN_JSON)
    state = _json(run_bytes)
    env_bytes = _read(folder / ENV_JSON)
    env, env_problem = env_checked(folder / ENV_JSON, env_bytes)
    if line := state_line(folder, state):
        problems.append(line)
    if state is None:
        problems.append(f"{folder}: no {RUN_JSON}: whether the run completed is unknown"
                        if run_bytes is None else
                        f"{folder / RUN_JSON}: garbled (not a JSON object): whether the run "
                        "completed is unknown")
    if env_bytes is None:
        problems.append(f"{folder}: no {ENV_JSON} (machine, versions and order unknown)")
    elif env_problem:
        problems.append(env_problem)
    if data[-1:] not in (b"", b"\n"):
        problems.append(f"{folder / MEASUREMENTS_CSV}: cut inside its last row (no line end): "
                        "that row is partial")
    if garbled:
        problems.append(f"{folder / MEASUREMENTS_CSV}: {garbled} value(s) in numeric columns "
                        "are not numbers (garbled): read as missing")
    run = Run(folder, env, state, rows, _rounds(_read(folder / ROUNDS_CSV)),
              _kernel_sets(_read(folder / KERNELS_CSV)), problems,
              triton=_triton_counters(_read(folder / TRITON_COUNTERS_CSV)))
    run.machine = machine_of(env, by_threads)
    return run


# --- order -------------------------------------------------------------------------------------

def _time_key(run: Run):
    created = run.created
    return (created is not None, created or dt.datetime.min, str(run.folder))


def git_commits(where: Path) -> list[str] | None:
    """Every commit of the repository at `where`, oldest first in topological order (`git
    rev-list --topo-order --all`, reversed); None where there is no repository or no git."""
    try:
        out = subprocess.run(["git", "rev-list", "--topo-order", "--all"], cwd=where,
                             capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.SubprocessError):
        return None
    if out.returncode != 0:
        return None
    return list(reversed(out.stdout.split()))


def order_by_commit(runs: list[Run], commits: list[str] | None) -> tuple[list[Run], str]:
    """Runs by their commit's place in `commits` (oldest first), then by time; by time alone,
    said, where some run's commit is not among them."""
    by_time = sorted(runs, key=_time_key)
    if commits is None:
        return by_time, ("order: by time (env.json created): --order commit needs a git "
                         "repository here to order commits by, and none was found")
    place = {}
    for i, full in enumerate(commits):
        place.setdefault(full[:7], i)
    positions, unknown = {}, []
    for run in runs:
        commit = (run.commit or "").split("+")[0].split("-")[0].strip()
        found = [i for i in ([place.get(commit[:7])] if len(commit) >= 7 else [])
                 if i is not None and commits[i].startswith(commit)]
        if found:
            positions[id(run)] = found[0]
        else:
            unknown.append(run.commit or "none")
    if unknown:
        names = ", ".join(dict.fromkeys(unknown))
        return by_time, (f"order: by time (env.json created), not by commit: {len(unknown)} "
                         f"run(s) carry a commit not in this repository's history ({names})")
    ordered = sorted(runs, key=lambda r: (positions[id(r)], _time_key(r)))
    return ordered, "order: by commit (git rev-list --topo-order of this repository), then time"


@dataclass
class History:
    """The runs in order, what was said about reading them, and where they came from."""
    paths: list[Path]
    runs: list[Run]
    notes: list[str]          # how the runs were ordered; multirun jobs that left no rows
    baselines: dict[str, str]  # suite -> its baseline variant

    @property
    def problems(self) -> list[str]:
        return [line for run in self.runs for line in run.problems]


def baseline_of(suite: str, runs: list[Run]) -> str:
    """The suite's baseline variant: the row whose speedup is exactly 1 with its interval (every
    run writes its baseline's so); else the registry's (torch's import, 2 s, only then), for a
    block this version knows; else the first eager-family row."""
    for run in runs:
        for (s, _, variant), row in run.rows.items():
            if s == suite and row["speedup"] == 1 and row["speedup_low"] == 1 \
                    and row["speedup_high"] == 1:
                return variant
    from kernels import registry
    try:
        return registry.get_op(suite).baseline
    except registry.UnknownNameError:
        pass
    for run in runs:
        for (s, _, variant), row in run.rows.items():
            if s == suite and row.get("family") == "eager":
                return variant
    return ""


def find_folders(paths: list[Path]) -> list[Path]:
    """Every run folder under the paths, each once (a path may be a run's measurements.csv)."""
    folders: dict[Path, Path] = {}
    for path in paths:
        path = Path(path)
        if path.is_file() and path.name == MEASUREMENTS_CSV:
            found = [path.parent]
        else:
            found = find_runs(path)
        for folder in found:
            folders.setdefault(folder.resolve(), folder)
    return list(folders.values())


def load(paths: list[Path], order: str = "time", by_threads: bool = False,
         repo: Path | None = None) -> History:
    """The history of every run folder under `paths`, in order (`order`: "time" or "commit";
    `repo`: where git is asked for the commits' order, the current folder by default)."""
    runs, notes = merge_designs([read_one(folder, by_threads) for folder in find_folders(paths)])
    if order == "commit":
        runs, line = order_by_commit(runs, git_commits(repo or Path.cwd()))
        notes.append(line)
    else:
        runs = sorted(runs, key=_time_key)
    undated = [r for r in runs if r.created is None]
    if undated:
        notes.append(f"{len(undated)} run(s) have no readable env.json `created`: placed first "
                     f"({', '.join(str(r.folder) for r in undated[:3])}"
                     f"{', ...' if len(undated) > 3 else ''})")
    for i, run in enumerate(runs):
        run.index = i
    for path in paths:
        notes += sweep_problems(Path(path))
    suites = dict.fromkeys(k[0] for run in runs for k in run.rows)
    return History([Path(p) for p in paths], runs, notes,
                   {s: baseline_of(s, runs) for s in suites})
