"""The code each side of an A/B design runs: a git revision of this repository, checked out as a
worktree of its own (detached, no network, no install: it runs with this environment's Python
and packages, its own folder first on the path), or a path to another checkout, run as it is.

A path may hold uncommitted changes (`--ab HEAD .`: the edit you are making, against the commit
before it): its commit is then not all of its code, and the plan says so (`dirty`).
"""
from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

from suites.common.errors import ConfigError, InputError
from suites.reports.ab.plan import Checkout

REPO = Path(__file__).resolve().parents[3]  # this checkout: where revisions are looked up
ENTRY = "run_suite.py"
CHECKOUTS_DIR = "checkouts"


def _git(where: Path, *args: str) -> str | None:
    """git's output, stripped; None where git fails (no git, not a repository, a bad name)."""
    try:
        out = subprocess.run(["git", *args], cwd=where, capture_output=True, text=True,
                             timeout=120)
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip() if out.returncode == 0 else None


def is_checkout(path: Path) -> bool:
    return (path / ENTRY).is_file() and (path / "suites").is_dir()


def commit_of(revision: str, repo: Path = REPO) -> str | None:
    """The full commit a revision names in `repo`; None where it names none."""
    return _git(repo, "rev-parse", "--verify", "--quiet", f"{revision}^{{commit}}")


def _from_path(label: str, asked: str, path: Path) -> Checkout:
    commit = _git(path, "rev-parse", "HEAD") or ""
    status = _git(path, "status", "--porcelain", "--untracked-files=no") if commit else None
    return Checkout(label, asked, commit, str(path.resolve()), dirty=bool(status))


def resolve(label: str, asked: str, repo: Path = REPO) -> Checkout:
    """A side as the user named it: a path to a checkout (a folder with run_suite.py) is run
    as it is; anything else must be a revision of `repo`. The worktree is made by `prepare`."""
    path = Path(asked).expanduser()
    if path.is_dir():
        if not is_checkout(path):
            raise ConfigError(f"--ab {label} {asked}: a folder, but not a fusebench checkout "
                              f"(no {ENTRY} and suites/ in it)")
        return _from_path(label, asked, path)
    commit = commit_of(asked, repo)
    if commit is None:
        why = ("not a revision of " + str(repo) if _git(repo, "rev-parse", "--git-dir")
               else f"no folder of that name, and {repo} is no git repository to find a "
                    "revision in")
        raise ConfigError(f"--ab {label} {asked}: {why}; give a commit, a branch, a tag or a "
                          "path to a checkout")
    return Checkout(label, asked, commit, "", revision=True)


def worktree_path(out_dir: Path, commit: str) -> Path:
    return Path(out_dir).resolve() / CHECKOUTS_DIR / commit[:12]


def prepare(side: Checkout, out_dir: Path, repo: Path = REPO) -> Checkout:
    """A revision's worktree under out_dir/checkouts/<commit>, made once and reused by a
    resumed design (and by both sides of an A/A); a path's side as it is."""
    if not side.revision:
        return side
    where = worktree_path(out_dir, side.commit)
    if _ready(where, side.commit):
        return Checkout(side.label, side.asked, side.commit, str(where), revision=True)
    if where.exists():  # a worktree cut short: made again
        shutil.rmtree(where)
        _git(repo, "worktree", "prune")
    where.parent.mkdir(parents=True, exist_ok=True)
    try:
        made = subprocess.run(["git", "worktree", "add", "--detach", "--force", str(where),
                               side.commit], cwd=repo, capture_output=True, text=True,
                              timeout=600)
    except (OSError, subprocess.SubprocessError) as exc:
        raise InputError(f"--ab {side.label} {side.asked}: git worktree add failed: {exc}")
    if made.returncode != 0 or not is_checkout(where):
        raise InputError(f"--ab {side.label} {side.asked}: git worktree add {where} failed: "
                         f"{(made.stderr or made.stdout).strip().splitlines()[-1:] or ''}"
                         + ("" if made.returncode else f" (no {ENTRY} at that commit)"))
    return Checkout(side.label, side.asked, side.commit, str(where), revision=True)


def _ready(where: Path, commit: str) -> bool:
    """A worktree made whole at `commit`: its own top level (not an empty folder inside another
    checkout, which git would answer for) holding fusebench."""
    return (where.is_dir() and is_checkout(where)
            and _git(where, "rev-parse", "--show-toplevel") == str(where)
            and _git(where, "rev-parse", "HEAD") == commit)


def remove_worktrees(out_dir: Path, repo: Path = REPO) -> None:
    """The design's worktrees, once its runs are all made: they are the repository's copies of
    code it has already, and git lists each until it is removed."""
    folder = Path(out_dir) / CHECKOUTS_DIR
    if not folder.is_dir():
        return
    for where in folder.iterdir():
        if _git(repo, "worktree", "remove", "--force", str(where)) is None and where.exists():
            shutil.rmtree(where, ignore_errors=True)
    _git(repo, "worktree", "prune")
    try:
        folder.rmdir()
    except OSError:
        pass


def run_environment(checkout: Path) -> dict[str, str]:
    """This process's environment with the checkout's own code first on the path: its
    `suites` and `kernels`, never the ones an editable install of another checkout maps."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(checkout)] + [p for p in
                                         env.get("PYTHONPATH", "").split(os.pathsep) if p])
    return env
