"""The registry: names are unique, unknown names list the known ones."""
import pytest

from kernels import registry
from kernels.base import FAMILIES, Op, Variant
from kernels.registry import UnknownNameError


def test_every_op_has_a_baseline_variant_and_a_test_shape():
    for op_name in registry.op_names():
        op = registry.get_op(op_name)
        assert op.baseline in registry.variant_names(op_name)
        assert set(op.test_shape) == set(op.params)


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
