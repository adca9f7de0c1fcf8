"""The registry: names are unique, unknown names list the known ones."""
import importlib
from pathlib import Path

import pytest

import kernels

from kernels import registry
from kernels.base import FAMILIES, Op, Variant
from kernels.formula import Formula
from kernels.registry import UnknownNameError


def test_every_op_has_a_baseline_variant_and_a_test_shape():
    for op in registry.ops():
        assert op.baseline in registry.variant_names(op.name)
        assert set(op.test_shape) == set(op.params) - set(op.choices)


def test_every_block_module_is_found_without_a_list_of_names():
    # Every Op a module of the kernels package defines is registered: nothing lists the modules.
    registry.load_all()
    defined = set()
    for path in Path(kernels.__file__).parent.glob("*.py"):
        module = importlib.import_module(f"kernels.{path.stem}")
        defined |= {obj.name for obj in vars(module).values()
                    if isinstance(obj, type) and issubclass(obj, Op) and obj.name}
    assert defined and defined == set(registry.op_names())
    rungs = [op.rung for op in registry.ops()]
    assert rungs == sorted(rungs) and len(set(rungs)) == len(rungs)


def _op(**attrs):
    base = dict(name="probe", params=("M",), size_axis="M", rung=999, test_shape={"M": 3},
                flops_formula=Formula("2*M"), bytes_formula=Formula("M * itemsize"))
    return type("Probe", (Op,), {**base, **attrs})()


@pytest.mark.parametrize("attrs, match", [
    ({"size_axis": "K"}, "size_axis"),
    ({"flops_formula": Formula("2*M*Q")}, "uses names outside"),
    ({"test_shape": {"K": 3}}, "test_shape"),
    ({"bytes_formula": None}, "needs a bytes_formula"),
    ({"choices": {"kind": ("a",)}}, "choices"),
    ({"params": ("M", "kind"), "choices": {"kind": ("Bad-Name",)}}, "lower-case names"),
    ({"rung": 10}, "rung 10 is taken by 'matmul_add'"),
    ({"params": ("M", "kind"), "choices": {"kind": ("a", "b")},
      "flops_formula": Formula("(2 if kind == 'c' else 1) * M")}, "compares kind with 'c'"),
])
def test_an_op_declaration_is_checked_at_registration(attrs, match):
    registry.load_all()
    with pytest.raises(ValueError, match=match):
        registry.register_op(_op(**attrs))
    assert "probe" not in registry.op_names()


def test_every_variant_has_a_known_family_and_a_description():
    for op_name in registry.op_names():
        for name in registry.variant_names(op_name):
            variant = registry.get_variant(op_name, name)
            assert variant.family in FAMILIES and variant.description


def test_unknown_names_list_the_known_ones():
    with pytest.raises(UnknownNameError, match=r"unknown op 'nope'; known ops: matmul_add"):
        registry.get_op("nope")
    with pytest.raises(UnknownNameError, match=r"unknown variant 'x' for matmul_add; known variants: eager"):
        registry.get_variant("matmul_add", "x")


def test_registering_twice_is_an_error():
    existing = registry.get_variant("matmul_add", "eager")
    with pytest.raises(ValueError, match="already registered"):
        registry.register_variant(existing)

    class Again(Op):
        name = "matmul_add"

    with pytest.raises(ValueError, match="already registered"):
        registry.register_op(Again())


def test_a_variant_of_an_unknown_op_is_refused():
    with pytest.raises(ValueError, match="not registered"):
        registry.register_variant(Variant("no_such_op", "v", "eager", prepare=lambda c, i: None))


def test_family_is_checked():
    with pytest.raises(ValueError, match="family 'fast'"):
        Variant("matmul_add", "v", "fast", prepare=lambda c, i: None)
