"""A user's own block, from outside the repo: the README's worked example (its files and its
command, read from the README itself) runs in a temporary folder, and every feature works for
it as for a built-in suite (reference check, rounds, profile, findings, report, compare,
collect, resume). Bad input is one line, exit 2; set-up derived from the inputs in prepare
(a transposed weight) is correct."""
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest

from test_end_to_end import assert_finished, finish_args

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = re.compile(r"<!-- example: (\S+) -->\n```\w*\n(.*?)```", re.S)
# The README's command with what a test needs on top: a CPU, quick timing, its own folder.
QUICK = ["device=cpu", "timing=quick", "calibrate=false"]


def readme_example() -> dict[str, str]:
    """name -> text of each `<!-- example: NAME -->` block of the README."""
    return dict(EXAMPLE.findall((ROOT / "README.md").read_text()))


def _command(folder: Path) -> tuple[dict, list[str]]:
    """The README's command line: its environment assignments and its arguments, with the
    installed `fusebench-run` where the venv has it (else run_suite.py, the same program)."""
    words = shlex.split(readme_example()["command"].strip())
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    env.pop("TRITON_INTERPRET", None)
    while "=" in words[0]:
        key, _, value = words.pop(0).partition("=")
        env[key] = str((folder / value).resolve()) if key == "PYTHONPATH" else value
    installed = Path(sys.executable).with_name(words[0])
    program = [str(installed)] if installed.is_file() else [sys.executable,
                                                            str(ROOT / "run_suite.py")]
    return env, program + words[1:]


