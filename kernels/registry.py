"""The registry: ops by name, variants by (op, variant). A plain dict, filled when the block
modules are imported. Registering a name twice is an error; an unknown name is an error that
lists the known ones.

Every module directly in the kernels package is imported once (load_all), so a new block is
found by being there: no list of module names to keep in step. The ladder order is each op's
`rung`.
"""
from __future__ import annotations

import importlib
import pkgutil

import kernels
from kernels.base import CHOICE, Op, Variant

_OPS: dict[str, Op] = {}
_VARIANTS: dict[tuple[str, str], Variant] = {}
_loaded = False


class UnknownNameError(KeyError):
    """An op or variant name that is not registered; the message lists the accepted names."""

    def __str__(self):  # KeyError would print the message with quotes around it
        return str(self.args[0])


def _check_op(op: Op) -> None:
    """The declarations the suite, the tests and the report rely on, checked at registration."""
    where = f"op {op.name!r}"
    sizes = [p for p in op.params if p not in op.choices]
    if not op.name or not op.params or op.size_axis not in sizes:
        raise ValueError(f"{where}: needs a name, params and a size_axis among its sizes {sizes}")
    if not set(op.choices) <= set(op.params):
        raise ValueError(f"{where}: choices {sorted(op.choices)} must be params {op.params}")
    bad = [v for values in op.choices.values() for v in values if not CHOICE.fullmatch(v)]
    if bad or any(not values for values in op.choices.values()):
        raise ValueError(f"{where}: choices must be non-empty lists of lower-case names, got {bad}")
    if set(op.test_shape) != set(sizes):
        raise ValueError(f"{where}: test_shape {sorted(op.test_shape)} must give every size {sizes}")
    names = (*op.params, *op.optional, "itemsize")
    for formula in (op.flops_formula, op.bytes_formula):
        if not formula.names <= set(names):
            raise ValueError(f"{where}: formula {formula.expression!r} uses names outside {names}")
        for name, text in formula.compared:
            if text not in op.choices.get(name, ()):
                raise ValueError(f"{where}: formula {formula.expression!r} compares {name} with "
                                 f"{text!r}, which is not one of its choices")
    clash = [o.name for o in _OPS.values() if o.rung == op.rung]
    if clash:
        raise ValueError(f"{where}: rung {op.rung} is taken by {clash[0]!r}")


def register_op(op: Op) -> Op:
    if op.name in _OPS:
        raise ValueError(f"op {op.name!r} is already registered")
    _check_op(op)
    _OPS[op.name] = op
    return op


def register_variant(variant: Variant) -> Variant:
    key = (variant.op, variant.name)
    if key in _VARIANTS:
        raise ValueError(f"variant {variant.name!r} of op {variant.op!r} is already registered")
    if variant.op not in _OPS:
        raise ValueError(f"variant {variant.name!r} names op {variant.op!r}, which is not registered")
    _VARIANTS[key] = variant
    return variant


def load_all() -> None:
    """Import every module of the kernels package (not kernels.triton: the block modules import
    Triton lazily, where it may be missing); a block module registers its op on import."""
    global _loaded
    if not _loaded:
        for module in pkgutil.iter_modules(kernels.__path__):
            if not module.ispkg:
                importlib.import_module(f"kernels.{module.name}")
        _loaded = True


def ops() -> list[Op]:
    """Every op, in ladder order."""
    load_all()
    return sorted(_OPS.values(), key=lambda op: op.rung)


def op_names() -> list[str]:
    return [op.name for op in ops()]


def get_op(name: str) -> Op:
    load_all()
    if name not in _OPS:
        raise UnknownNameError(f"unknown op {name!r}; known ops: {', '.join(op_names())}")
    return _OPS[name]


def variant_names(op: str) -> list[str]:
    get_op(op)
    return [v for (o, v) in _VARIANTS if o == op]


def get_variant(op: str, name: str) -> Variant:
    known = variant_names(op)
    if name not in known:
        raise UnknownNameError(f"unknown variant {name!r} for {op}; known variants: {', '.join(known)}")
    return _VARIANTS[(op, name)]
