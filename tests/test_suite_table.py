"""One suite table: each suite is its op (kernels/<name>.py) and its conf/suite/<name>.yaml,
nothing else to keep in step. A YAML without an op, or an op without a YAML, fails here."""

import pytest
import yaml


from kernels import registry
from suites.tools.gpu_check import series_overrides
from suites.config.group_choices import group_choices
from suites.results.columns import BY_NAME
from suites.config.run_spec import build_run_spec
from suites.common.errors import ConfigError
from suites.config.compose import CONF_DIR as CONF, compose, resolved
from suites.config.suite_table import get_suite, suite_names, suites


def test_every_suite_yaml_has_a_registered_op():
    for path in sorted((CONF / "suite").glob("*.yaml")):
        assert path.stem in registry.op_names(), f"{path.name}: no op named {path.stem!r}"
        assert yaml.safe_load(path.read_text())["name"] == path.stem, path.name


def test_every_op_has_a_suite_yaml():
    for suite in suites():
        assert suite.conf.is_file(), f"op {suite.name!r} has no {suite.conf}"


def test_the_command_line_accepts_exactly_the_suites():
    assert sorted(group_choices(CONF, "suite")) == sorted(suite_names())


def test_suites_are_in_ladder_order_and_unknown_ones_list_the_known():
    assert suite_names()[:4] == ["matmul_add", "linear", "mlp", "attention"]
    assert suite_names()[-2:] == ["block", "launch"]  # the launch floor after the blocks
    assert get_suite("norm").op.size_axis == "T"
    with pytest.raises(ConfigError, match="suite=nope: unknown suite; accepted: matmul_add, linear"):
        get_suite("nope")


def test_no_parameter_is_named_like_a_column():
    # A parameter column would overwrite a metric of measurements.csv (or be overwritten).
    for op in registry.ops():
        assert not set(op.params) & set(BY_NAME), op.name


def test_the_gpu_check_runs_every_suite_at_its_reference_shape(tmp_path):
    for suite in suites():
        overrides = [f"suite={suite.name}", *series_overrides(suite), "device=cpu"]
        cfg = resolved(compose(overrides))
        spec = build_run_spec(cfg, tmp_path)
        reference = dict(spec.suite.reference)
        assert reference in [dict(shape) for shape in spec.suite.shapes], suite.name