def run_example(folder: Path, *extra: str, wait: bool = True):
    env, command = _command(folder)
    if not wait:
        return subprocess.Popen(command + list(extra), cwd=folder, env=env, text=True,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    return subprocess.run(command + list(extra), cwd=folder, env=env, capture_output=True,
                          text=True, timeout=600)


def module(folder: Path, name: str, *args: str) -> subprocess.CompletedProcess:
    """`python -m NAME ARGS` from the user's folder, their module on PYTHONPATH."""
    env, _ = _command(folder)
    return subprocess.run([sys.executable, "-m", name, *args], cwd=folder, env=env,
                          capture_output=True, text=True, timeout=600)


@pytest.fixture(scope="module")
def user_folder(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("outside_the_repo")
    for name, text in readme_example().items():
        if name != "command":
            (folder / name).parent.mkdir(parents=True, exist_ok=True)
            (folder / name).write_text(text)
    return folder


@pytest.fixture(scope="module")
def own_run(user_folder):
    out = user_folder / "run"
    result = run_example(user_folder, *QUICK, f"hydra.run.dir={out}")
    assert_finished(result, out)
    return out


def test_the_example_runs_every_pass(own_run):
    rows = pd.read_csv(own_run / "measurements.csv")
    assert set(rows["suite"]) == {"bias_relu"}
    assert set(rows["variant"]) == {"eager", "compile", "triton"}
    ran = rows[rows["variant"] != "triton"]
    assert ran["status"].isin(["ok", "noisy"]).all(), ran[["variant", "status", "reason"]]
    assert (ran["scaled_err"] <= ran["tolerance"]).all()  # checked against float64
    assert (ran["n_kernels"] > 0).all() and ran["trace"].notna().all()  # profiled
    assert (rows.loc[rows["variant"] == "triton", "status"] == "skipped").all()  # not on a CPU
    if (ran["status"] == "ok").any():  # a busy machine can make every row noisy: no findings
        assert len(pd.read_csv(own_run / "findings.csv"))
    assert len(pd.read_csv(own_run / "rounds.csv"))
    assert "bias_relu" in (own_run / "report.html").read_text()


def test_report_compare_and_collect_read_it(own_run, user_folder):
    again = module(user_folder, "suites.report", str(own_run))
    assert again.returncode == 0, again.stderr[-2000:]
    copy = user_folder / "run_copy"
    shutil.copytree(own_run, copy)
    compared = module(user_folder, "suites.compare", str(own_run), str(copy),
                      "--out", str(user_folder / "cmp"))
    assert compared.returncode == 0, compared.stderr[-2000:]
    assert set(pd.read_csv(user_folder / "cmp" / "compare.csv")["suite"]) == {"bias_relu"}
    collected = module(user_folder, "suites.collect", str(own_run), "--out",
                       str(user_folder / "ladder"))
    assert collected.returncode == 0, collected.stderr[-2000:]
    assert "bias_relu" in (user_folder / "ladder" / "ladder.html").read_text()


def test_an_interrupted_run_of_it_resumes(user_folder):
    out = user_folder / "interrupted"
    proc = run_example(user_folder, *QUICK, "suite.axes={T:[64,96,128,160],D:[128]}",
                       "suite.variants=[eager]", f"hydra.run.dir={out}", wait=False)
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline and proc.poll() is None:
        if (out / "measurements.csv").is_file():
            break
        time.sleep(0.05)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=120)
    if proc.returncode == 0:
        pytest.skip("the run finished before the signal arrived")
    command = finish_args(err.strip().splitlines()[-1])
    done = run_example(user_folder, *[a for a in command
                                      if a.split("=")[0] not in ("suite", "hydra.searchpath")])
    assert_finished(done, out)
    assert len(pd.read_csv(out / "measurements.csv")) == 4


@pytest.mark.parametrize("yaml_op, message", [
    ("op: not_a_module:BiasRelu", "suite.op: not_a_module:BiasRelu: module 'not_a_module' "
                                  "does not import"),
    ("op: my_ops:parts", "'parts' in my_ops is a function, not an Op subclass"),
    ("op: my_ops", "suite.op: 'my_ops' is not `module:Class`"),
    ("", "suite=bias_relu: unknown suite; accepted: matmul_add"),
])
def test_bad_input_is_one_line(user_folder, tmp_path, yaml_op, message):
    shutil.copytree(user_folder / "my_conf", tmp_path / "my_conf")
    shutil.copy(user_folder / "my_ops.py", tmp_path / "my_ops.py")
    yaml = tmp_path / "my_conf" / "suite" / "bias_relu.yaml"
    yaml.write_text(re.sub(r"^op: .*$", yaml_op, yaml.read_text(), flags=re.M))
    result = run_example(tmp_path, *QUICK, f"hydra.run.dir={tmp_path / 'run'}")
    assert result.returncode == 2, result.stderr[-2000:]
    assert result.stderr.count("\n") == 1 and message in result.stderr, result.stderr
    assert not (tmp_path / "run").exists()


def test_a_search_folder_that_is_not_there_is_one_line(user_folder, tmp_path):
    shutil.copy(user_folder / "my_ops.py", tmp_path / "my_ops.py")
    result = run_example(tmp_path, *QUICK)  # no my_conf/ here
    assert result.returncode == 2
    assert result.stderr == ("fusebench: error: hydra.searchpath: file://my_conf: no folder "
                             f"{tmp_path / 'my_conf'}\n"), result.stderr


CACHED_WEIGHT = '''
import torch
from kernels.api import Formula, Op, Variant, random_tensor, register_op, register_variant


class Project(Op):
    name = "project"
    params = ("T", "D")
    size_axis = "T"
    flops_formula = Formula("2*T*D*D")
    bytes_formula = Formula("(2*T*D + D*D) * itemsize")

    def make_inputs(self, case, generator):
        return {"x": random_tensor((case["T"], case["D"]), case, generator),
                "w": random_tensor((case["D"], case["D"]), case, generator)}

    def reference(self, case, inputs):
        return inputs["x"].double() @ inputs["w"].double().T


def eager(case, inputs):
    return lambda: inputs["x"] @ inputs["w"].T


def cached(case, inputs):
    w_t = inputs["w"].T.contiguous()  # derived from the inputs once, at prepare
    return lambda: inputs["x"] @ w_t


register_op(Project())
register_variant(Variant("project", "eager", "eager", eager))
register_variant(Variant("project", "cached", "library", cached))
'''


def test_set_up_derived_from_the_inputs_in_prepare_is_correct(tmp_path):
    """The inputs are final when prepare gets them: a weight transposed there stays right."""
    (tmp_path / "conf" / "suite").mkdir(parents=True)
    (tmp_path / "project_op.py").write_text(CACHED_WEIGHT)
    (tmp_path / "conf" / "suite" / "project.yaml").write_text(
        "name: project\nop: project_op:Project\naxes: {T: [33], D: [40]}\ndtypes: [float32]\n"
        "variants: all\n")
    env = dict(os.environ, PYTHONPATH=str(tmp_path))
    out = tmp_path / "run"
    result = subprocess.run([sys.executable, str(ROOT / "run_suite.py"), "suite=project",
                             f"hydra.searchpath=[file://{tmp_path / 'conf'}]", *QUICK,
                             "profile=off", f"hydra.run.dir={out}"], cwd=tmp_path, env=env,
                            capture_output=True, text=True, timeout=600)
    assert_finished(result, out)
    rows = pd.read_csv(out / "measurements.csv").set_index("variant")
    assert rows.loc["cached", "status"] in ("ok", "noisy"), rows.loc["cached", "reason"]
