"""The registry: ops by name, variants by (op, variant). A plain dict, filled when the block
modules are imported. Registering a name twice is an error; an unknown name is an error that
lists the known ones.

Every module directly in the kernels package is imported once (load_all), so a new block is
found by being there: no list of module names to keep in step. The ladder order is each op's
`rung`. A user's own block lives outside this package: `load_op("my_ops:MyOp")` imports its
module, which registers its op and variants the same way (kernels/api.py is that public API).
"""
from __future__ import annotations

import importlib
import pkgutil

import kernels
from kernels.base import CHOICE, Op, Variant
from kernels.formula import Formula

# The rung of an op that does not say: after the built-in blocks, in the order they registered.
USER_RUNG = 0

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
    if op.test_shape and set(op.test_shape) != set(sizes):
        raise ValueError(f"{where}: test_shape {sorted(op.test_shape)} must give every size {sizes}")
    for attribute in ("flops_formula", "bytes_formula"):
        if not isinstance(getattr(op, attribute, None), Formula):
            raise ValueError(f"{where}: needs a {attribute} (a kernels.api.Formula of its params)")
    names = (*op.params, *op.optional, "itemsize")
    for formula in (op.flops_formula, op.bytes_formula):
        if not formula.names <= set(names):
            raise ValueError(f"{where}: formula {formula.expression!r} uses names outside {names}")
        for name, text in formula.compared:
            if text not in op.choices.get(name, ()):
                raise ValueError(f"{where}: formula {formula.expression!r} compares {name} with "
                                 f"{text!r}, which is not one of its choices")
    clash = [o.name for o in _OPS.values() if o.rung == op.rung]
    if clash and op.rung != USER_RUNG:
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
    order = list(_OPS.values())  # registration order breaks ties among USER_RUNG ops
    return sorted(order, key=lambda op: (op.rung == USER_RUNG, op.rung, order.index(op)))


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


class OpLoadError(ValueError):
    """A `module:Class` reference that does not give a registered op; the message says why."""


def load_op(reference: str) -> Op:
    """The op a suite YAML's `op: module:Class` names: its module is imported (from the
    PYTHONPATH), which registers the op and its variants as the kernels/ modules do; `Class`
    must be an Op subclass (or instance) of the module. An op the module did not register is
    registered here (it then has no variants, which the suite's config check names)."""
    module_name, _, name = str(reference).partition(":")
    if not module_name or not name:
        raise OpLoadError(f"op: {reference!r} is not `module:Class` (e.g. my_ops:BiasRelu)")
    load_all()
    try:
        module = importlib.import_module(module_name)
    except Exception as exc:  # a module missing from PYTHONPATH, or one that fails to run
        raise OpLoadError(f"op: {reference}: module {module_name!r} does not import "
                          f"({type(exc).__name__}: {exc}); is its folder on PYTHONPATH?") from None
    found = getattr(module, name, None)
    if isinstance(found, type) and issubclass(found, Op):
        registered = [op for op in _OPS.values() if type(op) is found]
        if registered:
            return registered[0]
        found = found()
    if not isinstance(found, Op):
        what = "nothing" if found is None else f"a {type(found).__name__}"
        raise OpLoadError(f"op: {reference}: {name!r} in {module_name} is {what}, not an Op "
                          "subclass (kernels.api.Op)")
    if _OPS.get(found.name) is found:
        return found
    try:
        return register_op(found)
    except ValueError as exc:
        raise OpLoadError(f"op: {reference}: {exc}") from None
